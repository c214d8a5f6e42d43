"""Blocks as read from a file: validated, linked by position, not yet written."""

from dataclasses import dataclass, field
from typing import Any

from traces.errors import TraceStoreError


@dataclass(slots=True)
class BlockDraft:
    sub_type: str
    block_type: str
    payload: dict[str, Any]
    raw: Any
    metadata: dict[str, Any]
    parent: int | None  # index of the parent among the trace's drafts
    call_id: str | None = None
    result_seq: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False  # a TOOL_RESULT the format marks as a tool error
    # Set when the converter names the blocks itself (traces/ingest/events.py), so that
    # a block can be written before the trace's next one is made.
    id: str | None = None
    parent_id: str | None = None


@dataclass
class ConvertedTrace:
    blocks: list[BlockDraft]
    images: dict[str, Any]  # sha256 -> InlineImage
    problems: list[dict[str, Any]]


def problem(
    location: dict[str, Any],
    message: str,
    *,
    code: str = "VALIDATION",
    rule: str = "format",
    field_name: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    out = {**location}
    if field_name is not None:
        out["field"] = field_name
    out.update({"code": code, "rule": rule, "message": message})
    out.update(more)
    return out


def problem_from_error(location: dict[str, Any], exc: TraceStoreError) -> dict[str, Any]:
    details = dict(exc.details)
    field_name = details.pop("field", None)
    rule = details.pop("rule", exc.code.lower())
    return problem(
        location, exc.message, code=exc.code, rule=rule, field_name=field_name, details=details
    )
