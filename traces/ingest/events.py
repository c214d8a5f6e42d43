"""Chat-format events (spec/000-003, and the quirks of real data) into block drafts.

One event gives a MESSAGE (with THINK and TOOL_CALL children) or, for a tool
output, one TOOL_RESULT per call it answers. The event itself, images taken out,
is kept in `raw` of the first block it gives, and `metadata.event_index` says
which event a block came from, so export gives the events back unchanged.
"""

from typing import Any

from traces.errors import DuplicateCallId, TraceStoreError
from traces.ingest.drafts import BlockDraft, ConvertedTrace, problem, problem_from_error
from traces.ingest.images import extract_images
from traces.jsontext import MAX_DEPTH
from traces.validation import Context, Limits, ParentInfo, validate_block

TOOL_ROLES = ("tool", "function", "ipython")


class _Trace:
    def __init__(self, location: dict[str, Any], limits: Limits, depth_checked: bool) -> None:
        self.location = location
        self.limits = limits
        self.depth_checked = depth_checked
        self.blocks: list[BlockDraft] = []
        self.images: dict[str, Any] = {}
        self.problems: list[dict[str, Any]] = []
        self.calls: dict[str, int] = {}  # stored call_id -> draft index
        # The id as the file wrote it -> the stored id of its latest call: agents reuse
        # an id once its call is answered, and stored ids must be unique in a trace.
        self.current: dict[str, str] = {}
        # Stored call ids without an output yet, in call order (a dict: O(1) removal).
        self.unanswered: dict[str, None] = {}
        # Stored call ids of the most recent turn that made calls, in call order: an output
        # without an id answers the earliest unanswered one of them (DESIGN.md).
        self.turn_calls: list[str] = []
        # The id as the file wrote it -> the next `#n` suffix to try when it is reused,
        # so that k reuses of one id cost O(k), not O(k^2).
        self.next_suffix: dict[str, int] = {}
        self.generated = 0

    def where(self, event_index: int, **more: Any) -> dict[str, Any]:
        return {**self.location, "event": event_index, **more}

    def add(
        self,
        event_index: int,
        sub_type: str,
        payload: dict[str, Any],
        parent: int | None,
        raw: Any,
        notes: dict[str, Any] | None = None,
        field_prefix: str = "",
    ) -> int | None:
        parent_info = None
        if parent is not None:
            p = self.blocks[parent]
            parent_info = ParentInfo(id=None, sub_type=p.sub_type, call_id=p.call_id)
        try:
            valid = validate_block(
                sub_type=sub_type,
                payload=payload,
                parent=parent_info,
                limits=self.limits,
                strict=False,
                depth_checked=self.depth_checked,
            )
        except TraceStoreError as exc:
            found = problem_from_error(self.where(event_index), exc)
            if field_prefix and "field" in found:
                found["field"] = field_prefix + found["field"]
            self.problems.append(found)
            return None
        metadata: dict[str, Any] = {"event_index": event_index}
        if notes:
            metadata.update(notes)
        metadata.update(valid.notes)
        self.blocks.append(
            BlockDraft(
                sub_type=valid.sub_type,
                block_type=valid.block_type,
                payload=valid.payload,
                raw=raw,
                metadata=metadata,
                parent=parent,
                call_id=valid.call_id,
                result_seq=valid.result_seq,
            )
        )
        return len(self.blocks) - 1

    def new_call_id(self, event_index: int, j: int) -> str:
        self.generated += 1
        return f"call_e{event_index}_{j}"


