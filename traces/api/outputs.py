"""How datasets, traces and blocks look in API answers (shared by the views' outputs)."""

from typing import Any

from rest_framework import serializers

from traces import kinds
from traces.models import Dataset, Trace


class DatasetOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    metadata = serializers.JSONField()
    is_public = serializers.BooleanField()
    trace_count = serializers.IntegerField(required=False)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class TraceOut(serializers.Serializer):
    id = serializers.CharField()
    dataset = serializers.CharField(allow_null=True)
    index = serializers.IntegerField()
    name = serializers.CharField()
    metadata = serializers.JSONField()
    extra = serializers.JSONField()
    reward = serializers.FloatField(allow_null=True)
    block_count = serializers.IntegerField()
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    cost_usd = serializers.FloatField(allow_null=True)
    duration_seconds = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class BlockOut(serializers.Serializer):
    id = serializers.CharField()
    trace_id = serializers.CharField()
    block_type = serializers.ChoiceField(kinds.LANES)
    sub_type = serializers.ChoiceField(kinds.SUB_TYPES)
    parent_block_id = serializers.CharField(allow_null=True)
    payload = serializers.JSONField()
    metadata = serializers.JSONField()
    raw = serializers.JSONField(allow_null=True)
    extra = serializers.JSONField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class StitchedNodeOut(BlockOut):
    children = serializers.ListField(child=serializers.DictField(), help_text="child nodes")


class ErrorBodyOut(serializers.Serializer):
    code = serializers.CharField()
    http_status = serializers.IntegerField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorOut(serializers.Serializer):
    error = ErrorBodyOut()


def dataset_out(dataset: Dataset) -> dict[str, Any]:
    return {
        "id": dataset.id,
        "name": dataset.name,
        "description": dataset.description,
        "metadata": dataset.metadata,
        "is_public": dataset.is_public,
        "trace_count": getattr(dataset, "trace_count", None),
        "created_at": dataset.created_at,
        "updated_at": dataset.updated_at,
    }


def trace_out(trace: Trace) -> dict[str, Any]:
    return {
        "id": trace.id,
        "dataset": trace.dataset_id,
        "index": trace.index,
        "name": trace.name,
        "metadata": trace.metadata,
        "extra": trace.extra,
        "reward": trace.reward,
        "block_count": trace.block_count,
        "input_tokens": trace.input_tokens,
        "output_tokens": trace.output_tokens,
        "cost_usd": trace.cost_usd,
        "duration_seconds": trace.duration_seconds,
        "created_at": trace.created_at,
        "updated_at": trace.updated_at,
    }
