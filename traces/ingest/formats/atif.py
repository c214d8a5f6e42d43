"""Harbor's Agent Trajectory Interchange Format (ATIF, `schema_version: "ATIF-v1.x"`): one
run a file, `{schema_version, session_id, agent, steps, notes?, final_metrics?, extra?}`.

Each step is a chat event: a `system` or `user` step its message; an `agent` step an
assistant turn (its `message`, `reasoning_content` as a THINK, `tool_calls` with
`tool_call_id` / `function_name` / `arguments`), then its `observation.results`, each
the output of the call its `source_call_id` names (a result without one answers the
turn's calls in order when it made calls, else is an `observation` message). A step's
message may be a list of content parts (ATIF 1.6). Every key but `steps` goes to the
metadata; a step's own fields (step_id, timestamp, model_name, metrics, extra) stay in
its event (the block's raw).
"""

from collections.abc import Iterator
from typing import Any

from traces.ingest.formats.common import WholeJsonFile, as_object, first_to_last_seconds, kept
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft, Usage

ROLES = {"system": "system", "user": "user", "agent": "assistant"}
STEP_FIELDS = ("step_id", "timestamp", "model_name", "reasoning_effort", "metrics", "extra")


def _content(message: Any) -> Any:
    """A message as chat content: a string as it is; ATIF's parts as chat parts."""
    if not isinstance(message, list):
        return message
    parts = []
    for part in message:
        if isinstance(part, dict) and part.get("type") == "image":
            source = as_object(part.get("source"))
            url = source.get("path") or source.get("url")
            if source.get("data") and source.get("media_type"):
                url = f"data:{source['media_type']};base64,{source['data']}"
            parts.append({"type": "image_url", "image_url": {"url": url}} if url else part)
        else:
            parts.append(part)
    return parts


def step_events(step: dict[str, Any]) -> list[dict[str, Any]]:
    source = step.get("source")
    event: dict[str, Any] = {
        "role": ROLES.get(source, source),
        "content": _content(step.get("message")),
    }  # noqa: E501
    if step.get("reasoning_content"):
        event["reasoning_content"] = step["reasoning_content"]
    calls = [c for c in step.get("tool_calls") or () if isinstance(c, dict)]
    if calls:
        event["tool_calls"] = [
            {
                "id": c.get("tool_call_id"),
                "type": "function",
                "function": {"name": c.get("function_name"), "arguments": c.get("arguments", {})},
            }
            for c in calls
        ]
    event.update({k: step[k] for k in STEP_FIELDS if k in step})
    events = [event]
    for result in as_object(step.get("observation")).get("results") or ():
        if not isinstance(result, dict):
            continue
        output = _content(result.get("content"))
        if output is None and result.get("subagent_trajectory_ref") is not None:
            output = result["subagent_trajectory_ref"]  # the delegated runs, as written
        if result.get("source_call_id") is not None:
            events.append(
                {"role": "tool", "tool_call_id": result["source_call_id"], "content": output}
            )  # noqa: E501
        elif calls:
            events.append({"role": "tool", "content": output})
        else:
            events.append({"role": "observation", "content": output})
    return events


class Atif(WholeJsonFile):
    def detect(self, sniff: Sniff) -> bool:
        return (
            sniff.first_char == "{"
            and not sniff.multiple
            and {"schema_version", "steps"} <= sniff.top_keys
        )

    def read_value(self, data: Any) -> Iterator[Item]:
        where = {"trace": 0}
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            yield FormatProblem(
                "an ATIF trajectory needs a `steps` array", {**where, "field": "steps"}
            )  # noqa: E501
            return
        agent = as_object(data.get("agent"))
        run = {
            "agent": agent.get("name"),
            "model": agent.get("model_name"),
            "agent_version": agent.get("version"),
        }  # noqa: E501
        yield DatasetMetadata({k: v for k, v in run.items() if isinstance(v, str) and v})
        steps = [s for s in data["steps"] if isinstance(s, dict)]
        events = [event for step in steps for event in step_events(step)]
        totals = as_object(data.get("final_metrics"))
        usage = Usage.of(
            input_tokens=totals.get("total_prompt_tokens"),
            output_tokens=totals.get("total_completion_tokens"),
            cost_usd=totals.get("total_cost_usd"),
            duration_seconds=first_to_last_seconds(steps),
        )
        metadata = kept({k: v for k, v in data.items() if k != "steps"})
        name = data.get("session_id") if isinstance(data.get("session_id"), str) else ""
        yield TraceDraft(location=where, events=events, metadata=metadata, name=name, usage=usage)  # noqa: E501


FORMAT = Atif(
    name="atif",
    recognised_by='an object with `schema_version` ("ATIF-v1.x") and `steps` (Harbor\'s ATIF)',
)
