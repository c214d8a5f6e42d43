"""URLs of the API. Each operation is its own class; a URL's view combines the classes of
the operations it serves (their methods do not overlap)."""

from django.urls import path

from traces.api import annotations, blocks, compare, datasets, traces, whoami


def combine(name: str, *operations: type) -> type:
    return type(name, operations, {})


DatasetsView = combine("DatasetsView", datasets.DatasetListApi, datasets.DatasetCreateApi)
DatasetView = combine(
    "DatasetView", datasets.DatasetGetApi, datasets.DatasetUpdateApi, datasets.DatasetDeleteApi
)
TracesView = combine("TracesView", traces.TraceListApi, traces.TraceCreateApi)
TraceView = combine("TraceView", traces.TraceGetApi, traces.TracePatchApi, traces.TraceDeleteApi)
BlocksView = combine("BlocksView", blocks.BlockListApi, blocks.BlockCreateApi)
BlockView = combine("BlockView", blocks.BlockGetApi, blocks.BlockPatchApi)
LabelsView = combine("LabelsView", annotations.LabelListApi, annotations.LabelCreateApi)
AnnotationsView = combine(
    "AnnotationsView", annotations.AnnotationListApi, annotations.AnnotationCreateApi
)

# URL name: (route under /v1/organizations/<org>/, view).
ROUTES: dict[str, tuple[str, type]] = {
    "api-whoami": ("whoami", whoami.WhoAmIApi),
    "api-datasets": ("datasets", DatasetsView),
    "api-dataset": ("datasets/<str:dataset_id>", DatasetView),
    "api-dataset-upload": ("datasets/<str:dataset_id>/upload", datasets.DatasetUploadApi),
    "api-dataset-export": ("datasets/<str:dataset_id>/export", datasets.DatasetExportApi),
    "api-labels": ("datasets/<str:dataset_id>/labels", LabelsView),
    "api-label": ("datasets/<str:dataset_id>/labels/<str:label_id>", annotations.LabelDeleteApi),
    "api-traces": ("traces", TracesView),
    "api-trace": ("traces/<str:trace_id>", TraceView),
    "api-blocks": ("traces/<str:trace_id>/blocks", BlocksView),
    "api-blocks-batch": ("traces/<str:trace_id>/blocks:batch", blocks.BlockBatchCreateApi),
    "api-blocks-stitched": ("traces/<str:trace_id>/blocks.stitched", blocks.BlockStitchedApi),
    "api-block": ("blocks/<str:block_id>", BlockView),
    "api-annotations": ("traces/<str:trace_id>/annotations", AnnotationsView),
    "api-annotation": ("annotations/<str:annotation_id>", annotations.AnnotationDeleteApi),
    "api-compare-traces": ("compare/traces", compare.CompareTracesApi),
    "api-compare-datasets": ("compare/datasets", compare.CompareDatasetsApi),
}

urlpatterns = [
    path(f"v1/organizations/<slug:org>/{route}", view.as_view(), name=name)
    for name, (route, view) in ROUTES.items()
]
