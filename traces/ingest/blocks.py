"""Spec/004 block arrays into block drafts.

`parent_block_id` names the `id` (or `ref`) of an earlier block in the same
file. Where it is missing, a TOOL_CALL or THINK hangs under the latest MESSAGE
and a TOOL_RESULT under the TOOL_CALL with its `call_id`; where the file gives
no block an id at all, parent ids are placeholders (spec/004's own example says
"tb_msg123") and the same rule applies.
"""

from typing import Any

from traces import kinds
from traces.checks import Limits, ParentInfo, json_object_or_none
from traces.errors import DuplicateCallId, DuplicateResultSeq, TraceStoreError
from traces.ingest.drafts import BlockDraft, ConvertedTrace, problem, problem_from_error
from traces.ingest.images import extract_images
from traces.validation import check_rewards, validate_block


def _inferred_parent(
    item: dict[str, Any], latest: dict[str, int], keyed: dict[tuple[str, str], int]
) -> int | None:
    """The parent a block leaves out: the block of its parent's kind with its call_id
    where that kind carries one (a TOOL_RESULT's TOOL_CALL), else the latest block of
    its parent's kind (traces/kinds.py)."""
    kind = kinds.kind_of(item.get("sub_type"))
    if kind is None or kind.parent is None:
        return None
    if kinds.BY_SUB_TYPE[kind.parent].keyed_by_call_id:
        payload = item.get("payload")
        call_id = payload.get("call_id") if isinstance(payload, dict) else None
        return keyed.get((kind.parent, call_id)) if isinstance(call_id, str) else None
    return latest.get(kind.parent)


def blocks_to_drafts(
    items: list[Any], *, location: dict[str, Any], limits: Limits
) -> ConvertedTrace:
    drafts: list[BlockDraft] = []
    images: dict[str, Any] = {}
    problems: list[dict[str, Any]] = []
    by_name: dict[str, int] = {}
    latest: dict[str, int] = {}  # sub type -> its latest block
    keyed: dict[tuple[str, str], int] = {}  # (sub type, call_id) -> its block
    results: set[tuple[str, int]] = set()  # (call_id, seq): only non-null seq conflict
    names_given = any(
        isinstance(item, dict) and (item.get("id") or item.get("ref")) for item in items
    )
    if not items:
        problems.append(problem(location, "a trace needs at least one block", rule="non_empty"))
    for i, item in enumerate(items):
        where = {**location, "block": i}
        if not isinstance(item, dict):
            problems.append(problem(where, "a block must be a JSON object", rule="type"))
            continue
        parent_ref = item.get("parent_block_id")
        kind = kinds.kind_of(item.get("sub_type"))
        if parent_ref is not None and kind is not None and kind.parent is None:
            problems.append(
                problem(
                    where,
                    f"a {kind.sub_type} block has no parent_block_id",
                    rule="message_has_no_parent",
                    field_name="parent_block_id",
                )
            )
            continue
        if parent_ref is not None and names_given:
            parent = by_name.get(parent_ref) if isinstance(parent_ref, str) else None
            if parent is None:
                problems.append(
                    problem(
                        where,
                        f"parent_block_id {parent_ref!r} names no earlier block of this trace",
                        rule="parent_exists",
                        field_name="parent_block_id",
                    )
                )
                continue
        else:
            parent = _inferred_parent(item, latest, keyed)
        parent_info = None
        if parent is not None:
            p = drafts[parent]
            parent_info = ParentInfo(id=None, sub_type=p.sub_type, call_id=p.call_id)
        payload = extract_images(item.get("payload"), images)
        try:
            valid = validate_block(
                sub_type=item.get("sub_type"),
                block_type=item.get("block_type"),
                payload=payload,
                parent=parent_info,
                limits=limits,
                strict=False,  # a file is a record: as the chat logs it may come from
            )
            if valid.sub_type == "TOOL_CALL" and ("TOOL_CALL", valid.call_id) in keyed:
                raise DuplicateCallId(
                    f"call_id {valid.call_id!r} is used by an earlier TOOL_CALL of this trace",
                    {"field": "payload.call_id", "rule": "duplicate_call_id"},
                )
            if valid.sub_type == "TOOL_RESULT" and valid.result_seq is not None:
                key = (valid.call_id, valid.result_seq)
                if key in results:
                    raise DuplicateResultSeq(
                        f"a second TOOL_RESULT for call_id {valid.call_id!r} with the same seq",
                        {"field": "payload.seq", "rule": "duplicate_result_seq"},
                    )
                results.add(key)
            # Optional objects: absent or null is {}, any other value is refused.
            extra = json_object_or_none(item.get("extra"), "extra")
            check_rewards(extra, field_name="extra")
            metadata = json_object_or_none(item.get("metadata"), "metadata")
        except TraceStoreError as exc:
            problems.append(problem_from_error(where, exc))
            continue
        drafts.append(
            BlockDraft(
                sub_type=valid.sub_type,
                block_type=valid.block_type,
                payload=valid.payload,
                raw=extract_images(item.get("raw"), images),
                metadata=metadata,
                parent=parent,
                call_id=valid.call_id,
                result_seq=valid.result_seq,
                extra=extra,
            )
        )
        index = len(drafts) - 1
        for key in ("id", "ref"):
            if isinstance(item.get(key), str):
                by_name[item[key]] = index
        latest[valid.sub_type] = index
        if valid.call_id is not None:
            keyed[(valid.sub_type, valid.call_id)] = index
    return ConvertedTrace(drafts, images, problems)
