"""The small checks every rule is made of, and what a block check takes and gives.

No model is imported here, so that the table of block kinds (traces/kinds.py), which the
models read, can use them; traces/validation.py puts them together for every way in.
"""

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings

from traces import jsontext
from traces.errors import PayloadTooLarge, ValidationFailed

NUL = "\x00"


@dataclass(frozen=True)
class Limits:
    """Byte limits of payload fields (DESIGN.md: env-tunable, LIMIT_*_BYTES)."""

    message: int
    think: int
    tool_args: int
    tool_result: int

    @classmethod
    def from_settings(cls) -> "Limits":
        return cls(
            message=settings.LIMIT_MSG_BYTES,
            think=settings.LIMIT_THINK_BYTES,
            tool_args=settings.LIMIT_TOOL_ARGS_BYTES,
            tool_result=settings.LIMIT_TOOL_RESULT_BYTES,
        )

    @classmethod
    def for_import(cls) -> "Limits":
        """A file import is a record of what happened (DESIGN.md "imports keep real logs
        whole"): a message of any role may be up to LIMIT_IMPORT_MESSAGE_BYTES (by default
        the tool-result limit); the blocks API keeps spec/004's limits."""
        limits = cls.from_settings()
        return cls(
            message=settings.LIMIT_IMPORT_MESSAGE_BYTES,
            think=limits.think,
            tool_args=limits.tool_args,
            tool_result=limits.tool_result,
        )


@dataclass(frozen=True)
class ParentInfo:
    id: str | None
    sub_type: str
    call_id: str | None = None


@dataclass(frozen=True)
class Context:
    """Where the block is going: used in error details."""

    trace_id: str | None = None
    parent_block_id: str | None = None


class CheckInput(NamedTuple):
    """What a kind's payload check is given besides the payload: the limits, where the
    block goes (for error details), whether the way in is strict (the blocks API; imports
    of chat files are lenient) and what is known of the parent. A tuple: one is made a
    block, and a frozen dataclass costs several times as much to make."""

    limits: Limits
    ctx: Context
    strict: bool
    parent: ParentInfo | None


@dataclass
class ValidBlock:
    sub_type: str
    block_type: str
    payload: dict[str, Any]
    call_id: str | None
    result_seq: int | None
    notes: dict[str, Any] = field(default_factory=dict)


def fail(message: str, field_name: str, rule: str, **details: Any) -> ValidationFailed:
    """A refusal naming the field and the rule it breaks (spec/004's details)."""
    return ValidationFailed(message, {"field": field_name, "rule": rule, **details})


def human_bytes(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n} bytes"


def check_no_nul(value: str, field_name: str) -> str:
    """Names and ids are stored in text columns, which refuse U+0000 on PostgreSQL; they
    refuse it on every database alike. (Payload strings keep it: they are JSON text.)"""
    if NUL in value:
        raise fail(
            f"{field_name} holds a NUL character (U+0000) at position {value.index(NUL)}",
            field_name,
            "no_nul",
        )
    return value


def check_json_depth(value: Any, field_name: str) -> None:
    """Refuse a JSON value nested deeper than jsontext.MAX_DEPTH, naming where it is."""
    try:
        jsontext.check_depth(value)
    except jsontext.JsonTooDeep as exc:
        raise fail(
            f"{field_name} is {exc}",
            field_name,
            "max_depth",
            limit_depth=exc.limit,
            depth=exc.depth,
        ) from None


def check_size(value: Any, *, limit: int, sub_type: str, field_name: str, ctx: Context) -> None:
    """spec/004's 413: the UTF-8 size of a string, or of the compact JSON of any other
    value, over its limit; `actual_bytes` exact. Never truncated."""
    if isinstance(value, str) and len(value) * 4 <= limit:
        return  # a character takes at most 4 bytes of UTF-8: under the limit, uncounted
    actual = jsontext.byte_size(value)
    if actual > limit:
        raise PayloadTooLarge(
            f"{sub_type.lower()} {field_name} exceeds {human_bytes(limit)} limit",
            {
                "sub_type": sub_type,
                "field": field_name,
                "limit_bytes": limit,
                "actual_bytes": actual,
                "trace_id": ctx.trace_id,
                "parent_block_id": ctx.parent_block_id,
            },
        )


def check_object(value: Any, field_name: str) -> dict[str, Any]:
    """A JSON object (metadata, extra, or a merge patch of one) nested no deeper than a
    stored value may be."""
    if not isinstance(value, dict):
        raise fail(
            f"{field_name} must be a JSON object, not {jsontext.type_name(value)}",
            field_name,
            "json_object",
        )
    check_json_depth(value, field_name)
    return value


def json_object_or_none(value: Any, field_name: str) -> dict[str, Any]:
    """An optional object field of an imported item (a block's `metadata` or `extra`):
    absent or null is an empty object; any other non-object is refused, never replaced
    by `{}`."""
    return {} if value is None else check_object(value, field_name)
