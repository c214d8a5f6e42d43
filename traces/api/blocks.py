"""Blocks of a trace (spec/004): append one or a batch, read flat or stitched, annotate.

The input serializers describe the bodies for the schema; the rules themselves are
checked by traces.validation, the one module every way in shares, so that the API
answers with spec/004's codes and details.
"""

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces import kinds
from traces.api.base import OrgApi
from traces.api.outputs import BlockOut, StitchedNodeOut
from traces.api.schema import errors, page_parameters
from traces.errors import ImmutableField, ValidationFailed
from traces.policy import Action
from traces.selectors.blocks import (
    block_of,
    trace_blocks_page,
    trace_tree_get,
    trace_tree_page,
)
from traces.services.annotations import block_extra_patch
from traces.services.blocks import BATCH_MAX, BlockInput, block_create, blocks_create_batch
from traces.validation import IMMUTABLE_BLOCK_FIELDS

STITCHED_MOST = 1000  # messages a page of blocks.stitched holds at most
# Past any trace's messages, and small enough that a page's end is still a 64-bit integer
# for the database (a larger cursor was a 500).
STITCHED_CURSOR_MOST = 2**53
BLOCK_KEYS = {"sub_type", "block_type", "parent_block_id", "payload", "raw", "extra"}


class BlockIn(serializers.Serializer):
    sub_type = serializers.ChoiceField(kinds.SUB_TYPES)
    block_type = serializers.ChoiceField(kinds.LANES, required=False)
    parent_block_id = serializers.CharField(required=False, allow_null=True)
    payload = serializers.JSONField()
    raw = serializers.JSONField(required=False, allow_null=True)
    extra = serializers.JSONField(required=False)


class BatchBlockIn(BlockIn):
    ref = serializers.CharField(
        required=False, help_text="a name later blocks of the batch may use as parent_block_id"
    )


def _block_input(data: Any, allowed: set[str], where: str = "") -> BlockInput:
    if not isinstance(data, dict):
        raise ValidationFailed(
            f"{where}a block must be a JSON object", {"field": "body", "rule": "type"}
        )
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValidationFailed(
            f"{where}unknown field {unknown[0]!r}; a block has {', '.join(sorted(allowed))}",
            {"field": unknown[0], "rule": "unknown_field"},
        )
    if "payload" not in data:
        raise ValidationFailed(
            f"{where}payload is required", {"field": "payload", "rule": "required"}
        )
    return BlockInput(**{key: data.get(key) for key in allowed})


class BlockCreateApi(OrgApi):
    @extend_schema(
        operation_id="blocks_create",
        request=BlockIn,
        responses={201: BlockOut, **errors(400, 409, 413, 422)},
    )
    def post(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.WRITE)
        block = block_create(trace=trace, block=_block_input(request.data, BLOCK_KEYS))
        return Response(block, status=201)


class BlockBatchCreateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        blocks = BatchBlockIn(many=True, help_text=f"1 to {BATCH_MAX} blocks")

    class OutputSerializer(serializers.Serializer):
        blocks = BlockOut(many=True)

    def max_body(self) -> int:
        return settings.API_BATCH_MAX_BYTES

    @extend_schema(
        operation_id="blocks_batch_create",
        request=InputSerializer,
        responses={201: OutputSerializer, **errors(400, 409, 413, 422)},
        description="Atomic: a failure names the index of the failing block and writes nothing.",
    )
    def post(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.WRITE)
        body = request.data
        items = body.get("blocks") if isinstance(body, dict) else body
        if not isinstance(items, list):
            raise ValidationFailed(
                'send {"blocks": [...]}: an array of blocks', {"field": "blocks", "rule": "type"}
            )
        inputs = []
        for index, item in enumerate(items):
            try:
                inputs.append(_block_input(item, BLOCK_KEYS | {"ref"}, f"block {index}: "))
            except ValidationFailed as exc:
                exc.details = {"index": index, **exc.details}
                raise
        return Response({"blocks": blocks_create_batch(trace=trace, blocks=inputs)}, status=201)


class BlockListApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        blocks = BlockOut(many=True)
        next_cursor = serializers.CharField(allow_null=True)

    @extend_schema(
        operation_id="blocks_list",
        parameters=page_parameters(most=1000, default=500),
        responses={200: OutputSerializer, **errors(422)},
        description="Every block in stitched order: a message, its thinks and calls, each "
        "call followed by its results.",
    )
    def get(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.READ)
        limit = _int(request.GET.get("limit"), 500, "limit")
        if not 1 <= limit <= 1000:
            raise ValidationFailed("limit must be 1 to 1000", {"field": "limit", "rule": "range"})
        blocks, after = trace_blocks_page(
            trace=trace, cursor=_cursor(request.GET.get("cursor")), limit=limit
        )
        next_cursor = None if after is None else ".".join(map(str, after))
        return Response({"blocks": blocks, "next_cursor": next_cursor})


def _int(text: str | None, default: int, name: str) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValidationFailed(
            f"{name} must be an integer", {"field": name, "rule": "integer"}
        ) from None


def _cursor(text: str | None) -> tuple[int, int, int] | None:
    """A cursor this API gave: "<turn>.<act>.<skip>" (traces.selectors.blocks)."""
    if not text:
        return None
    parts = text.split(".")
    try:
        turn, act, skip = (int(part) for part in parts)
    except ValueError:
        turn = act = skip = -2
    if turn < -1 or act < 0 or skip < 0 or len(text) > 40:
        raise ValidationFailed(
            "cursor must be a next_cursor this API gave", {"field": "cursor", "rule": "cursor"}
        )
    return turn, act, skip


class BlockStitchedApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        trace_id = serializers.CharField()
        messages = StitchedNodeOut(many=True)
        orphans = serializers.DictField(child=BlockOut(many=True))
        next_cursor = serializers.CharField(
            allow_null=True, required=False, help_text="with `limit`: where the next page starts"
        )

    @extend_schema(
        operation_id="blocks_stitched",
        parameters=page_parameters(most=STITCHED_MOST, default=STITCHED_MOST),
        responses={200: OutputSerializer, **errors(422)},
        description="message -> (think, tool_call -> tool_results); results ordered by "
        "payload.seq (nulls last), created_at, id; orphans for debugging. Without `limit`, "
        "the whole tree; with `limit`, that many messages (each with its children) from "
        "`cursor`, the orphans with the last page, and `next_cursor` (null after it), so "
        "that a trace of any size streams a page at a time.",
    )
    def get(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.READ)
        if "limit" not in request.GET and "cursor" not in request.GET:
            return Response(trace_tree_get(trace=trace))  # spec/004's answer, whole
        limit = _int(request.GET.get("limit"), STITCHED_MOST, "limit")
        after = _int(request.GET.get("cursor"), 0, "cursor")
        cursor_ok = 0 <= after <= STITCHED_CURSOR_MOST
        if not cursor_ok or not 1 <= limit <= STITCHED_MOST:
            raise ValidationFailed(
                f"limit must be 1 to {STITCHED_MOST} and cursor a next_cursor this API gave",
                {"field": "limit" if cursor_ok else "cursor", "rule": "range"},
            )
        return Response(trace_tree_page(trace=trace, after=after, rows=limit))


class BlockGetApi(OrgApi):
    @extend_schema(operation_id="blocks_get", responses={200: BlockOut, **errors()})
    def get(self, request, org, block_id):
        return Response(block_of(self.block(block_id, Action.READ)))


class BlockPatchApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        extra = serializers.JSONField(help_text="RFC 7386 merge patch; the only mutable field")

    @extend_schema(
        operation_id="blocks_patch",
        request=InputSerializer,
        responses={200: BlockOut, **errors(400, 409, 422)},
    )
    def patch(self, request, org, block_id):
        block = self.block(block_id, Action.WRITE)
        body = request.data
        if not isinstance(body, dict):
            raise ValidationFailed(
                "the body must be a JSON object", {"field": "body", "rule": "type"}
            )
        changed = sorted(set(body) - {"extra"})
        if changed:
            field = changed[0]
            reason = "is immutable" if field in IMMUTABLE_BLOCK_FIELDS else "is not a block field"
            raise ImmutableField(
                f"{field} {reason}: only extra may change after a block is written",
                {"field": field, "block_id": block.id},
            )
        if "extra" not in body:
            raise ValidationFailed(
                "send extra, a merge patch", {"field": "extra", "rule": "required"}
            )
        return Response(block_of(block_extra_patch(block=block, patch=body["extra"])))
