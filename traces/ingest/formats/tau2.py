"""tau2-bench simulation results: `{timestamp, info, tasks, simulations: [...]}`.

One trace per simulation, its `messages` kept as they are (flat tool calls
`{id, name, arguments, requestor}`, tool outputs linked by `id`, a user who calls
tools). The file is read in one incremental pass: `simulations` can be very large.
`tasks` (tau2 writes them before the simulations) are kept: each simulation's task
definition in its trace's metadata (`task`), and the tasks no simulation of the file
ran (or every task, in a file that puts them after the simulations) in the dataset's
metadata (`tasks`).
"""

from collections.abc import Iterator
from typing import Any, BinaryIO

from traces.ingest.formats.common import as_object, kept, number, read_runs, run_trace, total
from traces.ingest.types import (
    Adapter,
    DatasetMetadata,
    FormatProblem,
    Item,
    Sniff,
    TraceDraft,
    Usage,
)


def _run_facts(top: dict[str, Any]) -> dict[str, Any]:
    info = as_object(top.get("info"))
    agent, user = as_object(info.get("agent_info")), as_object(info.get("user_info"))
    facts = {
        "benchmark": "tau2-bench",
        "domain": as_object(info.get("environment_info")).get("domain_name"),
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
    return kept({k: v for k, v in facts.items() if v is not None})


def _usage(sim: dict[str, Any], messages: list[Any]) -> Usage:
    """The agent's figures: its turns' `usage` (prompt and completion tokens) summed, its
    `agent_cost`, and the simulation's `duration`. The simulated user's own cost and
    tokens (`user_cost`, its turns' usage) stay in the metadata and messages only."""
    turns = [
        as_object(m.get("usage"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    return Usage.of(
        input_tokens=total(u.get("prompt_tokens") for u in turns),
        output_tokens=total(u.get("completion_tokens") for u in turns),
        cost_usd=sim.get("agent_cost"),
        duration_seconds=sim.get("duration"),
    )


def _trace(
    sim: Any, index: int, tasks: dict[Any, Any], ran: set[Any]
) -> TraceDraft | FormatProblem:
    where = {"trace": index}
    if not isinstance(sim, dict):
        return FormatProblem("a simulation must be a JSON object", where)
    messages = sim.get("messages")
    if not isinstance(messages, list):
        return FormatProblem(
            "a simulation needs a `messages` array", {**where, "field": "messages"}
        )
    values = {k: v for k, v in sim.items() if k != "messages"}
    task_id = sim.get("task_id")
    if isinstance(task_id, str | int) and task_id in tasks:
        values["task"] = tasks[task_id]
        ran.add(task_id)
    metadata = kept(values)
    reward = number(as_object(sim.get("reward_info")).get("reward"))
    run = f"trial {sim.get('trial', '?')}"
    draft = run_trace(where, messages, metadata, reward=reward, task_id=task_id, run=run)
    draft.usage = _usage(sim, messages)
    return draft


def _task_id(task: Any) -> Any:
    task_id = as_object(task).get("id")
    return task_id if isinstance(task_id, str | int) else None


class Tau2(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        return sniff.first_char == "{" and "simulations" in keys and bool({"tasks", "info"} & keys)

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        top: dict[str, Any] = {}
        tasks: dict[Any, Any] = {}  # id -> definition, once `tasks` is read
        listed: list[Any] = []  # every task as written
        ran: set[Any] = set()

        def keep(key: str, value: Any) -> None:
            if key == "tasks" and isinstance(value, list):
                top["num_tasks"] = len(value)
                listed.extend(value)
                tasks.update((_task_id(t), t) for t in value if _task_id(t) is not None)
            else:
                top[key] = value

        yield from read_runs(
            stream,
            runs_key="simulations",
            keep=keep,
            facts=lambda: _run_facts(top),
            trace=lambda sim, index: _trace(sim, index, tasks, ran),
        )
        not_run = [t for t in listed if _task_id(t) is None or _task_id(t) not in ran]
        if not_run:
            yield DatasetMetadata(kept({"tasks": not_run}))


FORMAT = Tau2(
    name="tau2-bench",
    recognised_by="an object with `simulations` and `tasks` or `info` (tau2-bench results)",
)
