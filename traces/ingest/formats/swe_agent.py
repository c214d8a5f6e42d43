"""SWE-agent trajectories (`.traj`): `{environment, trajectory, history, info, replay_config}`.

One trace per file. `history` is the chat as the model saw it (SWE-agent >= 1.0:
tool calls, outputs linked by a list `tool_call_ids`; older: observations as `user`
messages, the command in `action`, split here into a call and its result). A file may
hold `history` only (the repository's demonstrations). With no usable history, the
chat is taken from the last trajectory step's `messages`, else built from the steps.
No reward.
"""

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import ijson
import orjson

from traces.ingest.formats.common import as_object, iter_top_level, kept, model_stats_usage
from traces.ingest.types import Adapter, DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft
from traces.spool import anonymous_file


def split_actions(events: Iterable[Any]) -> Iterator[Any]:
    """Old SWE-agent (before function calling) writes the command in the assistant turn's
    `action` and its output as the next `user` message: each becomes a tool call (named by
    the command's first word, `{"command": action}`) and its result, so the run reads in
    the ACT and OBSERVE lanes. The event keeps every key; the role it had is noted. One
    event at a time."""
    pending: str | None = None
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            yield event
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
            yield {**event, "tool_calls": [call]}
            continue
        if pending is not None and event.get("role") == "user":
            yield {**event, "role": "tool", "tool_call_id": pending, "written_role": "user"}
        else:
            yield event
        pending = None


def _replay_config(data: dict[str, Any]) -> dict[str, Any]:
    config = data.get("replay_config")
    if isinstance(config, str):  # some versions store it as a JSON string
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            return {}
    return as_object(config)


def _metadata(data: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    # `info` whole: exit status, submission (the patch), model_stats, edited_files30/50/70
    # (the edited files around each change).
    metadata: dict[str, Any] = kept(as_object(data.get("info")))
    # Every other top-level key as written: `environment`, `replay_config` (the run's
    # configuration, a JSON string in some versions)...
    metadata.update(
        kept({k: v for k, v in data.items() if k not in ("history", "trajectory", "info")})
    )
    if isinstance(data.get("trajectory"), list):
        metadata["steps"] = len(data["trajectory"])
        if any(data["trajectory"]):
            metadata.update(kept({"trajectory_steps": data["trajectory"]}))
    problem = {k: v for k, v in as_object(config.get("problem_statement")).items() if k != "text"}
    if problem:
        metadata.update(kept({"problem_statement": problem}))
    if problem.get("id") is not None:
        metadata["task_id"] = problem["id"]
    model = as_object(as_object(config.get("agent")).get("model")).get("name")
    if model:
        metadata["model"] = model
    return metadata


# The keys of a trajectory step that the blocks hold already (the chat of the step, the
# prompt it sent): the rest of each step (state, execution_time...) is kept in metadata.
STEP_CHAT = ("thought", "action", "observation", "response", "query", "messages")


class _Events:
    """Events kept on disk, one JSON line each, while the rest of the file is read: a
    .traj writes `info` after `history`, and the trace's metadata must be whole before its
    first block is made. Read back one at a time."""

    def __init__(self) -> None:
        self.file = anonymous_file()
        self.count = 0

    def add(self, event: Any) -> None:
        self.file.write(orjson.dumps(event) + b"\n")
        self.count += 1

    def __iter__(self) -> Iterator[Any]:
        self.file.seek(0)
        for line in self.file:
            yield orjson.loads(line)

    def close(self) -> None:
        self.file.close()


def _step_events(step: dict[str, Any]) -> list[Any]:
    """A step as the chat it was, for a file whose steps are all it has."""
    said = step.get("response") or step.get("thought") or ""
    return [
        {"role": "assistant", "content": said, "action": step.get("action")},
        {"role": "user", "content": step.get("observation")},
    ]


class SweAgent(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        if sniff.first_char != "{" or not ({"trajectory", "history"} & keys):
            return False
        # `history` alone: SWE-agent's own demonstrations; Who&When logs ask a `question`.
        return not ({"question", "mistake_agent", "messages"} & keys)

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        """One pass over the file, a history message or a trajectory step at a time (a
        .traj of a long run is mostly its steps' prompts, `query`): the history, and the
        steps as chat (used when the history is empty), wait on disk."""
        history, from_steps = _Events(), _Events()
        try:
            yield from self._read(stream, history, from_steps)
        finally:
            history.close()
            from_steps.close()

    def _read(self, stream: BinaryIO, history: _Events, from_steps: _Events) -> Iterator[Item]:
        where = {"trace": 0}
        data: dict[str, Any] = {}
        steps: list[Any] = []  # each step without its chat
        last_messages: Any = None  # the last step's `messages`
        steps_are_objects = True
        try:
            for key, value in iter_top_level(stream, ("history", "trajectory")):
                if key == "history.item":
                    history.add(value)
                elif key == "trajectory.item":
                    step = as_object(value)
                    steps_are_objects = steps_are_objects and isinstance(value, dict)
                    last_messages = step.get("messages")
                    for event in _step_events(step):
                        from_steps.add(event)
                    steps.append({k: v for k, v in step.items() if k not in STEP_CHAT})
                else:
                    data[key] = value
                value = step = None
        except ijson.JSONError as exc:
            yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")
            return
        except TypeError as exc:  # a number JSON cannot keep
            yield FormatProblem(f"cannot be kept as JSON: {exc}", where)
            return
        if steps:
            data["trajectory"] = steps
        events: Iterable[Any] | None = history if history.count else None
        if events is None and isinstance(last_messages, list) and last_messages:
            events = last_messages
        elif events is None and from_steps.count and steps_are_objects:
            events = from_steps
        if events is None:
            yield FormatProblem(
                "neither `history` nor `trajectory` holds the run's messages",
                {**where, "field": "history"},
            )
            return
        config = _replay_config(data)
        metadata = _metadata(data, config)
        run = {"agent": "SWE-agent", "model": metadata.get("model")}
        yield DatasetMetadata({k: v for k, v in run.items() if v})
        usage = model_stats_usage(as_object(data.get("info")))
        task_id = metadata.get("task_id")
        yield TraceDraft(
            location=where,
            events=split_actions(events),
            metadata=metadata,
            # The instance id; else the file's name (SWE-agent names a .traj after it).
            name="" if task_id is None else str(task_id),
            name_from_file=task_id is None,
            unique_name=True,
            usage=usage,
        )


FORMAT = SweAgent(
    name="swe-agent",
    recognised_by="an object with `history` and/or `trajectory` beside `info`, `environment` or "
    "`replay_config` (SWE-agent .traj, old and function-calling)",
)