def _tool_calls(event: dict[str, Any]) -> list[tuple[Any, str | None, Any, bool]]:
    """(call_id, name, arguments, arguments_given) for every call an event makes."""
    calls = []
    for tc in event.get("tool_calls") or []:
        if not isinstance(tc, dict):
            calls.append((None, None, None, False))
            continue
        function = tc.get("function")
        if isinstance(function, dict):
            name, args_given = function.get("name"), "arguments" in function
            arguments = function.get("arguments")
        else:  # inspect: function is the name; tau2: flat name
            name = function if isinstance(function, str) else tc.get("name")
            args_given, arguments = "arguments" in tc, tc.get("arguments")
        calls.append((tc.get("id"), name, arguments, args_given))
    legacy = event.get("function_call")
    if isinstance(legacy, dict):
        calls.append((None, legacy.get("name"), legacy.get("arguments"), "arguments" in legacy))
    return calls


def _thoughts(event: dict[str, Any]) -> list[str]:
    texts = []
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = event.get(key)
        if isinstance(value, str) and value.strip():
            texts.append(value)
    raw_data = event.get("raw_data")
    if isinstance(raw_data, dict) and isinstance(raw_data.get("message"), dict):
        value = raw_data["message"].get("reasoning_content")
        if isinstance(value, str) and value.strip() and value not in texts:
            texts.append(value)
    content = event.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("thinking", "reasoning"):
                value = part.get(part["type"]) or part.get("text")
                if isinstance(value, str) and value.strip():
                    texts.append(value)
    return texts


def _result_targets(t: _Trace, event: dict[str, Any], i: int) -> list[str] | None:
    """The call ids a tool output answers, or None after recording a problem."""
    if isinstance(event.get("tool_call_id"), str):
        wanted, fld = [event["tool_call_id"]], "tool_call_id"
    elif isinstance(event.get("tool_call_ids"), list) and event["tool_call_ids"]:
        wanted, fld = event["tool_call_ids"], "tool_call_ids"
    elif isinstance(event.get("id"), str) and event["id"] in t.current:
        wanted, fld = [event["id"]], "id"
    else:
        wanted, fld = [], None
    for call_id in wanted:
        if not isinstance(call_id, str) or call_id not in t.current:
            t.problems.append(
                problem(
                    t.where(i),
                    f"tool output answers call id {call_id!r}, which no earlier tool call has",
                    rule="unknown_call_id",
                    field_name=fld,
                )
            )
            return None
    if wanted:
        return [t.current[call_id] for call_id in wanted]
    # No link: the earliest unanswered call of the most recent turn that made calls (by
    # name first for legacy role `function`), so that parallel calls are answered in
    # order and a call of an earlier turn that never got an output stays unanswered.
    waiting = [call_id for call_id in t.turn_calls if call_id in t.unanswered]
    name = event.get("name")
    if event.get("role") == "function" and name:
        named = [c for c in waiting if t.blocks[t.calls[c]].payload.get("name") == name]
        waiting = named or waiting
    if waiting:
        return [waiting[0]]
    t.problems.append(
        problem(
            t.where(i),
            "tool output without a call id, and every call of the most recent turn that "
            "made calls is answered",
            rule="unanswered_output",
            field_name="role",
        )
    )
    return None


def is_tool_error(event: dict[str, Any]) -> bool:
    """Whether a tool output says the tool failed: Inspect's `error` object, tau2's
    `error: true`, a tool message flagged `is_error` (Anthropic's tool_result, MCP) or
    with `status: "error"`."""
    error = event.get("error")
    if error is True or (isinstance(error, dict | str) and error):
        return True
    return event.get("is_error") is True or event.get("status") == "error"


def _tool_output(t: _Trace, event: dict[str, Any], i: int, raw: Any, content: Any) -> None:
    targets = _result_targets(t, event, i)
    if targets is None:
        return
    failed = is_tool_error(event)
    for n, call_id in enumerate(targets):
        # A second output for the same call is kept as a second result: results without
        # seq are legal several times under one call (spec/004).
        t.unanswered.pop(call_id, None)
        payload = {"call_id": call_id, "output": content}
        index = t.add(
            i,
            "TOOL_RESULT",
            payload,
            t.calls[call_id],
            raw if n == 0 else None,
            field_prefix="content<-",
        )
        if index is not None and failed:
            t.blocks[index].is_error = True


