from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("traces.api.urls")),
]

handler404 = "explorer.errors.not_found"
handler500 = "explorer.errors.server_error"
