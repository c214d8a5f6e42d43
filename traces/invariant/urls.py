"""Invariant Explorer's /api/v1 routes (spec invariant-explorer-api.md). No route ends in a
slash and none redirects: Explorer's clients (httpx, requests) do not follow redirects."""

from django.urls import path

from traces.api.urls import combine
from traces.invariant import views as v

TRACE = "trace/<str:trace_id>"
BYID = "dataset/byid/<str:dataset_id>"
BYUSER = "dataset/byuser/<str:username>/<str:name>"

TraceView = combine("ExplorerTraceView", v.TraceGetApi, v.TraceDeleteApi)
AnnotationView = combine("ExplorerAnnotationView", v.AnnotationUpdateApi, v.AnnotationDeleteApi)
DatasetView = combine("ExplorerDatasetView", v.DatasetGetApi, v.DatasetDeleteApi)
MetadataView = combine("ExplorerMetadataView", v.DatasetMetadataGetApi, v.DatasetMetadataUpdateApi)

# URL name: (route under /api/v1/, view). trace/snippets before trace/<id>.
ROUTES: dict[str, tuple[str, type]] = {
    "inv-health": ("", v.HealthApi),
    "inv-signup": ("user/signup", v.SignupApi),
    "inv-identity": ("user/identity", v.IdentityApi),
    "inv-key-create": ("keys/create", v.KeyCreateApi),
    "inv-push": ("push/trace", v.PushTraceApi),
    "inv-snippets": ("trace/snippets", v.SnippetsApi),
    "inv-image": ("trace/image/<str:dataset_name>/<str:trace_id>/<str:image_id>", v.TraceImageApi),
    "inv-trace": (TRACE, TraceView),
    "inv-append": (f"{TRACE}/messages", v.AppendMessagesApi),
    "inv-annotate": (f"{TRACE}/annotate", v.AnnotateApi),
    "inv-annotations": (f"{TRACE}/annotations", v.AnnotationsListApi),
    "inv-annotation": (f"{TRACE}/annotation/<str:annotation_id>", AnnotationView),
    "inv-dataset-create": ("dataset/create", v.DatasetCreateApi),
    "inv-dataset-upload": ("dataset/upload", v.DatasetUploadApi),
    "inv-dataset-list": ("dataset/list", v.DatasetListApi),
    "inv-dataset": (BYID, DatasetView),
    "inv-dataset-traces": (f"{BYID}/traces", v.DatasetTracesApi),
    "inv-dataset-download": (f"{BYID}/download", v.DatasetDownloadApi),
    "inv-dataset-download-annotated": (f"{BYID}/download/annotated", v.DatasetAnnotatedDownloadApi),
    "inv-dataset-byuser": (BYUSER, DatasetView),
    "inv-dataset-byuser-traces": (f"{BYUSER}/traces", v.DatasetTracesApi),
    "inv-metadata": ("dataset/metadata/<str:dataset_name>", MetadataView),
}

urlpatterns = [
    path("api/v1", v.HealthApi.as_view(), name="inv-root"),
    *(path(f"api/v1/{route}", view.as_view(), name=name) for name, (route, view) in ROUTES.items()),
]
