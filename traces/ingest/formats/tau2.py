"""tau2-bench simulation results: `{timestamp, info, tasks, simulations: [...]}`.

One trace per simulation, its `messages` kept as they are (flat tool calls
`{id, name, arguments, requestor}`, tool outputs linked by `id`, a user who calls
tools). The file is read in one incremental pass: `simulations` can be very large.

"""

from collections.abc import Iterator
from typing import Any, BinaryIO

from traces.ingest.formats.common import as_object, compact, number, read_runs, run_trace, total
from traces.ingest.types import FormatProblem, Item, Sniff, TraceDraft, Usage


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
    return compact({k: v for k, v in facts.items() if v is not None})


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
    reward = number(as_object(sim.get("reward_info")).get("reward"))
    run = f"trial {sim.get('trial', '?')}"
    draft = run_trace(where, messages, metadata, reward=reward, task_id=sim.get("task_id"), run=run)
    draft.usage = _usage(sim, messages)
    return draft


class Tau2:
    name = "tau2-bench"
    recognised_by = "an object with `simulations` and `tasks` or `info` (tau2-bench results)"

    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        return sniff.first_char == "{" and "simulations" in keys and bool({"tasks", "info"} & keys)

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        top: dict[str, Any] = {}

        def keep(key: str, value: Any) -> None:
            if key == "tasks" and isinstance(value, list):
                top["num_tasks"] = len(value)  # the tasks themselves are not kept
            else:
                top[key] = value

        yield from read_runs(
            stream, runs_key="simulations", keep=keep, facts=lambda: _run_facts(top), trace=_trace
        )


FORMAT = Tau2()
