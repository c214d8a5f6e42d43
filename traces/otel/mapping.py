"""All the spans of one OTel trace -> the blocks of one trace (DESIGN.md "Ways in" 5).

Pure: spans in (traces.otel.decode's dicts), drafts out, nothing of the database. The
service derives a trace's drafts again from all its spans each time a batch brings new
ones (a trace is small), writes the drafts whose key it has not stored yet, and places
every block in the order derived here. So spans may come in any order and in any number
of batches, and the same blocks come out.

Three ways of writing a model call are read into one form, the current GenAI
conventions' messages (`{"role", "parts": [{"type": "text" | "reasoning" | "tool_call" |
"tool_call_response", ...}]}`):

- `gen_ai.input.messages` / `gen_ai.output.messages` (and `gen_ai.system_instructions`);
- the older span events `gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice`;
- OpenInference's flattened `llm.input_messages.<i>.message.*` and
  `llm.output_messages.<i>.message.*`.

A tool execution (`execute_tool` with `gen_ai.tool.*`, or OpenInference's TOOL span with
`tool.name`, `input.value`, `output.value`) is the result of its call, the call being
matched by id, else by name, else made from the span.

Every chat span repeats the conversation so far in its input: a message is stored once.
Its key is a digest of its role, text and call ids, with the how-manieth occurrence of
that digest it is; a span's k-th message of one digest is the trace's k-th, so a message
really said twice is kept twice.
"""

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from traces.jsontext import parsed_or_as_is
from traces.validation import reward_of

ERROR = 2  # Status.STATUS_CODE_ERROR
MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}
TOOL_OPERATION = "execute_tool"
EVALUATION_EVENT = "gen_ai.evaluation.result"
OLD_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"


@dataclass
class Draft:
    """One block to be, before validation: `key` says which block it is however many
    times it is derived; `parent_key` the key of its parent."""

    key: str
    sub_type: str
    payload: dict[str, Any]
    time_ns: int
    span_id: str
    parent_key: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: Any = None
    is_error: bool = False
    seq: int = 0  # the order it was derived in, after time


@dataclass
class Derived:
    drafts: list[Draft]
    name: str
    metadata: dict[str, Any]
    input_tokens: int | None
    output_tokens: int | None
    duration_seconds: float | None


# --- reading values -----------------------------------------------------------------


