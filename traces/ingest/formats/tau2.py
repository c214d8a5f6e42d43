"""tau2-bench simulation results: `{timestamp, info, tasks, simulations: [...]}`.

One trace per simulation, its `messages` kept as they are (flat tool calls
`{id, name, arguments, requestor}`, tool outputs linked by `id`, a user who calls
tools). The file is read in one incremental pass: `simulations` can be very large.

`iter_top_level` and `compact` are also used by the other benchmark adapters.
"""

from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft

BIG_STRING = 2000  # characters: longer strings are left out of metadata


def compact(value: Any, limit: int = BIG_STRING) -> Any:
    """`value` without the strings longer than `limit` inside its objects and arrays."""

    def small(v: Any) -> bool:
        return not (isinstance(v, str) and len(v) > limit)

    if isinstance(value, dict):
        return {k: compact(v, limit) for k, v in value.items() if small(v)}
    if isinstance(value, list):
        return [compact(v, limit) for v in value if small(v)]
    return value


def iter_top_level(stream: BinaryIO, big: str) -> Iterator[tuple[str, Any]]:
    """One pass over a JSON object: `(key, value)` for each top-level key, except that an
    array under `big` gives `(f"{big}.item", item)` for each item, built one at a time."""
    builder = ijson.ObjectBuilder()
    unit: str | None = None
    for prefix, event, value in ijson.parse(stream, use_float=True):
        if unit is None:
            if prefix == "" or (prefix == big and event in ("start_array", "end_array")):
                continue
            unit, builder = prefix, ijson.ObjectBuilder()
        builder.event(event, value)
        if prefix == unit and event not in ("start_map", "start_array", "map_key"):
            yield unit, builder.value
            unit = None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def number(value: Any) -> float | int | None:
    """A reward: numbers as they are, booleans as 1/0, anything else None."""
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int | float) else None


def _run_facts(top: dict[str, Any]) -> dict[str, Any]:
    info = _dict(top.get("info"))
    agent, user = _dict(info.get("agent_info")), _dict(info.get("user_info"))
    facts = {
        "benchmark": "tau2-bench",
        "domain": _dict(info.get("environment_info")).get("domain_name"),
        "model": agent.get("llm"),
        "agent_implementation": agent.get("implementation"),
        "agent_llm_args": agent.get("llm_args"),
        "user_model": user.get("llm"),
        "user_implementation": user.get("implementation"),
        "user_llm_args": user.get("llm_args"),
        "num_trials": info.get("num_trials"),
        "num_tasks": top.get("num_tasks"),
        "max_steps": info.get("max_steps"),
        "max_errors": info.get("max_errors"),
        "seed": info.get("seed"),
        "git_commit": info.get("git_commit"),
        "timestamp": top.get("timestamp"),
    }
    return compact({k: v for k, v in facts.items() if v is not None})


def _trace(sim: Any, index: int) -> TraceDraft | FormatProblem:
    where = {"trace": index}
    if not isinstance(sim, dict):
        return FormatProblem("a simulation must be a JSON object", where)
    messages = sim.get("messages")
    if not isinstance(messages, list):
        return FormatProblem(
            "a simulation needs a `messages` array", {**where, "field": "messages"}
        )
    metadata = compact({k: v for k, v in sim.items() if k != "messages"})
    reward = number(_dict(sim.get("reward_info")).get("reward"))
    if reward is not None:
        metadata["reward"] = reward
    name = ""
    if sim.get("task_id") is not None:
        metadata["task_id"] = sim["task_id"]
        name = f"{sim['task_id']} trial {sim.get('trial', '?')}"
    return TraceDraft(location=where, events=messages, metadata=metadata, name=name)


class Tau2:
    name = "tau2-bench"

    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        return sniff.first_char == "{" and "simulations" in keys and bool({"tasks", "info"} & keys)

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        top: dict[str, Any] = {}
        count = 0
        try:
            for key, value in iter_top_level(stream, "simulations"):
                if key == "tasks" and isinstance(value, list):
                    top["num_tasks"] = len(value)  # the tasks themselves are not kept
                    continue
                if key != "simulations.item":
                    top[key] = value
                    if key == "simulations":
                        yield FormatProblem(
                            f"`simulations` must be an array, not {type(value).__name__}",
                            {"field": "simulations"},
                        )
                    continue
                if count == 0:
                    yield DatasetMetadata(_run_facts(top))
                yield _trace(value, count)
                count += 1
        except ijson.JSONError as exc:
            yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")
            return
        if count == 0:
            yield DatasetMetadata(_run_facts(top))
            if "simulations" not in top:
                yield FormatProblem("no simulations: no trace to import", {}, rule="non_empty")


FORMAT = Tau2()