def _message(t: _Trace, event: dict[str, Any], i: int, raw: Any, content: Any) -> None:
    role = event.get("role")
    payload: dict[str, Any] = {"role": role, "content": content}
    if isinstance(event.get("name"), str):
        payload["name"] = event["name"]
    calls = _tool_calls(event)
    thoughts = _thoughts(event)
    if not content and (calls or thoughts) and role != "assistant":
        # A user who calls tools (tau2) has no text: keep the turn, note why.
        notes = {"empty_content_with_children": True}
        payload_for_check = {**payload, "role": "assistant"}
        parent = t.add(i, "MESSAGE", payload_for_check, None, raw, notes)
        if parent is not None:
            t.blocks[parent].payload = payload
    else:
        parent = t.add(i, "MESSAGE", payload, None, raw)
    if parent is None:
        return
    if calls:
        t.turn_calls = []
    for text in thoughts:
        t.add(i, "THINK", {"text": text}, parent, None)
    for j, (call_id, name, arguments, given) in enumerate(calls):
        notes: dict[str, Any] = {"call_index": j}
        if call_id is None or call_id == "":
            call_id = t.new_call_id(i, j)
            notes["call_id_generated"] = True
        if not isinstance(call_id, str):
            call_id = str(call_id)
        written = call_id
        if call_id in t.current:
            if t.current[call_id] in t.unanswered:
                err = DuplicateCallId(
                    f"call id {call_id!r} is used by an earlier tool call of this trace "
                    "that has no output yet",
                    {"field": f"tool_calls[{j}].id", "rule": "duplicate_call_id",
                     "call_id": call_id},
                )  # fmt: skip
                t.problems.append(problem_from_error(t.where(i), err))
                continue
            n = t.next_suffix.get(written, 2)
            while f"{written}#{n}" in t.calls:  # a file may also write "x#3" itself
                n += 1
            t.next_suffix[written] = n + 1
            call_id = f"{written}#{n}"
            notes["call_id_reused"] = written
        if not given or arguments is None:
            arguments = {}
            notes["arguments_missing"] = True
        payload = {"call_id": call_id, "name": name, "arguments": arguments}
        index = t.add(i, "TOOL_CALL", payload, parent, None, notes, f"tool_calls[{j}].")
        if index is not None:
            t.calls[call_id] = index
            t.current[written] = call_id
            t.unanswered[call_id] = None
            t.turn_calls.append(call_id)


def events_to_blocks(
    events: list[Any],
    *,
    location: dict[str, Any],
    limits: Limits,
    images: bool = True,
    depth: int | None = None,
) -> ConvertedTrace:
    """`images`: False when the caller knows that no event holds an inline image; `depth`:
    how deeply the document the events come from nests, if known (TraceDraft)."""
    # A payload holds a part of an event in one object: it nests less deeply than the
    # document that holds the event in an array (tool arguments given as a string are
    # parsed with their own limit).
    t = _Trace(location, limits, depth_checked=depth is not None and depth <= MAX_DEPTH)
    if not events:
        t.problems.append(problem(location, "a trace needs at least one event", rule="non_empty"))
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            t.problems.append(problem(t.where(i), "an event must be a JSON object", rule="type"))
            continue
        role = event.get("role")
        if not isinstance(role, str) or not role.strip():
            t.problems.append(
                problem(
                    t.where(i),
                    f"role must be a non-empty string, not {role!r}",
                    rule="required",
                    field_name="role",
                )
            )
            continue
        raw = extract_images(event, t.images) if images else event
        content = raw.get("content")
        if role in TOOL_ROLES or ("tool_call_id" in event and not event.get("tool_calls")):
            _tool_output(t, event, i, raw, content)
        else:
            _message(t, event, i, raw, content)
    return ConvertedTrace(t.blocks, t.images, t.problems)


__all__ = ["events_to_blocks", "Context"]
