"""Who&When (failure attribution in multi-agent systems): one log per file,
`{history, question, question_ID, ground_truth, mistake_agent, mistake_step, ...}`.

`history` is the events: free-text roles ("Orchestrator (thought)", "WebSurfer",
"human") or `user`/`assistant` with the agent in `name`; no tool calls.
"""

from collections.abc import Iterator
from typing import Any

from traces.ingest.formats.common import WholeJsonFile, kept, number
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft


def _reward(log: dict[str, Any]) -> float | int | None:
    """Who&When holds only failed runs, each labelled with the agent and step at fault.
    The reward is the run's outcome: `is_correct` (algorithm-generated logs: was the
    final answer right) where present, else 0 for a log with a `mistake_agent` label.
    `is_corrected` (hand-crafted logs) is kept in metadata but not read as a reward:
    it does not say whether the system answered correctly."""
    if isinstance(log.get("is_correct"), bool):
        return number(log["is_correct"])
    return 0 if log.get("mistake_agent") else None


def _failure(log: dict[str, Any]) -> dict[str, Any] | None:
    """The failure attribution: `mistake_step` is the 0-based index in `history` of the
    turn that caused the failure (written as a string); the import stores the id of the
    block that turn became in `failure.block` (traces/ingest/failure.py)."""
    step = log.get("mistake_step")
    if isinstance(step, str) and step.strip().isascii() and step.strip().isdigit():
        step = int(step)
    if not (isinstance(step, int) and not isinstance(step, bool)) and not log.get("mistake_agent"):
        return None
    found: dict[str, Any] = {"agent": log.get("mistake_agent"), "reason": log.get("mistake_reason")}
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        found["step"] = step
    return {k: v for k, v in found.items() if v is not None}


class WhoAndWhen(WholeJsonFile):
    def detect(self, sniff: Sniff) -> bool:
        keys = sniff.top_keys
        return (
            sniff.first_char == "{"
            and "history" in keys
            and bool({"question", "mistake_agent"} & keys)
            and "trajectory" not in keys
        )

    def read_value(self, log: Any) -> Iterator[Item]:
        where = {"trace": 0}
        if not isinstance(log, dict) or not isinstance(log.get("history"), list):
            yield FormatProblem("a log needs a `history` array", {**where, "field": "history"})
            return
        yield DatasetMetadata({"benchmark": "Who&When"})
        # Every key but the events, the agents' system prompts included (a few KB each).
        metadata: dict[str, Any] = kept({k: v for k, v in log.items() if k != "history"})
        if isinstance(log.get("system_prompt"), dict):
            metadata["agents"] = list(log["system_prompt"])
        if (reward := _reward(log)) is not None:
            metadata["reward"] = reward
        if (failure := _failure(log)) is not None:
            metadata["failure"] = failure
        if log.get("question_ID") is not None:
            metadata["task_id"] = log["question_ID"]
        question = log.get("question")
        name = " ".join(question.split()) if isinstance(question, str) else ""
        yield TraceDraft(location=where, events=log["history"], metadata=metadata, name=name)


FORMAT = WhoAndWhen(
    name="who-and-when",
    recognised_by="an object with `history` and `question` or `mistake_agent` (Who&When logs)",
)
