from collections.abc import Callable
from types import ModuleType

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.core.exceptions import ImproperlyConfigured
from django.templatetags.static import static
from django.urls import URLPattern, include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from explorer.views import (
    anchors,
    compare,
    dataset,
    dataset_settings,
    datasets,
    health,
    images,
    keys,
    labels,
    trace,
    upload,
)
from traces.api import otlp

DATASET, TRACE = "d/<str:dataset_id>/", "t/<str:trace_id>/"


def pages(module: ModuleType, routes: dict[str, tuple[str, Callable]]) -> list[URLPattern]:
    """The routes of one page, `routes` giving each URL name its route and its view, which
    lives in the page's module of explorer/views/ (one module per page)."""
    for name, (_, view) in routes.items():
        if view.__module__ != module.__name__:
            raise ImproperlyConfigured(f"{name}: {view.__qualname__} is not in {module.__name__}")
    return [path(route, view, name=name) for name, (route, view) in routes.items()]


urlpatterns = [
    path("admin/", admin.site.urls),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("healthz", health.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("traces.api.urls")),
    # OpenTelemetry: OTLP/HTTP's path under OTEL_EXPORTER_OTLP_ENDPOINT=http://host/otlp
    path("otlp/v1/traces", otlp.otlp_traces, name="otlp-traces"),
    # Invariant Explorer's API, for its clients (invariant-sdk): traces/invariant
    path("", include("traces.invariant.urls")),
    # Pages
    *pages(datasets, {"datasets": ("", datasets.datasets_page)}),
    *pages(dataset, {
        "dataset": (DATASET, dataset.dataset_page),
        "dataset-export": (f"{DATASET}export", dataset.dataset_export),
        "dataset-visibility": (f"{DATASET}visibility", dataset.dataset_visibility),
    }),
    *pages(dataset_settings, {
        "dataset-edit": (f"{DATASET}edit", dataset_settings.dataset_edit),
        "dataset-delete": (f"{DATASET}delete", dataset_settings.dataset_remove),
    }),
    *pages(labels, {
        "dataset-label-add": (f"{DATASET}labels", labels.dataset_label_add),
        "dataset-label-remove": (
            f"{DATASET}labels/<str:label_id>/remove", labels.dataset_label_remove
        ),
        "trace-annotate": (f"{TRACE}annotations", labels.trace_annotate),
        "annotation-remove": (
            f"{TRACE}annotations/<str:annotation_id>/remove", labels.annotation_remove
        ),
    }),
    *pages(anchors, {"trace-anchor": (f"{TRACE}anchors", anchors.trace_anchor_add)}),
    *pages(upload, {"upload": ("upload/", upload.upload_page)}),
    *pages(keys, {
        "api-keys": ("keys/", keys.keys_page),
        "api-key-revoke": ("keys/<str:key_id>/revoke", keys.key_revoke),
    }),
    *pages(trace, {
        "trace": (TRACE, trace.trace_page),
        "trace-reward": (f"{TRACE}reward", trace.trace_reward),
        "trace-outline": (f"{TRACE}outline", trace.trace_outline),
        "block-full": (f"{TRACE}b/<str:block_id>/full", trace.block_full),
        "block-reward": (f"{TRACE}b/<str:block_id>/reward", trace.block_reward),
    }),
    *pages(images, {"trace-image": (f"{TRACE}images/<str:sha256>", images.trace_image)}),
    *pages(compare, {
        "compare-traces": ("compare/traces/", compare.compare_traces_page),
        "compare-datasets": ("compare/datasets/", compare.compare_datasets_page),
    }),
]  # fmt: skip

handler404 = "explorer.errors.not_found"
handler500 = "explorer.errors.server_error"
