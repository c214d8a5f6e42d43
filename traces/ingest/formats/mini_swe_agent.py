"""mini-swe-agent trajectories (`*.traj.json`, pretty-printed):
`{"info": {...}, "messages": [...], "trajectory_format": "mini-swe-agent-1", "instance_id"}`.
One trace per file. Messages with `tool_calls` (mini-swe-agent 2) are read as they are;
in text-based runs the assistant's one ```bash (or ```mswea_bash_command) block and the
next user message that reports its `<returncode>` become a tool call and its result. Every
key but `messages` goes to the metadata (`info` whole: exit status, submission, cost).
"""

import re
from collections.abc import Iterator
from typing import Any

from traces.ingest.formats.common import WholeJsonFile, model_stats_usage
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft

_COMMAND = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
OUTPUT_START = "<returncode>"


def split_commands(events: list[Any]) -> list[Any]:
    out: list[Any] = []
    pending: str | None = None
    for n, event in enumerate(events):
        is_dict = isinstance(event, dict)
        content = event.get("content") if is_dict else None
        if (
            pending is not None
            and event.get("role") == "user"
            and isinstance(content, str)
            and content.lstrip().startswith(OUTPUT_START)
        ):
            out.append({**event, "role": "tool", "tool_call_id": pending, "written_role": "user"})
            pending = None
            continue
        pending = None
        commands = _COMMAND.findall(content) if is_dict and isinstance(content, str) else []
        if (
            is_dict
            and event.get("role") == "assistant"
            and not event.get("tool_calls")
            and (len(commands) == 1)
        ):
            pending = f"mini_action_{n}"
            call = {
                "id": pending,
                "function": {"name": "bash", "arguments": {"command": commands[0]}},
            }
            out.append({**event, "tool_calls": [call]})
            continue
        out.append(event)
    return out


class MiniSweAgent(WholeJsonFile):
    def detect(self, sniff: Sniff) -> bool:
        return (
            sniff.first_char == "{"
            and not sniff.multiple
            and {"messages", "trajectory_format"} <= sniff.top_keys
        )

    def read_value(self, data: Any) -> Iterator[Item]:
        where = {"trace": 0}
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            yield FormatProblem(
                "a trajectory needs a `messages` array", {**where, "field": "messages"}
            )
            return
        metadata = {k: v for k, v in data.items() if k != "messages"}
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        if info.get("exit_status") is not None:
            metadata["exit_status"] = info["exit_status"]
        name = ""
        if data.get("instance_id") is not None:
            metadata["task_id"] = data["instance_id"]
            name = str(data["instance_id"])
        model = ((info.get("config") or {}).get("model") or {}).get("model_name")
        run = {"agent": "mini-swe-agent", "model": model, "version": info.get("mini_version")}
        yield DatasetMetadata({k: v for k, v in run.items() if v})
        events = split_commands(data["messages"])
        usage = model_stats_usage(info)
        yield TraceDraft(location=where, events=events, metadata=metadata, name=name, usage=usage)


FORMAT = MiniSweAgent(
    name="mini-swe-agent",
    recognised_by=(
        "an object with `messages`, `info` and `trajectory_format` (mini-swe-agent *.traj.json)"
    ),
)
