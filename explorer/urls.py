from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from explorer.views import (
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

urlpatterns = [
    path("admin/", admin.site.urls),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("healthz", health.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("traces.api.urls")),
    # Pages
    path("", datasets.datasets_page, name="datasets"),
    path("d/<str:dataset_id>/", dataset.dataset_page, name="dataset"),
    path("d/<str:dataset_id>/export", dataset.dataset_export, name="dataset-export"),
    path("d/<str:dataset_id>/visibility", dataset.dataset_visibility, name="dataset-visibility"),
    path("d/<str:dataset_id>/edit", dataset_settings.dataset_edit, name="dataset-edit"),
    path("d/<str:dataset_id>/delete", dataset_settings.dataset_remove, name="dataset-delete"),
    path("d/<str:dataset_id>/labels", labels.dataset_label_add, name="dataset-label-add"),
    path(
        "d/<str:dataset_id>/labels/<str:label_id>/remove",
        labels.dataset_label_remove,
        name="dataset-label-remove",
    ),
    path("upload/", upload.upload_page, name="upload"),
    path("keys/", keys.keys_page, name="api-keys"),
    path("keys/<str:key_id>/revoke", keys.key_revoke, name="api-key-revoke"),
    path("t/<str:trace_id>/", trace.trace_page, name="trace"),
    path("t/<str:trace_id>/reward", trace.trace_reward, name="trace-reward"),
    path("t/<str:trace_id>/outline", trace.trace_outline, name="trace-outline"),
    path("t/<str:trace_id>/annotations", labels.trace_annotate, name="trace-annotate"),
    path(
        "t/<str:trace_id>/annotations/<str:annotation_id>/remove",
        labels.annotation_remove,
        name="annotation-remove",
    ),
    path("t/<str:trace_id>/b/<str:block_id>/full", trace.block_full, name="block-full"),
    path("t/<str:trace_id>/b/<str:block_id>/reward", trace.block_reward, name="block-reward"),
    path("t/<str:trace_id>/images/<str:sha256>", images.trace_image, name="trace-image"),
    path("compare/traces/", compare.compare_traces_page, name="compare-traces"),
    path("compare/datasets/", compare.compare_datasets_page, name="compare-datasets"),
]

handler404 = "explorer.errors.not_found"
handler500 = "explorer.errors.server_error"
