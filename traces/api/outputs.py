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


def _answer(out: type[serializers.Serializer], obj: Any, **attributes: str) -> dict[str, Any]:
    """What `out` describes, read from `obj`, in its fields' order: each field from the
    attribute of its name (or the one `attributes` names); one not required may be absent."""
    answer = {}
    for name, field in out._declared_fields.items():
        attribute = attributes.get(name, name)
        answer[name] = getattr(obj, attribute) if field.required else getattr(obj, attribute, None)
    return answer


def dataset_out(dataset: Dataset) -> dict[str, Any]:
    return _answer(DatasetOut, dataset)


def trace_out(trace: Trace) -> dict[str, Any]:
    return _answer(TraceOut, trace, dataset="dataset_id")
