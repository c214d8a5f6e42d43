"""Datasets: list, create, read, update, delete, upload files, export."""

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces.api.base import OrgApi, OrgUploadApi, valid_input
from traces.api.outputs import DatasetOut, dataset_out
from traces.api.schema import errors
from traces.errors import ValidationFailed
from traces.policy import Action, only_public_in
from traces.selectors.datasets import dataset_export_disposition
from traces.selectors.exports import EXPORT_FORMATS, dataset_export_lines
from traces.selectors.traces import dataset_get, dataset_list
from traces.services.datasets import dataset_create, dataset_update
from traces.services.deletion import dataset_delete
from traces.services.imports import trace_import
from traces.services.uploads import uploaded_files


class DatasetListApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        datasets = DatasetOut(many=True)

    @extend_schema(
        operation_id="datasets_list",
        parameters=[OpenApiParameter("q", str, description="part of the name")],
        responses={200: OutputSerializer, **errors()},
    )
    def get(self, request, org):
        found = dataset_list(
            organization=self.organization,
            search=request.GET.get("q", ""),
            public_only=only_public_in(self.actor, self.organization),
        )
        return Response({"datasets": [dataset_out(d) for d in found[:1000]]})


class DatasetCreateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        metadata = serializers.JSONField(required=False, default=dict)
        is_public = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        operation_id="datasets_create",
        request=InputSerializer,
        responses={201: DatasetOut, **errors(400, 409, 422)},
    )
    def post(self, request, org):
        self.require(Action.WRITE)
        data = valid_input(DatasetCreateApi.InputSerializer, request.data)
        if data["is_public"]:
            self.require(Action.MANAGE)  # visibility is the owners' call
        dataset = dataset_create(organization=self.organization, **data)
        dataset.trace_count = 0
        return Response(dataset_out(dataset), status=201)


class DatasetGetApi(OrgApi):
    @extend_schema(operation_id="datasets_get", responses={200: DatasetOut, **errors()})
    def get(self, request, org, dataset_id):
        return Response(dataset_out(self.dataset(dataset_id, Action.READ)))


class DatasetUpdateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(required=False, allow_blank=True)
        metadata = serializers.JSONField(required=False)
        replace_metadata = serializers.BooleanField(
            required=False, default=False, help_text="replace metadata instead of merging it"
        )
        is_public = serializers.BooleanField(required=False)

    @extend_schema(
        operation_id="datasets_update",
        request=InputSerializer,
        responses={200: DatasetOut, **errors(400, 409, 422)},
    )
    def patch(self, request, org, dataset_id):
        dataset = self.dataset(dataset_id, Action.WRITE)
        data = valid_input(DatasetUpdateApi.InputSerializer, request.data)
        if "name" in data or "is_public" in data:
            self.require(Action.MANAGE, dataset)  # renaming and visibility: owners
        dataset_update(dataset=dataset, **data)
        return Response(dataset_out(dataset))


class DatasetDeleteApi(OrgApi):
    @extend_schema(operation_id="datasets_delete", responses={204: None, **errors()})
    def delete(self, request, org, dataset_id):
        dataset_delete(dataset=self.dataset(dataset_id, Action.MANAGE))
        return Response(status=204)


def _allow(request) -> dict[str, Any]:
    value = request.data.get("allow_duplicates")
    return {} if value is None else {"allow_duplicates": value}


class DatasetUploadApi(OrgUploadApi):
    class InputSerializer(serializers.Serializer):
        files = serializers.ListField(child=serializers.FileField(), help_text="one or more files")
        allow_duplicates = serializers.BooleanField(
            required=False,
            default=False,
            help_text="import a trace the dataset already has (by content) again",
        )

    class OutputSerializer(serializers.Serializer):
        dataset = DatasetOut()
        traces = serializers.IntegerField()
        skipped = serializers.ListField(
            child=serializers.DictField(),
            help_text="traces left out as duplicates: file, trace or line, name, and reason "
            "(in_dataset: the dataset had it; in_upload: repeated in this upload); "
            "`annotations`: how many labels and comments the line brought, not added to the "
            "trace kept",
        )
        metadata_kept = serializers.ListField(
            child=serializers.DictField(),
            help_text="dataset metadata of the files not written: key, file and reason "
            "(in_dataset: the dataset has the key, its value is kept; in_upload: the files "
            "disagree on it, each is named; every trace keeps its own file's)",
        )
        blocks = serializers.IntegerField()
        images = serializers.IntegerField()
        seconds = serializers.FloatField()
        formats = serializers.DictField(child=serializers.CharField())

    @extend_schema(
        operation_id="datasets_upload",
        request={"multipart/form-data": InputSerializer},
        responses={201: OutputSerializer, **errors(413, 422)},
        description="All or nothing: on failure, details.problems lists every problem found.",
    )
    def post(self, request, org, dataset_id):
        dataset = self.dataset(dataset_id, Action.WRITE)
        files = request.FILES.getlist("files") or request.FILES.getlist("file")
        if not files:
            raise ValidationFailed(
                "send one or more files in the multipart field `files`",
                {"field": "files", "rule": "required"},
            )
        flags = valid_input(self.InputSerializer, {"files": files, **_allow(request)})
        result = trace_import(
            dataset=dataset,
            files=uploaded_files(files),
            allow_duplicates=flags["allow_duplicates"],
        )
        refreshed = dataset_get(organization=self.organization, dataset_id=dataset_id)
        return Response(
            {
                "dataset": dataset_out(refreshed),
                "traces": result.traces,
                "blocks": result.blocks,
                "images": result.images,
                "seconds": round(result.seconds, 3),
                "formats": result.formats,
                "skipped": result.skipped,
                "metadata_kept": result.metadata_kept,
            },
            status=201,
        )


class DatasetExportApi(OrgApi):
    @extend_schema(
        operation_id="datasets_export",
        parameters=[OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), default="chat")],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="JSONL: dataset metadata, then a trace a line"
            ),
            **errors(422),
        },
    )
    def get(self, request, org, dataset_id):
        dataset = self.dataset(dataset_id, Action.READ)
        fmt = request.GET.get("format", "chat")
        if fmt not in EXPORT_FORMATS:
            raise ValidationFailed(
                f"format must be one of {', '.join(EXPORT_FORMATS)}",
                {"field": "format", "rule": "enum"},
            )
        response = StreamingHttpResponse(
            dataset_export_lines(dataset=dataset, fmt=fmt), content_type="application/x-ndjson"
        )
        response["Content-Disposition"] = dataset_export_disposition(dataset=dataset, fmt=fmt)
        return response
