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

ORG = "v1/organizations/<slug:org>/"
urlpatterns = [
    path(f"{ORG}whoami", whoami.WhoAmIApi.as_view(), name="api-whoami"),
    path(f"{ORG}datasets", DatasetsView.as_view(), name="api-datasets"),
    path(f"{ORG}datasets/<str:dataset_id>", DatasetView.as_view(), name="api-dataset"),
    path(
        f"{ORG}datasets/<str:dataset_id>/upload",
        datasets.DatasetUploadApi.as_view(),
        name="api-dataset-upload",
    ),
    path(
        f"{ORG}datasets/<str:dataset_id>/export",
        datasets.DatasetExportApi.as_view(),
        name="api-dataset-export",
    ),
    path(f"{ORG}datasets/<str:dataset_id>/labels", LabelsView.as_view(), name="api-labels"),
    path(
        f"{ORG}datasets/<str:dataset_id>/labels/<str:label_id>",
        annotations.LabelDeleteApi.as_view(),
        name="api-label",
    ),
    path(f"{ORG}traces", TracesView.as_view(), name="api-traces"),
    path(f"{ORG}traces/<str:trace_id>", TraceView.as_view(), name="api-trace"),
    path(f"{ORG}traces/<str:trace_id>/blocks", BlocksView.as_view(), name="api-blocks"),
    path(
        f"{ORG}traces/<str:trace_id>/blocks:batch",
        blocks.BlockBatchCreateApi.as_view(),
        name="api-blocks-batch",
    ),
    path(
        f"{ORG}traces/<str:trace_id>/blocks.stitched",
        blocks.BlockStitchedApi.as_view(),
        name="api-blocks-stitched",
    ),
    path(f"{ORG}blocks/<str:block_id>", BlockView.as_view(), name="api-block"),
    path(
        f"{ORG}traces/<str:trace_id>/annotations",
        AnnotationsView.as_view(),
        name="api-annotations",
    ),
    path(
        f"{ORG}annotations/<str:annotation_id>",
        annotations.AnnotationDeleteApi.as_view(),
        name="api-annotation",
    ),
    path(f"{ORG}compare/traces", compare.CompareTracesApi.as_view(), name="api-compare-traces"),
    path(
        f"{ORG}compare/datasets", compare.CompareDatasetsApi.as_view(), name="api-compare-datasets"
    ),
]
