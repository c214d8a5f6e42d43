"""Traces: create, list, read, patch (extra and metadata by merge patch), delete."""

import math

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces.api.base import OrgApi, valid_input
from traces.api.outputs import TraceOut, trace_out
from traces.api.schema import errors, page_parameters
from traces.errors import NotFound, ValidationFailed
from traces.policy import Action, allows, only_public_in
from traces.selectors.trace_filters import TraceFilter
from traces.selectors.traces import dataset_by_id_or_name, trace_list
from traces.services.datasets import dataset_get_or_create
from traces.services.deletion import trace_delete
from traces.services.traces import trace_create, trace_patch

RESERVED_QUERY = {"dataset", "reward", "reward_min", "reward_max", "label", "cursor", "limit"}


class TraceCreateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        dataset = serializers.CharField(
            required=False, allow_null=True, help_text="dataset id, or name (created if new)"
        )
        name = serializers.CharField(required=False, allow_blank=True, default="")
        metadata = serializers.JSONField(required=False, default=dict)

    @extend_schema(
        operation_id="traces_create",
        request=InputSerializer,
        responses={201: TraceOut, **errors(400, 422)},
    )
    def post(self, request, org):
        self.require(Action.WRITE)
        data = valid_input(TraceCreateApi.InputSerializer, request.data)
        dataset = None
        ref = data.get("dataset")
        if ref:
            dataset = dataset_by_id_or_name(organization=self.organization, ref=ref)
            if dataset is None:
                dataset, _ = dataset_get_or_create(organization=self.organization, name=ref)
        trace = trace_create(
            organization=self.organization,
            dataset=dataset,
            name=data["name"],
            metadata=data["metadata"],
        )
        return Response(trace_out(trace), status=201)


def _float(request, key: str) -> float | None:
    raw = request.GET.get(key)
    if raw is None or raw == "":
        return None
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValidationFailed(f"{key} must be a finite number", {"field": key, "rule": "number"})
    return number


class TraceListApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        traces = TraceOut(many=True)
        next_cursor = serializers.CharField(allow_null=True)

    @extend_schema(
        operation_id="traces_list",
        parameters=[
            OpenApiParameter("dataset", str, description="dataset id or name"),
            OpenApiParameter("reward", float),
            OpenApiParameter("reward_min", float),
            OpenApiParameter("reward_max", float),
            OpenApiParameter(
                "label", str, description="tagged with this label (on the trace or a block)"
            ),
            *page_parameters(most=500, default=50),
            OpenApiParameter(
                "metadata.<key>", str, description="metadata filter, e.g. metadata.task_id=7"
            ),
        ],
        responses={200: OutputSerializer, **errors(422)},
    )
    def get(self, request, org):
        # A filter misnamed (`dataset_id`, `task_id`) would otherwise list every trace.
        unknown = [
            key
            for key in request.GET
            if key not in RESERVED_QUERY and not key.startswith("metadata.")
        ]
        if unknown:
            known = ", ".join(sorted(RESERVED_QUERY))
            raise ValidationFailed(
                f"unknown query parameter {unknown[0][:100]!r}: a trace list takes {known} "
                "and metadata.<key>",
                {"field": unknown[0][:100], "rule": "unknown_parameter"},
            )
        dataset = None
        if request.GET.get("dataset"):
            dataset = dataset_by_id_or_name(
                organization=self.organization, ref=request.GET["dataset"]
            )
            if dataset is None or not allows(self.actor, Action.READ, dataset):
                raise NotFound(
                    f"no dataset {request.GET['dataset']!r}", {"dataset": request.GET["dataset"]}
                )
        try:
            limit = int(request.GET.get("limit", 50))
        except ValueError:
            raise ValidationFailed("limit must be an integer", {"field": "limit"}) from None
        filters = TraceFilter(
            metadata={
                key.removeprefix("metadata."): value
                for key, value in request.GET.items()
                if key.startswith("metadata.") and key not in RESERVED_QUERY
            },
            reward=_float(request, "reward"),
            reward_min=_float(request, "reward_min"),
            reward_max=_float(request, "reward_max"),
            label=request.GET.get("label", "")[:200],
        )
        page, cursor = trace_list(
            organization=self.organization,
            public_only=only_public_in(self.actor, self.organization),
            dataset=dataset,
            filters=filters,
            after=request.GET.get("cursor") or None,
            limit=limit,
        )
        return Response({"traces": [trace_out(t) for t in page], "next_cursor": cursor})


class TraceGetApi(OrgApi):
    @extend_schema(operation_id="traces_get", responses={200: TraceOut, **errors()})
    def get(self, request, org, trace_id):
        return Response(trace_out(self.trace(trace_id, Action.READ)))


class TracePatchApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        extra = serializers.JSONField(required=False, help_text="RFC 7386 merge patch")
        metadata = serializers.JSONField(required=False, help_text="RFC 7386 merge patch")
        name = serializers.CharField(required=False, allow_blank=True)

    @extend_schema(
        operation_id="traces_patch",
        request=InputSerializer,
        responses={200: TraceOut, **errors(400, 422)},
    )
    def patch(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.WRITE)
        data = valid_input(TracePatchApi.InputSerializer, request.data)
        unknown = sorted(set(request.data) - {"extra", "metadata", "name"})
        if unknown:
            raise ValidationFailed(
                f"a trace's {', '.join(unknown)} cannot be changed; send extra, metadata or name",
                {"field": unknown[0], "rule": "not_patchable"},
            )
        return Response(trace_out(trace_patch(trace=trace, **data)))


class TraceDeleteApi(OrgApi):
    @extend_schema(operation_id="traces_delete", responses={204: None, **errors()})
    def delete(self, request, org, trace_id):
        trace_delete(trace=self.trace(trace_id, Action.WRITE))
        return Response(status=204)
