"""Chat-format events (spec/000-003, and the quirks of real data) into block drafts.

One event gives a MESSAGE (with THINK and TOOL_CALL children) or, for a tool
output, one TOOL_RESULT per call it answers. The event itself, images taken out,
is kept in `raw` of the first block it gives, and `metadata.event_index` says
which event a block came from, so export gives the events back unchanged.
"""

from collections.abc import Callable, Iterable
from typing import Any

from traces import ids
from traces.checks import check_json_depth
from traces.errors import DuplicateCallId, TraceStoreError
from traces.ingest.drafts import BlockDraft, ConvertedTrace, problem, problem_from_error
from traces.ingest.images import extract_images
from traces.jsontext import MAX_DEPTH
from traces.validation import Context, Limits, ParentInfo, validate_block

TOOL_ROLES = ("tool", "function", "ipython")


Emit = Callable[[BlockDraft], None]
# An import's blocks have no trace yet to name in error details: one (frozen) Context for
# all, rather than a new one a block.
_NO_CONTEXT = Context()


class _Trace:
    """The state of one trace's conversion. Each block is given to `emit` as soon as it is
    made; only what later blocks need is kept: the calls (TOOL_RESULT's parents) and the
    current event's MESSAGE, so that a trace of many events is converted in the memory of
    one event (plus its calls)."""

    def __init__(
        self, location: dict[str, Any], limits: Limits, depth_checked: bool, emit: Emit
    ) -> None:
        self.location = location
        self.limits = limits
        self.depth_checked = depth_checked
        self.emit = emit
        self.count = 0  # blocks made
        # Block index -> (id, what validation is told of it) of the blocks a later block
        # may hang under: the current event's MESSAGE and every TOOL_CALL. The ParentInfo
        # is made once a parent, not once a child.
        self.parents: dict[int, tuple[str, ParentInfo]] = {}
        self.message: int | None = None  # the current event's MESSAGE, if any
        self.images: dict[str, Any] = {}
        self.problems: list[dict[str, Any]] = []
        self.calls: dict[str, int] = {}  # stored call_id -> draft index
        self.call_names: dict[str, Any] = {}  # stored call_id -> the function's name
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
        stored_payload: dict[str, Any] | None = None,
        is_error: bool = False,
    ) -> int | None:
        """`stored_payload`: what to store when it differs from what is validated;
        `is_error`: a TOOL_RESULT the format marks as a tool error."""
        parent_info = parent_id = None
        if parent is not None:
            parent_id, parent_info = self.parents[parent]
        try:
            valid = validate_block(
                sub_type=sub_type,
                payload=payload,
                parent=parent_info,
                limits=self.limits,
                ctx=_NO_CONTEXT,
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
        index, block_id = self.count, ids.block_id()
        self.count += 1
        if valid.sub_type in ("MESSAGE", "TOOL_CALL"):
            info = ParentInfo(id=None, sub_type=valid.sub_type, call_id=valid.call_id)
            self.parents[index] = (block_id, info)
        self.emit(
            BlockDraft(
                sub_type=valid.sub_type,
                block_type=valid.block_type,
                payload=valid.payload if stored_payload is None else stored_payload,
                raw=raw,
                metadata=metadata,
                parent=parent,
                call_id=valid.call_id,
                result_seq=valid.result_seq,
                id=block_id,
                parent_id=parent_id,
                is_error=is_error,
            )
        )
        return index

    def next_event(self) -> None:
        """A MESSAGE is a parent only within its own event."""
        if self.message is not None:
            self.parents.pop(self.message, None)
            self.message = None

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


def _as_id(call_id: Any) -> str:
    return call_id if isinstance(call_id, str) else str(call_id)


def _result_targets(t: _Trace, event: dict[str, Any], i: int) -> list[str] | None:
    """The call ids a tool output answers, or None after recording a problem."""
    # A call's id that is not a string is stored as its text (_message): an output names
    # it the same way, and is never answered by order instead.
    if event.get("tool_call_id") is not None:
        wanted, fld = [_as_id(event["tool_call_id"])], "tool_call_id"
    elif isinstance(event.get("tool_call_ids"), list) and event["tool_call_ids"]:
        wanted, fld = [_as_id(c) for c in event["tool_call_ids"]], "tool_call_ids"
    elif isinstance(event.get("id"), str) and event["id"] in t.current:
        wanted, fld = [event["id"]], "id"
    else:
        wanted, fld = [], None
    for call_id in wanted:
        if call_id not in t.current:
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
        named = [c for c in waiting if t.call_names.get(c) == name]
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
        t.add(
            i,
            "TOOL_RESULT",
            payload,
            t.calls[call_id],
            raw if n == 0 else None,
            field_prefix="content<-",
            is_error=failed,
        )


def _message(t: _Trace, event: dict[str, Any], i: int, raw: Any, content: Any) -> None:
    role = event.get("role")
    payload: dict[str, Any] = {"role": role, "content": content}
    if isinstance(event.get("name"), str):
        payload["name"] = event["name"]
    calls = _tool_calls(event)
    thoughts = _thoughts(event)
    # An adapter's stand-in for a turn its log lost (formats/inspect_ai.py): kept, said.
    made_up = event.get("synthesized")
    not_in_log = {"not_in_log": made_up} if isinstance(made_up, str) else {}
    if not content and (calls or thoughts) and role != "assistant":
        # A user who calls tools (tau2) has no text: keep the turn, note why.
        notes = {"empty_content_with_children": True}
        payload_for_check = {**payload, "role": "assistant"}
        parent = t.add(i, "MESSAGE", payload_for_check, None, raw, notes, stored_payload=payload)
    else:
        parent = t.add(i, "MESSAGE", payload, None, raw, dict(not_in_log))
    if parent is None:
        return
    t.message = parent
    if calls:
        t.turn_calls = []
    # Whose thinking: a user simulator's (tau2 keeps its reasoning too) is not the agent's.
    thinker = {"thought_of": role} if isinstance(role, str) and role != "assistant" else None
    for text in thoughts:
        t.add(i, "THINK", {"text": text}, parent, None, thinker)
    for j, (call_id, name, arguments, given) in enumerate(calls):
        notes: dict[str, Any] = {"call_index": j, **not_in_log}
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
            t.call_names[call_id] = name
            t.current[written] = call_id
            t.unanswered[call_id] = None
            t.turn_calls.append(call_id)


def events_to_blocks(
    events: Iterable[Any],
    *,
    location: dict[str, Any],
    limits: Limits,
    images: bool = True,
    depth: int | None = None,
    emit: Emit | None = None,
    check_events: bool = False,
) -> ConvertedTrace:
    """`events`: a list, or an iterator that reads them one at a time. `images`: False when
    the caller knows that no event holds an inline image; `depth`: how deeply the document
    the events come from nests, if known (TraceDraft). `emit`: given each block as soon
    as it is made (then the result's `blocks` is empty), so that no trace is held whole;
    each block's `id` and `parent_id` are set, and `parent` is its parent's index.
    `check_events`: each event (kept whole in `raw`) is refused if it nests deeper than
    MAX_DEPTH, for events the caller could not check before (an iterator)."""
    blocks: list[BlockDraft] = []
    # A payload holds a part of an event in one object: it nests less deeply than the
    # document that holds the event in an array (tool arguments given as a string are
    # parsed with their own limit).
    depth_checked = depth is not None and depth <= MAX_DEPTH
    t = _Trace(location, limits, depth_checked, blocks.append if emit is None else emit)
    i = -1
    for i, event in enumerate(events):
        t.next_event()
        if not isinstance(event, dict):
            t.problems.append(problem(t.where(i), "an event must be a JSON object", rule="type"))
            continue
        if check_events and not depth_checked:
            try:
                check_json_depth(event, "event")
            except TraceStoreError as exc:
                t.problems.append(problem_from_error(t.where(i), exc))
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
        event = raw = content = None
    if i < 0:
        t.problems.insert(
            0, problem(location, "a trace needs at least one event", rule="non_empty")
        )
    return ConvertedTrace(blocks, t.images, t.problems)


__all__ = ["events_to_blocks", "Context"]