# A string that is not JSON stays text; what is kept is depth-checked where it is written.
_json = parsed_or_as_is


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _whole(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _list(value: Any) -> list[Any]:
    value = _json(value)
    return value if isinstance(value, list) else []


# --- the three ways of writing messages, read as GenAI parts ------------------------


def _parts_of_content(content: Any) -> list[dict[str, Any]]:
    """A chat content (a string, or a list of OpenAI/Anthropic-style parts) as parts."""
    if content is None or content == "":
        return []
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") in ("text", "input_text"):
                parts.append({"type": "text", "content": _text(item.get("text"))})
            elif isinstance(item, dict) and "type" in item and "content" in item:
                parts.append(item)
            else:
                parts.append({"type": "text", "content": _text(item)})
        return parts
    return [{"type": "text", "content": _text(content)}]


def _calls_as_parts(tool_calls: Any) -> list[dict[str, Any]]:
    parts = []
    for call in _list(tool_calls):
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return parts


def _chat_message(role: Any, message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style chat message (the older events' bodies) as GenAI parts."""
    if role == "tool":
        response = message.get("content")
        call_id = message.get("id", message.get("tool_call_id"))
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
        }  # noqa: E501
    parts = _parts_of_content(message.get("content"))
    parts += _calls_as_parts(message.get("tool_calls"))
    return {"role": role or "assistant", "parts": parts}


def genai_messages(attributes: dict[str, Any], key: str) -> list[dict[str, Any]]:
    messages = [m for m in _list(attributes.get(key)) if isinstance(m, dict)]
    out = []
    for message in messages:
        parts = message.get("parts")
        if isinstance(parts, list):
            out.append({**message, "parts": [p for p in parts if isinstance(p, dict)]})
        else:  # an OpenAI-style message where the convention's is expected
            out.append(_chat_message(message.get("role"), message))
    return out


def _system_instructions(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    parts = [p for p in _list(attributes.get("gen_ai.system_instructions")) if isinstance(p, dict)]
    return [{"role": "system", "parts": parts}] if parts else []


def _event_body(attributes: dict[str, Any]) -> dict[str, Any]:
    """An older GenAI event's body: its attributes, with a JSON body (as some SDKs write
    it under `gen_ai.event.content` or `body`) spread over them."""
    body = dict(attributes)
    for key in ("gen_ai.event.content", "body"):
        value = _json(attributes.get(key))
        if isinstance(value, dict):
            body.update(value)
    return body


def event_messages(events: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """The older form: one span event per input message and one `gen_ai.choice` per
    output."""
    inputs, outputs = [], []
    for event in events:
        body = _event_body(event.get("attributes") or {})
        if event.get("name") in OLD_EVENTS:
            inputs.append(_chat_message(OLD_EVENTS[event["name"]], body))
        elif event.get("name") == CHOICE_EVENT:
            message = _json(body.get("message"))
            message = message if isinstance(message, dict) else body
            outputs.append(_chat_message(message.get("role") or "assistant", message))
    return inputs, outputs


_OI_KEY = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_INDEXED = re.compile(r"^(contents|tool_calls)\.(\d+)\.(.+)$")


def _unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """`{"tool_calls.0.tool_call.id": x}` -> `{"tool_calls": {0: {"tool_call.id": x}}}`."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        match = _OI_INDEXED.match(key)
        if match:
            out.setdefault(match[1], {}).setdefault(int(match[2]), {})[match[3]] = value
        else:
            out[key] = value
    return out


def _oi_message(flat: dict[str, Any]) -> dict[str, Any]:
    message = _unflatten(flat)
    role = message.get("role") or "assistant"
    if role == "tool":
        response = message.get("content")
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": response,
                }
            ],
        }  # noqa: E501
    parts = []
    if message.get("content") is not None:
        parts.append({"type": "text", "content": _text(message["content"])})
    for _, content in sorted(message.get("contents", {}).items()):
        if content.get("message_content.text") is not None:
            parts.append({"type": "text", "content": _text(content["message_content.text"])})
    for _, call in sorted(message.get("tool_calls", {}).items()):
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("tool_call.id"),
                "name": call.get("tool_call.function.name"),
                "arguments": call.get("tool_call.function.arguments"),
            }
        )
    return {"role": role, "parts": parts}


def openinference_messages(attributes: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    found: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
    for key, value in attributes.items():
        match = _OI_KEY.match(key)
        if match:
            found[match[1]].setdefault(int(match[2]), {})[match[3]] = value
    return tuple(  # type: ignore[return-value]
        [_oi_message(found[side][n]) for n in sorted(found[side])] for side in ("input", "output")
    )


def span_messages(span: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """A span's input and output messages, in whichever form it wrote them."""
    attributes = span.get("attributes") or {}
    inputs = genai_messages(attributes, "gen_ai.input.messages")
    outputs = genai_messages(attributes, "gen_ai.output.messages")
    if inputs or outputs:
        return _system_instructions(attributes) + inputs, outputs
    inputs, outputs = event_messages(span.get("events") or [])
    if inputs or outputs:
        return inputs, outputs
    return openinference_messages(attributes)


# --- what a span says about itself --------------------------------------------------


def operation(span: dict[str, Any]) -> str:
    attributes = span.get("attributes") or {}
    op = attributes.get("gen_ai.operation.name")
    if isinstance(op, str):
        return op
    kind = attributes.get("openinference.span.kind")
    return {"LLM": "chat", "TOOL": TOOL_OPERATION, "AGENT": "invoke_agent"}.get(
        str(kind).upper(), ""
    )


def usage_of(attributes: dict[str, Any]) -> dict[str, int]:
    pairs = {
        "input_tokens": ("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        "output_tokens": ("gen_ai.usage.output_tokens", "llm.token_count.completion"),
    }
    usage = {}
    for name, keys in pairs.items():
        value = next((_whole(attributes[k]) for k in keys if k in attributes), None)
        if value is not None and value >= 0:
            usage[name] = value
    return usage


def model_of(attributes: dict[str, Any]) -> str | None:
    for key in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name"):
        if isinstance(attributes.get(key), str):
            return attributes[key]
    return None


def error_of(span: dict[str, Any]) -> dict[str, Any] | None:
    status = span.get("status") or {}
    if status.get("code") != ERROR:
        return None
    error = {"message": status.get("message") or ""}
    kind = (span.get("attributes") or {}).get("error.type")
    if kind is not None:
        error["type"] = kind
    return error


def span_note(span: dict[str, Any]) -> dict[str, Any]:
    """What a block keeps of the span it came from (its metadata): which span, the
    model, the tokens, how long it took, its error."""
    attributes = span.get("attributes") or {}
    note: dict[str, Any] = {
        "span_id": span["span_id"],
        "span_name": span.get("name", ""),
        "operation": operation(span),
    }
    model = model_of(attributes)
    if model:
        note["model"] = model
    usage = usage_of(attributes)
    if usage:
        note["usage"] = usage
    start, end = span.get("start_ns") or 0, span.get("end_ns") or 0
    if end >= start > 0:
        note["latency_ms"] = round((end - start) / 1e6, 3)
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if reasons:
        note["finish_reasons"] = reasons
    error = error_of(span)
    if error:
        note["error"] = error
    return note


# --- the derivation -----------------------------------------------------------------


def _digest(*values: Any) -> str:
    try:
        text = orjson.dumps(values, option=orjson.OPT_SORT_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError):  # nested past orjson's depth, huge numbers
        text = repr(values).encode()
    return hashlib.sha256(text).hexdigest()[:24]


def message_digest(message: dict[str, Any]) -> str:
    """What makes a message the same message in every span's history: its role, its
    text and the ids of its calls and responses (not its reasoning, which frameworks
    often leave out of the history they send back)."""
    parts = message.get("parts") or []
    texts = [p.get("content") for p in parts if p.get("type") == "text"]
    ids = [
        (p.get("type"), p.get("id"))
        for p in parts
        if p.get("type") in ("tool_call", "tool_call_response")
    ]  # noqa: E501
    return _digest(message.get("role"), texts, ids)


class _Trace:
    """The drafts derived so far, and what the next span needs to know of them."""

    def __init__(self) -> None:
        self.drafts: list[Draft] = []
        self.keys: set[str] = set()
        self.seen: Counter[str] = Counter()  # message digest -> messages stored with it
        self.calls: dict[str, Draft] = {}  # call id -> its TOOL_CALL draft
        self.answered: set[str] = set()
        self.tool_span_calls: set[str] = set()  # call ids the tool spans name
        self.from_history: set[str] = set()  # calls answered in a model span's history
        self.claimed: set[str] = set()  # of those, the ones a tool span without id matched
        self.pending: list[dict[str, Any]] = []

    def add(self, draft: Draft) -> None:
        otel = draft.metadata.setdefault("otel", {})
        otel.setdefault("span_id", draft.span_id)
        otel["key"] = draft.key  # how the service knows the block is stored
        draft.seq = len(self.drafts)
        self.drafts.append(draft)
        self.keys.add(draft.key)
        if draft.sub_type == "TOOL_CALL":
            self.calls[draft.payload["call_id"]] = draft
        elif draft.sub_type == "TOOL_RESULT":
            self.answered.add(draft.payload["call_id"])

    def add_message(
        self, message: dict[str, Any], key: str, time_ns: int, span: dict, note: dict | None
    ) -> None:  # noqa: E501
        parts = message.get("parts") or []
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        for part in responses:
            call_id = _text(part.get("id"))
            if call_id in self.tool_span_calls:
                continue  # its tool span gives it, with the span's status and timing
            if call_id in self.calls and call_id not in self.answered:
                self.add(self._result(call_id, part.get("response"), time_ns, span["span_id"]))
                self.from_history.add(call_id)
        if responses and len(responses) == len(parts):
            return  # a tool message: its results are all it holds
        texts = [p.get("content") for p in parts if p.get("type") == "text"]
        content = "\n".join(_text(t) or "" for t in texts) if texts else None
        role = message.get("role") or "assistant"
        if content is None and role != "assistant":
            content = ""
        metadata = {"otel": {"key": key, **(note or {"span_id": span["span_id"]})}}
        kept = {k: v for k, v in message.items() if k not in ("role", "parts")}
        if kept:
            metadata["otel"]["message"] = kept
        self.add(
            Draft(key, "MESSAGE", {"role": role, "content": content}, time_ns, span["span_id"],
                  metadata=metadata, raw=message)
        )  # fmt: skip
        for n, part in enumerate(parts):
            if part.get("type") == "reasoning" and part.get("content"):
                self.add(
                    Draft(f"{key}:think:{n}", "THINK", {"text": _text(part["content"])},
                          time_ns, span["span_id"], parent_key=key)
                )  # fmt: skip
            elif part.get("type") == "tool_call":
                call_id = _text(part.get("id")) or f"{key}-{n}"
                if call_id in self.calls:
                    continue
                arguments = _json(part.get("arguments"))
                payload = {
                    "call_id": call_id,
                    "name": _text(part.get("name")) or "",
                    "arguments": {} if arguments is None else part.get("arguments"),
                }
                self.add(
                    Draft(f"call:{call_id}", "TOOL_CALL", payload, time_ns, span["span_id"],
                          parent_key=key)
                )  # fmt: skip

    def _result(self, call_id: str, output: Any, time_ns: int, span_id: str, **kw: Any) -> Draft:
        payload = {"call_id": call_id, "output": "" if output is None else output}
        return Draft(f"result:{call_id}", "TOOL_RESULT", payload, time_ns, span_id,
                     parent_key=f"call:{call_id}", **kw)  # fmt: skip

    def read_messages(self, span: dict[str, Any]) -> None:
        inputs, outputs = span_messages(span)
        if not inputs and not outputs:
            return
        start = span.get("start_ns") or 0
        end = span.get("end_ns") or start
        here: Counter[str] = Counter()
        note = span_note(span)
        for position, (message, is_output) in enumerate(
            [(m, False) for m in inputs] + [(m, True) for m in outputs]
        ):
            digest = message_digest(message)
            here[digest] += 1
            if here[digest] <= self.seen[digest]:
                continue  # said before: this span repeats the history
            self.seen[digest] += 1
            key = f"m:{digest}:{self.seen[digest]}"
            time_ns = (end if is_output else start) + position
            self.add_message(message, key, time_ns, span, note if is_output else None)

    def read_tool(self, span: dict[str, Any], final: bool = False) -> None:
        """The tool span's result under its call: the call of its id, else the earliest
        unanswered one of its name. A call no model span has made yet (a later batch may
        bring it) is waited for (`pending`) until every span has been read; then (`final`)
        it is made from the span."""
        attributes = span.get("attributes") or {}
        name = _text(attributes.get("gen_ai.tool.name", attributes.get("tool.name")))
        call_id = _text(attributes.get("gen_ai.tool.call.id", attributes.get("tool_call.id")))
        if call_id is None:
            call_id = self._unanswered_call(name)
            if call_id is None and final and self._answered_by_history(name):
                return  # its output came in a model span's history already
        if call_id is not None and call_id in self.answered:
            return
        if call_id is None or call_id not in self.calls:
            if not final:
                self.pending.append(span)
                return
            call_id = call_id or f"span-{span['span_id']}"
            arguments = attributes.get("gen_ai.tool.call.arguments", attributes.get("input.value"))
            self._call_from_span(
                span, call_id, name or "tool", arguments, span.get("start_ns") or 0
            )
        output = attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))
        end = span.get("end_ns") or span.get("start_ns") or 0
        note = span_note(span)
        if output is None and note.get("error"):
            # a failed tool that says nothing: its status message is what there is to show
            output = f"error: {note['error']['message'] or 'the tool span ended in error'}"
        self.add(
            self._result(call_id, output, end, span["span_id"], is_error=bool(note.get("error")),
                         metadata={"otel": note})
        )  # fmt: skip

    def _answered_by_history(self, name: str | None) -> bool:
        for call_id in sorted(self.from_history - self.claimed):
            if self.calls[call_id].payload["name"] == name:
                self.claimed.add(call_id)
                return True
        return False

    def _unanswered_call(self, name: str | None) -> str | None:
        for call_id, draft in self.calls.items():
            if call_id not in self.answered and draft.payload["name"] == name:
                return call_id
        return None

    def _call_from_span(self, span: dict, call_id: str, name: str, arguments: Any, at: int) -> None:  # noqa: E501
        """A tool span whose call no model span made (or not yet sent): the call is made
        from the span, under the latest assistant message before it, or one of its own."""
        parent = None
        for draft in reversed(self.drafts):
            if (
                draft.sub_type == "MESSAGE"
                and draft.payload.get("role") == "assistant"
                and draft.time_ns <= at
            ):  # noqa: E501
                parent = draft.key
                break
        if parent is None:
            parent = f"span:{span['span_id']}"
            payload = {"role": "assistant", "content": None}
            note = {"otel": {"key": parent, "span_id": span["span_id"]}}
            self.add(Draft(parent, "MESSAGE", payload, at, span["span_id"], metadata=note))
        payload = {
            "call_id": call_id,
            "name": name,
            "arguments": {} if arguments is None else arguments,
        }
        self.add(
            Draft(f"call:{call_id}", "TOOL_CALL", payload, at, span["span_id"], parent_key=parent)
        )


def evaluations_of(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for span in spans:
        for event in span.get("events") or []:
            if event.get("name") != EVALUATION_EVENT:
                continue
            attributes = event.get("attributes") or {}
            found.append(
                {
                    "name": attributes.get("gen_ai.evaluation.name"),
                    "score": attributes.get("gen_ai.evaluation.score.value"),
                    "label": attributes.get("gen_ai.evaluation.score.label"),
                    "explanation": attributes.get("gen_ai.evaluation.explanation"),
                    "span_id": span["span_id"],
                    "time_ns": event.get("time_ns") or span.get("start_ns") or 0,
                }
            )
    found.sort(key=lambda e: e["time_ns"])
    return [{k: v for k, v in e.items() if v is not None} for e in found]


def _root(spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    ids = {s["span_id"] for s in spans}
    roots = [s for s in spans if s.get("parent_span_id") not in ids]
    return roots[0] if roots else None


def _io_as_messages(span: dict[str, Any]) -> dict[str, Any]:
    """A run no model span describes (an OpenInference AGENT or CHAIN span alone): its
    `input.value` as the user's message and its `output.value` as the answer."""
    attributes = span.get("attributes") or {}
    io: dict[str, Any] = {}
    for key, side, role in (
        ("input.value", "gen_ai.input.messages", "user"),
        ("output.value", "gen_ai.output.messages", "assistant"),
    ):
        value = attributes.get(key)
        text = [{"role": role, "parts": [{"type": "text", "content": value}]}]
        io[side] = text if isinstance(value, str) and value else []
    return {**span, "attributes": io, "events": []}


def _is_tool(span: dict[str, Any]) -> bool:
    op = operation(span)
    attributes = span.get("attributes") or {}
    return op == TOOL_OPERATION or ("gen_ai.tool.name" in attributes and op not in MODEL_OPERATIONS)


def derive(spans: list[dict[str, Any]], resource: dict[str, Any] | None = None) -> Derived:
    """The drafts of the trace these spans make, in its order, and what the Trace row
    keeps of them. `spans` in any order."""
    spans = sorted(spans, key=lambda s: (s.get("start_ns") or 0, s["span_id"]))
    trace = _Trace()
    input_tokens = output_tokens = None
    models = []
    tools = [s for s in spans if _is_tool(s)]
    for span in tools:
        attributes = span.get("attributes") or {}
        call_id = _text(attributes.get("gen_ai.tool.call.id", attributes.get("tool_call.id")))
        if call_id is not None:
            trace.tool_span_calls.add(call_id)
    for span in spans:
        op = operation(span)
        if _is_tool(span):
            trace.read_tool(span)
        else:
            trace.read_messages(span)
        if op in MODEL_OPERATIONS:
            usage = usage_of(span.get("attributes") or {})
            if "input_tokens" in usage:
                input_tokens = (input_tokens or 0) + usage["input_tokens"]
            if "output_tokens" in usage:
                output_tokens = (output_tokens or 0) + usage["output_tokens"]
            model = model_of(span.get("attributes") or {})
            if model and model not in models:
                models.append(model)
    for span in trace.pending:
        trace.read_tool(span, final=True)
    root = _root(spans)
    if root is not None and not any(d.sub_type == "MESSAGE" for d in trace.drafts):
        trace.read_messages(_io_as_messages(root))
    drafts = sorted(trace.drafts, key=lambda d: (d.time_ns, d.seq))
    starts = [s["start_ns"] for s in spans if s.get("start_ns")]
    ends = [s["end_ns"] for s in spans if s.get("end_ns")]
    duration = (
        (max(ends) - min(starts)) / 1e9 if starts and ends and max(ends) >= min(starts) else None
    )  # noqa: E501
    metadata = trace_metadata(spans, root, models, resource or {})
    name = (root or {}).get("name", "") if root else ""
    return Derived(drafts, name, metadata, input_tokens, output_tokens, duration)


def trace_metadata(
    spans: list[dict], root: dict | None, models: list[str], resource: dict
) -> dict[str, Any]:  # noqa: E501
    """What the trace's metadata says of the run: its OTel trace id, conversation, agent,
    service, models, errors and evaluations, with the last evaluation's score as its
    reward."""
    metadata: dict[str, Any] = {"otel.trace_id": spans[0]["trace_id"] if spans else None}
    for span in spans:
        attributes = span.get("attributes") or {}
        for key in (
            "gen_ai.conversation.id",
            "gen_ai.agent.name",
            "gen_ai.provider.name",
            "session.id",
        ):  # noqa: E501
            if key in attributes and key not in metadata:
                metadata[key] = attributes[key]
    if "service.name" in resource:
        metadata["service.name"] = resource["service.name"]
    if models:
        metadata["model"] = models[0] if len(models) == 1 else models
    errors = [
        {"span_id": s["span_id"], "span_name": s.get("name", ""), **(error_of(s) or {})}
        for s in spans
        if error_of(s)
    ]
    if errors:
        metadata["errors"] = errors
    evaluations = evaluations_of(spans)
    if evaluations:
        metadata["evaluations"] = evaluations
        score = _number(evaluations[-1].get("score"))
        if score is not None and reward_of(score) is not None:
            metadata["reward"] = score
    return metadata
