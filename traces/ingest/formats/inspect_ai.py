"""Inspect AI eval logs (JSON): `{version, status, eval, plan, results, stats, samples}`.

One trace per sample (per epoch). Its `messages` are kept as they are (tool calls
`{id, function: "<name>", arguments}`, outputs linked by `tool_call_id`), except that
`attachment://<hash>` strings are replaced by the sample's `attachments[hash]`, so the
events hold the real text or image data URL. Read in one incremental pass.
"""

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from traces.ingest.formats.common import (
    as_object,
    kept,
    number,
    read_runs,
    run_trace,
    total,
)
from traces.ingest.types import Adapter, FormatProblem, Item, Sniff, TraceDraft, Usage

ATTACHMENT = "attachment://"
_REF = re.compile(r"attachment://([0-9a-f]{32})")
# The sample's field that becomes the blocks; every other one is kept in the trace's
# metadata as written (`output`, `store`, the `events` transcript, `attachments` with
# which the `attachment://` references of `input` and `events` resolve), each whole or,
# past the import limit, named in `left_out` with its size (common.kept).
RUN = "messages"
# Inspect's letter scores (CORRECT, INCORRECT, PARTIAL, NOANSWER) as numbers.
LETTERS = {"C": 1, "I": 0, "P": 0.5, "N": 0}


def resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """`value` with every `attachment://<hash>` the sample has replaced by its content."""
    if isinstance(value, str):
        if not value.startswith(ATTACHMENT) and ATTACHMENT not in value:
            return value
        if value[len(ATTACHMENT) :] in attachments:
            return attachments[value[len(ATTACHMENT) :]]
        return _REF.sub(lambda m: str(attachments.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {k: resolve(v, attachments) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, attachments) for v in value]
    return value


NOT_IN_LOG = "the log has this tool output but not the call that asked for it"


def with_missing_calls(events: list[Any]) -> list[Any]:
    """Events where every tool output answers a call. Some Inspect logs (its own log of
    tool errors) keep outputs whose assistant turn is gone; refusing them would lose the
    run, and an output must hang under a call. So before such an output stands an
    assistant turn with the call it names (no arguments: none are known), marked
    `synthesized`: the page says the call is not in the log (traces/ingest/events.py)."""
    seen: set[Any] = set()
    out: list[Any] = []
    for event in events:
        if isinstance(event, dict):
            for call in event.get("tool_calls") or []:
                if isinstance(call, dict):
                    seen.add(call.get("id"))
            call_id = event.get("tool_call_id")
            if event.get("role") == "tool" and isinstance(call_id, str) and call_id not in seen:
                name = event.get("function") if isinstance(event.get("function"), str) else None
                call = {"id": call_id, "function": name or "unknown_tool"}
                out.append(
                    {"role": "assistant", "content": None, "tool_calls": [call],
                     "synthesized": NOT_IN_LOG}
                )  # fmt: skip
                seen.add(call_id)
        out.append(event)
    return out


def score_reward(value: Any) -> float | int | None:
    if isinstance(value, str):
        return LETTERS.get(value)
    return number(value)


def run_facts(top: dict[str, Any]) -> dict[str, Any]:
    ev, results, stats = (as_object(top.get(k)) for k in ("eval", "results", "stats"))
    facts: dict[str, Any] = {
        "benchmark": ev.get("task"),
        "framework": "inspect-ai",
        "model": ev.get("model"),
        "status": top.get("status"),
        "eval_id": ev.get("eval_id"),
        "run_id": ev.get("run_id"),
        "eval_task_id": ev.get("task_id"),
        "created": ev.get("created"),
        "dataset": ev.get("dataset"),
        "task_args": ev.get("task_args") or None,
        "model_args": ev.get("model_args") or None,
        "results": results or None,
        "started_at": stats.get("started_at"),
        "completed_at": stats.get("completed_at"),
        "error": top.get("error"),
    }
    scores = results.get("scores")
    first = as_object(scores[0]) if isinstance(scores, list) and scores else {}
    accuracy = number(as_object(as_object(first.get("metrics")).get("accuracy")).get("value"))
    if accuracy is not None:
        facts["accuracy"] = accuracy
    return kept({k: v for k, v in facts.items() if v is not None})


def sample_usage(sample: dict[str, Any]) -> Usage:
    """A sample's `model_usage` (per model: input_tokens, output_tokens, total_cost in
    recent versions) summed over its models, and its `total_time` in seconds."""
    per_model = [as_object(u) for u in as_object(sample.get("model_usage")).values()]
    return Usage.of(
        input_tokens=total(u.get("input_tokens") for u in per_model),
        output_tokens=total(u.get("output_tokens") for u in per_model),
        cost_usd=total(u.get("total_cost") for u in per_model),
        duration_seconds=sample.get("total_time"),
    )


def sample_trace(
    sample: Any, index: int, facts: dict[str, Any], where: dict[str, Any] | None = None
) -> TraceDraft | FormatProblem:
    """One sample (one epoch) as a trace. Several logs may go into one dataset: the trace
    keeps its eval's facts (`eval`), its task id is namespaced by the eval's task
    (`<task>/<sample id>`, the sample's own id kept as `sample_id`), and its name says the
    task, the sample, the epoch and the model, so names stay unique."""
    where = where or {"trace": index}
    if not isinstance(sample, dict):
        return FormatProblem("a sample must be a JSON object", where)
    if not isinstance(sample.get("messages"), list):
        return FormatProblem("a sample needs a `messages` array", {**where, "field": "messages"})
    events = with_missing_calls(resolve(sample["messages"], as_object(sample.get("attachments"))))
    metadata = kept({k: v for k, v in sample.items() if k != RUN})
    scores = sample.get("scores")
    if not isinstance(scores, dict) and isinstance(sample.get("score"), dict):
        scores = {"score": sample["score"]}  # logs before scores were per scorer
    reward = None
    if isinstance(scores, dict) and scores:
        first = next(iter(scores.values()))
        reward = score_reward(first.get("value") if isinstance(first, dict) else None)
    if facts:
        metadata["eval"] = facts
    sample_id, task = sample.get("id"), facts.get("benchmark")
    task_id = sample_id
    if sample_id is not None:
        metadata["sample_id"] = sample_id
        if isinstance(task, str) and task:
            task_id = f"{task}/{sample_id}"
    run = f"epoch {sample.get('epoch', 1)}"
    if isinstance(facts.get("model"), str):
        run += f" {facts['model']}"
    if isinstance(facts.get("eval_id"), str):
        run += f" (eval {facts['eval_id'][:6]})"  # the same task and model run twice
    elif isinstance(facts.get("run_id"), str):  # older logs have no eval_id
        run += f" (run {facts['run_id'][:6]})"
    draft = run_trace(where, events, metadata, reward=reward, task_id=task_id, run=run)
    draft.usage = sample_usage(sample)
    return draft


class InspectAI(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        return sniff.first_char == "{" and {"eval", "samples"} <= sniff.top_keys

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        top: dict[str, Any] = {}

        def keep(key: str, value: Any) -> None:
            if key in ("eval", "results", "stats", "status", "error", "samples"):
                top[key] = value

        facts: dict[str, Any] = {}

        def dataset_facts() -> dict[str, Any]:
            facts.update(run_facts(top))
            return facts

        yield from read_runs(
            stream,
            runs_key="samples",
            keep=keep,
            facts=dataset_facts,
            trace=lambda sample, index: sample_trace(sample, index, facts),
        )


FORMAT = InspectAI(
    name="inspect-ai",
    recognised_by="an object with `eval` and `samples` (Inspect JSON log)",
)
