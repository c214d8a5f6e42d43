from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from explorer.views import dataset, datasets, images, keys, trace, upload

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("traces.api.urls")),
    # Pages
    path("", datasets.placeholder, name="datasets"),
    path("d/<str:dataset_id>/", dataset.placeholder, name="dataset"),
    path("d/<str:dataset_id>/export", dataset.placeholder, name="dataset-export"),
    path("upload/", upload.placeholder, name="upload"),
    path("keys/", keys.placeholder, name="api-keys"),
    path("keys/<str:key_id>/revoke", keys.placeholder, name="api-key-revoke"),
    path("t/<str:trace_id>/", trace.placeholder, name="trace"),
    path("t/<str:trace_id>/more", trace.placeholder, name="trace-more"),
    path("t/<str:trace_id>/reward", trace.placeholder, name="trace-reward"),
    path("t/<str:trace_id>/b/<str:block_id>/full", trace.placeholder, name="block-full"),
    path("t/<str:trace_id>/b/<str:block_id>/reward", trace.placeholder, name="block-reward"),
    path("t/<str:trace_id>/images/<str:sha256>", images.placeholder, name="trace-image"),
]

handler404 = "explorer.errors.not_found"
handler500 = "explorer.errors.server_error"
