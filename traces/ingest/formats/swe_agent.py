"""SWE-agent trajectories (`.traj`): `{environment, trajectory, history, info, replay_config}`.

One trace per file. `history` is the chat as the model saw it (SWE-agent >= 1.0:
tool calls, outputs linked by a list `tool_call_ids`; older: observations as `user`
messages, the command in `action`, split here into a call and its result). A file may
hold `history` only (the repository's demonstrations). With no usable history, the
chat is taken from the last trajectory step's `messages`, else built from the steps.
No reward.
"""

from collections.abc import Iterator
from typing import Any

import orjson

from traces.ingest.formats.common import BIG_STRING, WholeJsonFile, as_object, compact
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft, Usage


def _events_from_trajectory(steps: list[Any]) -> list[Any] | None:
    if steps and isinstance(steps[-1], dict) and isinstance(steps[-1].get("messages"), list):
        return steps[-1]["messages"] or None
    events: list[Any] = []
    for step in steps:
        if not isinstance(step, dict):
            return None
        said = step.get("response") or step.get("thought") or ""
        events.append({"role": "assistant", "content": said, "action": step.get("action")})
        events.append({"role": "user", "content": step.get("observation")})
    return events or None


def split_actions(events: list[Any]) -> list[Any]:
    """Old SWE-agent (before function calling) writes the command in the assistant turn's
    `action` and its output as the next `user` message: each becomes a tool call (named by
    the command's first word, `{"command": action}`) and its result, so the run reads in
    the ACT and OBSERVE lanes. The event keeps every key; the role it had is noted."""
    out: list[Any] = []
    pending: str | None = None
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            out.append(event)
            pending = None
            continue
        action = event.get("action")
        if (
            event.get("role") == "assistant"
            and not event.get("tool_calls")
            and isinstance(action, str)
            and action.split()
        ):
            pending = f"swe_action_{n}"
            call = {
                "id": pending,
                "type": "function",
                "function": {"name": action.split()[0], "arguments": {"command": action}},
            }
            out.append({**event, "tool_calls": [call]})
            continue
        if pending is not None and event.get("role") == "user":
            out.append({**event, "role": "tool", "tool_call_id": pending, "written_role": "user"})
        else:
            out.append(event)
        pending = None
    return out


def _replay_config(data: dict[str, Any]) -> dict[str, Any]:
    config = data.get("replay_config")
    if isinstance(config, str):  # some versions store it as a JSON string
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            return {}
    return as_object(config)


def _metadata(data: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    info = as_object(data.get("info"))
    info = {k: v for k, v in info.items() if not k.startswith("edited_files")}
    metadata: dict[str, Any] = compact(info)
    if isinstance(info.get("submission"), str):
        metadata["submission"] = info["submission"][:BIG_STRING]
    if isinstance(data.get("environment"), str):
        metadata["environment"] = data["environment"]
    if isinstance(data.get("trajectory"), list):
        metadata["steps"] = len(data["trajectory"])
    problem = {k: v for k, v in as_object(config.get("problem_statement")).items() if k != "text"}
    if problem:
        metadata["problem_statement"] = compact(problem)
    if problem.get("id") is not None:
        metadata["task_id"] = problem["id"]
    model = as_object(as_object(config.get("agent")).get("model")).get("name")
    if model:
        metadata["model"] = model
    return metadata


class SweAgent(WholeJsonFile):
    name = "swe-agent"
    recognised_by = (
        "an object with `history` and/or `trajectory` beside `info`, `environment` or "
        "`replay_config` (SWE-agent .traj, old and function-calling)"
    )

    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        if sniff.first_char != "{" or not ({"trajectory", "history"} & keys):
            return False
        # `history` alone: SWE-agent's own demonstrations; Who&When logs ask a `question`.
        return not ({"question", "mistake_agent", "messages"} & keys)

    def read_value(self, data: Any) -> Iterator[Item]:
        where = {"trace": 0}
        if not isinstance(data, dict):
            yield FormatProblem("a .traj file must hold a JSON object", where)
            return
        history, steps = data.get("history"), data.get("trajectory")
        events = history if isinstance(history, list) and history else None
        if events is None and isinstance(steps, list):
            events = _events_from_trajectory(steps)
        if events is None:
            yield FormatProblem(
                "neither `history` nor `trajectory` holds the run's messages",
                {**where, "field": "history"},
            )
            return
        events = split_actions(events)
        config = _replay_config(data)
        metadata = _metadata(data, config)
        run = {"agent": "SWE-agent", "model": metadata.get("model")}
        yield DatasetMetadata({k: v for k, v in run.items() if v})
        name = str(metadata.get("task_id") or f"SWE-agent run ({metadata.get('exit_status')})")
        # `model_stats`: this instance's cost and tokens (`total_cost` is the whole batch's).
        stats = as_object(as_object(data.get("info")).get("model_stats"))
        usage = Usage.of(
            input_tokens=stats.get("tokens_sent"),
            output_tokens=stats.get("tokens_received"),
            cost_usd=stats.get("instance_cost"),
        )
        yield TraceDraft(location=where, events=events, metadata=metadata, name=name, usage=usage)


FORMAT = SweAgent()
