"""OpenHands trajectories: the event stream as a JSON array (the UI's "export
trajectory", the replay files of its tests): `{id, timestamp, source, message, action |
observation, args, content, cause, tool_call_metadata}`. One trace per file: a `message`
action is a MESSAGE (the user's or the agent's); any other action (run, read, edit,
browse, finish...) is the agent's turn (its `thought`) with one tool call (the model's
own function name and arguments where `tool_call_metadata` has them, else the action and
its args); an observation is the result of the call it answers (`tool_call_id`, else its
`cause`), an `error` observation a tool error; an observation that answers no call is a
message of its source. Each event is kept whole under `openhands`.
"""

from collections.abc import Iterator
from typing import Any

from traces.ingest.formats.common import WholeJsonFile, as_object, first_to_last_seconds, total
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft, Usage


def _call(event: dict[str, Any]) -> dict[str, Any]:
    meta = as_object(event.get("tool_call_metadata"))
    call_id = meta.get("tool_call_id") or f"oh_{event.get('id')}"
    name = meta.get("function_name") or event.get("action")
    args = {k: v for k, v in as_object(event.get("args")).items() if k != "thought"}
    for choice in as_object(meta.get("model_response")).get("choices") or []:
        for written in as_object(as_object(choice).get("message")).get("tool_calls") or []:
            if as_object(written).get("id") == call_id:
                function = as_object(written.get("function"))
                name = function.get("name") or name
                args = function.get("arguments", args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def to_events(stream: list[Any]) -> list[Any]:
    events: list[Any] = []
    calls: dict[Any, str] = {}  # the action's id -> its call id
    for item in stream:
        if not isinstance(item, dict):
            events.append(item)
            continue
        source = item.get("source") if isinstance(item.get("source"), str) else "agent"
        args = as_object(item.get("args"))
        action, observed = item.get("action"), item.get("observation")
        if action in ("message", "system"):
            role = "user" if source == "user" else "system" if action == "system" else "assistant"
            content = args.get("content", item.get("message"))
            events.append({"role": role, "content": content, "openhands": item})
        elif isinstance(action, str):
            call = _call(item)
            calls[item.get("id")] = call["id"]
            thought = args.get("thought") or None
            events.append(
                {"role": "assistant", "content": thought, "tool_calls": [call], "openhands": item}
            )
        elif isinstance(observed, str):
            call_id = as_object(item.get("tool_call_metadata")).get("tool_call_id")
            if call_id not in calls.values():
                call_id = calls.get(item.get("cause"))
            content = item.get("content", item.get("message"))
            if call_id is None:
                events.append({"role": source, "content": content, "openhands": item})
                continue
            calls = {k: v for k, v in calls.items() if v != call_id}
            event = {"role": "tool", "tool_call_id": call_id, "content": content, "openhands": item}
            if observed == "error":
                event["error"] = True
            events.append(event)
        else:
            events.append({"role": source, "content": item.get("message"), "openhands": item})
    return events


def usage(stream: list[Any]) -> Usage:
    """The run's figures. The last `llm_metrics` an event carries (OpenHands writes them
    accumulated: `accumulated_cost`, `accumulated_token_usage`) where there is one; else
    the tokens of each model response the actions name (`tool_call_metadata`
    .model_response.usage, once per response id: an observation repeats its action's).
    The duration runs from the first event's timestamp to the last's."""
    events = [e for e in stream if isinstance(e, dict)]
    metrics = next((e["llm_metrics"] for e in reversed(events) if "llm_metrics" in e), None)
    seconds = first_to_last_seconds(events)
    if isinstance(metrics, dict):
        tokens = as_object(metrics.get("accumulated_token_usage"))
        return Usage.of(
            input_tokens=tokens.get("prompt_tokens"),
            output_tokens=tokens.get("completion_tokens"),
            cost_usd=metrics.get("accumulated_cost"),
            duration_seconds=seconds,
        )
    responses: dict[Any, dict[str, Any]] = {}
    for event in events:
        response = as_object(as_object(event.get("tool_call_metadata")).get("model_response"))
        if response.get("usage") is not None:
            responses.setdefault(response.get("id", id(response)), as_object(response["usage"]))
    return Usage.of(
        input_tokens=total(u.get("prompt_tokens") for u in responses.values()),
        output_tokens=total(u.get("completion_tokens") for u in responses.values()),
        duration_seconds=seconds,
    )


class OpenHands(WholeJsonFile):
    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.item_keys
        return (
            sniff.first_char == "[" and "source" in keys and bool({"action", "observation"} & keys)
        )

    def read_value(self, data: Any) -> Iterator[Item]:
        where = {"trace": 0}
        if not isinstance(data, list):
            yield FormatProblem("an OpenHands trajectory is a JSON array of events", where)
            return
        yield DatasetMetadata({"agent": "OpenHands"})
        first = next((e for e in data if isinstance(e, dict) and e.get("source") == "user"), {})
        name = " ".join(str(first.get("message") or "").split())
        yield TraceDraft(
            location=where, events=to_events(data), metadata={}, name=name, usage=usage(data)
        )


FORMAT = OpenHands(
    name="openhands",
    recognised_by=(
        "a JSON array of events with `source` and `action` or `observation` (OpenHands trajectory)"
    ),
)
