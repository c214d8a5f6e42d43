"""The block kinds: one row per sub type, read by every part that treats kinds apart.

A block's `sub_type` decides everything else about it (DESIGN.md, spec/004): its lane
(`block_type`), the parent it hangs under, what its payload must hold, how the trace page
draws it, whether full-text search reads it, and what it becomes in a chat export. Each
of those is a field of its row below, and nothing else in the code lists the sub types:

- traces/models.py: the choices of `sub_type` and `block_type`, and the constraint that
  ties them (`block_type_matches_sub_type`) and the parent's presence;
- traces/validation.py: `validate_block` (lane, parent, the row's `check`);
- traces/ingest/blocks.py: the parent a spec/004 block array leaves out;
- traces/order.py: each block's place in the stitched tree, stored when it is written
  (a changed `parent` asks stored traces to be placed again: services.blocks.
  trace_order_refill, in a migration); traces/selectors/blocks.py reads the tree;
- traces/selectors/search.py: which kinds' payload text full-text search reads;
- traces/selectors/exports.py: chat events (`to_event`, `into_event`);
- traces/api: the sub types and lanes the schema lists;
- explorer/trace_page.py (BODY_RENDERERS, BlockView, the counts) and the `kind-<view>`
  header partials of templates/explorer/trace.html: the trace page; its outline counts
  thinks and names tool calls (`outline_rows`), and a new kind shows there by its place;
- explorer/views/compare.py: a block's label in a comparison.

Adding a sub type, say CITATION under a MESSAGE:

1. Write its payload check below (`_citation(payload, given)`, returning a ValidBlock;
   traces/checks.py has the pieces) and add its row to KINDS: lane, parent, check,
   export (`to_event` or `into_event`), label, icon (an SVG in static/icons/), `view`,
   body keys and fields, and its body's renderer (a key of
   explorer.trace_page.BODY_RENDERERS; a new way of drawing a body adds one there).
2. Add its header partial `kind-citation` to templates/explorer/trace.html (beside
   `kind-think`): what the block's head shows after its icon.
3. `python manage.py makemigrations traces`: the choices and the type constraint follow
   the table (the migration only changes them in the database). On SQLite it rebuilds
   the blocks table: end it with `RunPython(recreate_sqlite_triggers)` as 0014 does
   (docs/architecture.md, "A block sub type"; traces/apps.py puts them back anyway).
tests/test_kinds.py then checks that the row is complete; its other tests show that
validation, ingest, the tree, search, export and the page follow a row.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from traces import jsontext
from traces.checks import CheckInput, ValidBlock, check_no_nul, check_size, fail

# --- what each kind's payload must hold (spec/004; DESIGN.md "Rules") ----------------

API_ROLES = ("system", "user", "assistant")
TOOL_NAME_MAX = 128
CALL_ID_MAX = 256
_TOOL_NAME_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


SEQ_MAX = 2**63 - 1  # a tool result's payload.seq, stored as a 64-bit integer


def _short_text(payload: dict[str, Any], key: str, limit: int) -> str:
    """payload[key]: a non-empty string of at most `limit` characters."""
    value, field_name = payload.get(key), f"payload.{key}"
    if not isinstance(value, str) or not value:
        raise fail(f"{field_name} must be a non-empty string", field_name, "required")
    if len(value) > limit:
        raise fail(
            f"{field_name} is {len(value)} characters; at most {limit}", field_name, "max_length"
        )
    return value


def _check_call_id(payload: dict[str, Any]) -> str:
    return check_no_nul(_short_text(payload, "call_id", CALL_ID_MAX), "payload.call_id")


def _check_tool_name(payload: dict[str, Any]) -> None:
    bad = _TOOL_NAME_FORBIDDEN.search(_short_text(payload, "name", TOOL_NAME_MAX))
    if bad:
        raise fail(
            f"payload.name has a whitespace or control character ({bad.group()!r}) "
            f"at position {bad.start()}",
            "payload.name",
            "no_whitespace",
        )


# Each check takes the payload (an object) and what it is given (traces/checks.py); a
# lenient way in (imports of chat files) keeps what a model produced: DESIGN.md
# "Decision, roles" and "what a model produced is never refused".
Check = Callable[[dict[str, Any], CheckInput], ValidBlock]


def _message(payload: dict, given: CheckInput) -> ValidBlock:
    role = payload.get("role")
    if not isinstance(role, str) or not role.strip():
        raise fail("payload.role must be a non-empty string", "payload.role", "required")
    if given.strict and role not in API_ROLES:
        raise fail(
            f"payload.role must be one of {', '.join(API_ROLES)}, not {role!r}",
            "payload.role",
            "enum",
            allowed=list(API_ROLES),
        )
    content = payload.get("content")
    if content is not None and not isinstance(content, str | list):
        raise fail(
            "payload.content must be a string or a list of content parts",
            "payload.content",
            "type",
        )
    # An import keeps an empty turn of any role as it was (DESIGN.md "imports keep real
    # logs whole"); the blocks API refuses it but for an assistant's.
    if given.strict and role != "assistant" and not content:
        raise fail(
            "payload.content must not be empty (only an assistant turn may have no content)",
            "payload.content",
            "non_empty",
        )
    if content is not None:
        check_size(
            content,
            limit=given.limits.message,
            sub_type="MESSAGE",
            field_name="content",
            ctx=given.ctx,
        )
    return ValidBlock("MESSAGE", "MESSAGE", payload, None, None)


def _tool_call(payload: dict, given: CheckInput) -> ValidBlock:
    call_id = _check_call_id(payload)
    _check_tool_name(payload)
    notes: dict[str, Any] = {}
    if "arguments" not in payload:
        raise fail("payload.arguments is required", "payload.arguments", "required")
    arguments = payload["arguments"]
    if isinstance(arguments, str):
        try:
            # One level less than a stored value: the arguments sit inside the payload.
            parsed = jsontext.loads(arguments, max_depth=jsontext.MAX_DEPTH - 1)
        except jsontext.JsonError as exc:
            parsed, reason = None, f"not JSON: {exc}"
        else:
            reason = None if isinstance(parsed, dict) else "JSON but not an object"
        if reason is None:
            payload = {**payload, "arguments": parsed}
        elif not given.strict:
            notes["arguments_unparsed"] = reason
        else:
            raise fail(
                f"payload.arguments is a string that is {reason}",
                "payload.arguments",
                "json_object",
            )
    elif not isinstance(arguments, dict):
        if given.strict:
            raise fail(
                "payload.arguments must be an object or a JSON string of one",
                "payload.arguments",
                "json_object",
            )
        notes["arguments_unparsed"] = f"a JSON {type(arguments).__name__}, not an object"
    check_size(
        payload["arguments"],
        limit=given.limits.tool_args,
        sub_type="TOOL_CALL",
        field_name="arguments",
        ctx=given.ctx,
    )
    return ValidBlock("TOOL_CALL", "ACT", payload, call_id, None, notes)


def _think(payload: dict, given: CheckInput) -> ValidBlock:
    text = payload.get("text")
    if not isinstance(text, str) or not text:
        raise fail("payload.text must be a non-empty string", "payload.text", "non_empty")
    check_size(text, limit=given.limits.think, sub_type="THINK", field_name="text", ctx=given.ctx)
    return ValidBlock("THINK", "ACT", payload, None, None)


def _tool_result(payload: dict, given: CheckInput) -> ValidBlock:
    call_id = _check_call_id(payload)
    present = [key for key in ("output", "delta") if key in payload]
    if len(present) != 1:
        raise fail(
            "payload must have exactly one of output or delta"
            + (f" (it has {' and '.join(present)})" if present else ""),
            "payload.output",
            "exactly_one_of",
        )
    seq = payload.get("seq")
    # At most the largest 64-bit signed integer: the column's (a larger one was a 500).
    if seq is not None and (
        isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= SEQ_MAX
    ):
        raise fail(
            f"payload.seq must be a non-negative integer of at most {SEQ_MAX}",
            "payload.seq",
            "non_negative_integer",
        )
    key = present[0]
    check_size(
        payload[key],
        limit=given.limits.tool_result,
        sub_type="TOOL_RESULT",
        field_name=key,
        ctx=given.ctx,
    )
    parent = given.parent
    if parent is not None and parent.call_id is not None and parent.call_id != call_id:
        raise fail(
            f"payload.call_id {call_id!r} differs from its parent TOOL_CALL's "
            f"call_id {parent.call_id!r}",
            "payload.call_id",
            "matches_parent",
        )
    return ValidBlock("TOOL_RESULT", "OBSERVE", payload, call_id, seq)


# --- what each kind becomes in a chat export (spec/000) -------------------------------
# Used for blocks written through the API; an imported event comes back as it was (raw).


def _message_event(payload: dict[str, Any]) -> dict[str, Any]:
    return dict(payload)


def _result_event(payload: dict[str, Any]) -> dict[str, Any]:
    content = payload.get("output", payload.get("delta"))
    return {"role": "tool", "tool_call_id": payload["call_id"], "content": content}


def _thinks_into(event: dict[str, Any], payloads: list[dict[str, Any]]) -> None:
    event["reasoning_content"] = "\n\n".join(p["text"] for p in payloads)


def _calls_into(event: dict[str, Any], payloads: list[dict[str, Any]]) -> None:
    event["tool_calls"] = [
        {
            "id": p["call_id"],
            "type": "function",
            "function": {"name": p["name"], "arguments": p["arguments"]},
        }
        for p in payloads
    ]


# --- the table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockKind:
    sub_type: str
    lane: str  # the block_type: MESSAGE, ACT or OBSERVE, the page's three lanes
    parent: str | None  # the sub type it must hang under; None: it has no parent
    label: str  # what the page calls it ("call", "result")
    icon: str  # its SVG, a path under static/
    view: str  # its name in the page's code: CSS class `k-<view>`, header partial `kind-<view>`
    check: Check  # what its payload must hold
    body: tuple[str, ...]  # payload keys the page shows as its body (the first present)
    render: str  # how the page draws the body: a key of explorer.trace_page.BODY_RENDERERS
    fields: tuple[str, ...]  # the payload keys it defines; others show as "other fields"
    keyed_by_call_id: bool = False  # it carries a call_id (stored in the call_id column)
    orphans: str = ""  # its list in the stitched tree's `orphans`, when its parent is wrong
    by_seq: bool = False  # among its siblings: by payload.seq (nulls last), created_at, id
    searched: bool = True  # full-text search reads its payload's text (migration 0004)
    to_event: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # its own chat event
    # ... or what it adds to its parent's chat event, given the payloads of its kind there.
    into_event: Callable[[dict[str, Any], list[dict[str, Any]]], None] | None = None


KINDS: tuple[BlockKind, ...] = (
    BlockKind(
        "MESSAGE", lane="MESSAGE", parent=None, check=_message, to_event=_message_event,
        label="message", icon="icons/kind-message.svg", view="message", render="content",
        body=("content",), fields=("role", "content", "name"),
    ),
    BlockKind(
        "TOOL_CALL", lane="ACT", parent="MESSAGE", check=_tool_call, into_event=_calls_into,
        keyed_by_call_id=True, orphans="tool_calls",
        label="call", icon="icons/kind-call.svg", view="call", render="arguments",
        body=("arguments",), fields=("call_id", "name", "arguments"),
    ),
    BlockKind(
        "THINK", lane="ACT", parent="MESSAGE", check=_think, into_event=_thinks_into,
        orphans="thinks", label="think", icon="icons/kind-think.svg", view="think",
        render="markdown", body=("text",), fields=("text",),
    ),
    BlockKind(
        "TOOL_RESULT", lane="OBSERVE", parent="TOOL_CALL", check=_tool_result,
        to_event=_result_event, keyed_by_call_id=True, orphans="tool_results", by_seq=True,
        label="result", icon="icons/kind-result.svg", view="result", render="output",
        body=("output", "delta"), fields=("call_id", "output", "delta", "seq"),
    ),
)  # fmt: skip

BY_SUB_TYPE: dict[str, BlockKind] = {kind.sub_type: kind for kind in KINDS}
SUB_TYPES: tuple[str, ...] = tuple(BY_SUB_TYPE)
LANES: tuple[str, ...] = tuple(dict.fromkeys(kind.lane for kind in KINDS))


def kind_of(sub_type: Any) -> BlockKind | None:
    """The row of a sub type, or None for anything that is not one."""
    return BY_SUB_TYPE.get(sub_type) if isinstance(sub_type, str) else None


def children_of(sub_type: str) -> tuple[BlockKind, ...]:
    """The kinds that hang under `sub_type`, in table order."""
    return tuple(kind for kind in KINDS if kind.parent == sub_type)


def searched_sub_types() -> tuple[str, ...]:
    return tuple(kind.sub_type for kind in KINDS if kind.searched)
