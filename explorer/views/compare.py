"""Comparing runs (issue 12): two traces side by side, aligned step by step, and two
datasets (or two slices) task by task.

/compare/traces/?a=<trace>&b=<trace> shows a window of the aligned steps from just
before the first divergence (the `steps` partial gives htmx the next window, from the
same URL with `from=<step>`); identical stretches are folded; a pair of blocks of the
same kind that differ shows a word diff (texts up to DIFF_MAX_WORDS words and
DIFF_MAX_CHARS characters a side, within the response's CPU allowance, Effort: a word diff
is about quadratic, so larger or later pairs are shown plainly, "too long to diff
here"). With `a` alone, `b` is another trial of the same task (a passing one for a failed
trial); with `dataset`, `key` and `task`, a representative pair of that task's trials.

/compare/datasets/?a=<dataset>&b=<dataset> (or `a_where`/`b_where`=key=value slices)
shows the paired statistics and the per-task table. Both read through traces.policy:
each side must be readable by the person.
"""

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any
from urllib.parse import urlencode

import orjson
from django.urls import reverse
from django.views.decorators.http import require_safe

from explorer.access import actor, policy_errors
from explorer.render.effort import Effort
from explorer.views.base import render_page, wants_partial
from traces import kinds
from traces.models import Block
from traces.policy import datasets_readable
from traces.rewards import rate_tone, reward_tone
from traces.selectors.access import dataset_for, trace_for
from traces.selectors.compare import (
    Side,
    blocks_by_id,
    dataset_compare,
    lane_of,
    other_trials,
    trace_compare,
    trials_of_task,
)
from traces.selectors.datasets import datasets_to_choose
from traces.selectors.stats import message_text

TRACES_TEMPLATE = "explorer/compare_traces.html"
DATASETS_TEMPLATE = "explorer/compare_datasets.html"
WINDOW = 80  # steps shown at a time
CONTEXT = 3  # identical steps shown before the first divergence
FOLD_AT = 6  # a run of at least this many identical steps is folded
PREVIEW_CHARS = 800
# A word diff (difflib, about quadratic) only of texts up to these sizes a side: crafted
# texts of 300 words take ~25 ms, so the response's allowance (Effort) stops it after a
# dozen pairs; 2,000 words took 0.7 s a pair (80 pairs a page: a minute of CPU).
DIFF_MAX_WORDS = 300
DIFF_MAX_CHARS = 4_000
TOO_LONG = "too long to diff here"
TASK_ROWS = 500
_WORDS = re.compile(r"\S+|\s+")


# --- two traces -----------------------------------------------------------------------


def block_text(block: Block) -> str:
    """What a block says, as text to read and to diff."""
    payload = block.payload
    if block.sub_type == "MESSAGE":
        return message_text(payload)
    if not isinstance(payload, dict):
        return _json(payload)
    if block.sub_type == "TOOL_CALL":
        return _json(payload.get("arguments"))
    if block.sub_type == "TOOL_RESULT":
        body = payload.get("output", payload.get("delta"))
        return body if isinstance(body, str) else _json(body)
    for key in ("content", "text", "thinking"):
        if isinstance(payload.get(key), str):
            return payload[key]
    return _json(payload)


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _label(block: Block) -> str:
    payload = block.payload if isinstance(block.payload, dict) else {}
    if block.sub_type == "TOOL_CALL":
        name = payload.get("name")
        return f"call {name}" if isinstance(name, str) else "call"
    if block.sub_type == "MESSAGE":
        role = payload.get("role")
        return str(role)[:60] if role else "message"
    kind = kinds.BY_SUB_TYPE.get(block.sub_type)
    return kind.label if kind is not None else block.sub_type


@dataclass
class BlockView:
    id: str
    lane: str
    sub_type: str
    label: str
    text: str
    more: bool
    url: str


def _block_view(block: Block | None) -> BlockView | None:
    if block is None:
        return None
    text = block_text(block)
    return BlockView(
        id=block.pk,
        lane=lane_of(block.sub_type),
        sub_type=block.sub_type,
        label=_label(block),
        text=text[:PREVIEW_CHARS],
        more=len(text) > PREVIEW_CHARS,
        url=reverse("trace", args=[block.trace_id]) + "?" + urlencode({"focus": block.pk})
        + f"#{block.pk}",
    )  # fmt: skip


def word_diff(old: str, new: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Each side's text in pieces marked "same", "del" (only in old) or "ins" (only in
    new), diffed word by word (whitespace kept as it is). Callers keep texts small
    (diffable): the work is about quadratic."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(("same", "".join(a[i1:i2])))
            right.append(("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            right.append(("ins", "".join(b[j1:j2])))
    return left, right


def diffable(text: str) -> bool:
    """Whether `text` is small enough to be word-diffed (DIFF_MAX_CHARS, DIFF_MAX_WORDS)."""
    return len(text) <= DIFF_MAX_CHARS and len(text.split(None, DIFF_MAX_WORDS)) <= DIFF_MAX_WORDS


def step_diff(old: str, new: str, effort: Effort) -> tuple[list, list, str]:
    """The word diff of two texts, and a note when they are shown plainly instead (too
    long, or the response has spent its allowance)."""
    if not (diffable(old) and diffable(new) and effort.left()):
        return [], [], TOO_LONG
    return (*word_diff(old, new), "")


@dataclass
class StepView:
    n: int
    a: BlockView | None
    b: BlockView | None
    same: bool
    first: bool
    diff: tuple | None = None


def _rows(comparison, start: int, stop: int, first: int | None) -> list[dict[str, Any]]:
    """The steps start..stop as rows, runs of identical steps folded."""
    steps = comparison.steps[start:stop]
    ids_a = [i for s in steps if (i := comparison.step_ids(s)[0])]
    ids_b = [j for s in steps if (j := comparison.step_ids(s)[1])]
    blocks_a = blocks_by_id(trace=comparison.a, block_ids=ids_a)
    blocks_b = blocks_by_id(trace=comparison.b, block_ids=ids_b)
    views = []
    effort = Effort()  # one CPU allowance for all the diffs of the response
    for n, step in enumerate(steps, start):
        ida, idb = comparison.step_ids(step)
        view = StepView(
            n=n,
            a=_block_view(blocks_a.get(ida)) if ida else None,
            b=_block_view(blocks_b.get(idb)) if idb else None,
            same=step[2],
            first=n == first,
        )
        if not view.same and ida and idb:
            view.diff = step_diff(block_text(blocks_a[ida]), block_text(blocks_b[idb]), effort)
        views.append(view)
    rows: list[dict[str, Any]] = []
    run: list[StepView] = []

    def flush() -> None:
        if len(run) >= FOLD_AT:
            rows.append({"fold": list(run), "first_n": run[0].n + 1, "last_n": run[-1].n + 1})
        else:
            rows.extend({"step": s} for s in run)
        run.clear()

    for view in views:
        if view.same:
            run.append(view)
        else:
            flush()
            rows.append({"step": view})
    flush()
    return rows


def _int(request, name: str) -> int | None:
    try:
        return max(0, int(request.GET.get(name, "")))
    except ValueError:
        return None


def _pick(request) -> tuple[str, str, list]:
    """The ids of both sides from the query (filling in `b`), and other trials of `a`."""
    who = actor(request)
    a_id, b_id = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    dataset_id = request.GET.get("dataset", "")
    if not a_id and dataset_id and request.GET.get("key"):
        dataset = dataset_for(actor=who, dataset_id=dataset_id)
        pair = trials_of_task(
            dataset=dataset, key=request.GET["key"], value=request.GET.get("task", "")
        )
        if pair is not None:
            a_id, b_id = pair[0].pk, pair[1].pk
    others: list = []
    if a_id:
        others = other_trials(trace=trace_for(actor=who, trace_id=a_id), limit=20)
        if not b_id and others:
            b_id = others[0].pk
    return a_id, b_id, others


@require_safe
@policy_errors
def compare_traces_page(request):
    who = actor(request)
    a_id, b_id, others = _pick(request)
    context: dict[str, Any] = {"nav": "datasets", "a_id": a_id, "b_id": b_id, "others": others}
    if not (a_id and b_id):
        return render_page(request, TRACES_TEMPLATE, context)
    a = trace_for(actor=who, trace_id=a_id)
    b = trace_for(actor=who, trace_id=b_id)
    comparison = trace_compare(a=a, b=b)
    first = comparison.first_divergence
    start = _int(request, "from")
    if start is None:
        start = max(0, (first if first is not None else 0) - CONTEXT)
    start = min(start, len(comparison.steps))
    stop = min(start + WINDOW, len(comparison.steps))
    query = {"a": a.pk, "b": b.pk}
    context.update(
        {
            "a": a,
            "b": b,
            "a_tone": reward_tone(a.reward),
            "b_tone": reward_tone(b.reward),
            "total": len(comparison.steps),
            "same_count": comparison.same_count,
            "blocks_a": len(comparison.a_ids),
            "blocks_b": len(comparison.b_ids),
            "first": first,
            "start": start,
            "stop": stop,
            "rows": _rows(comparison, start, stop, first),
            "next_url": f"?{urlencode({**query, 'from': stop})}" if stop < len(comparison.steps)
            else "",
            "top_url": f"?{urlencode({**query, 'from': 0})}",
            "first_url": f"?{urlencode(query)}#first-divergence",
        }
    )  # fmt: skip
    if wants_partial(request):
        return render_page(request, TRACES_TEMPLATE, context, partial="steps")
    return render_page(request, TRACES_TEMPLATE, context)


# --- two datasets ---------------------------------------------------------------------


def _where(raw: str) -> tuple[str | None, str | None, str]:
    """A key=value slice: (key, value, error)."""
    if not raw:
        return None, None, ""
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        return None, None, f"Write a slice as key=value (e.g. model=gpt-4o), not “{raw[:60]}”."
    return key.strip(), value.strip(), ""


def _pair_url(task) -> str:
    """The trace comparison of a flipped task's representative pair."""
    if not task.pair:
        return ""
    return reverse("compare-traces") + "?" + urlencode({"a": task.pair[0], "b": task.pair[1]})


@require_safe
@policy_errors
def compare_datasets_page(request):
    who = actor(request)
    get = request.GET
    a_id, b_id = get.get("a", "").strip(), get.get("b", "").strip()
    a_where, b_where = get.get("a_where", "")[:500], get.get("b_where", "")[:500]
    key = get.get("key", "").strip()[:500]
    choices = datasets_to_choose(datasets=datasets_readable(who), limit=300)
    context: dict[str, Any] = {
        "nav": "datasets",
        "choices": choices,
        "a_id": a_id,
        "b_id": b_id,
        "a_where": a_where,
        "b_where": b_where,
        "key": key,
    }
    ka, va, error_a = _where(a_where)
    kb, vb, error_b = _where(b_where)
    context["errors"] = [e for e in (error_a, error_b) if e]
    if not a_id or context["errors"] or not (b_id or a_where or b_where):
        if a_id:
            context["a"] = dataset_for(actor=who, dataset_id=a_id)
        status = 422 if context["errors"] else 200
        return render_page(request, DATASETS_TEMPLATE, context, status=status)
    a = dataset_for(actor=who, dataset_id=a_id)
    b = dataset_for(actor=who, dataset_id=b_id) if b_id else a
    result = dataset_compare(a=Side(a, ka, va), b=Side(b, kb, vb), key=key or None)
    rows = []
    for task in result.tasks[:TASK_ROWS]:
        rows.append(
            {
                "t": task,
                "tone_a": rate_tone(task.success_a),
                "tone_b": rate_tone(task.success_b),
                "cells_a": list(zip(task.pass_at_a, task.pass_hat_a, strict=True)),
                "cells_b": list(zip(task.pass_at_b, task.pass_hat_b, strict=True)),
                "link": _pair_url(task),
            }
        )
    flipped = [{"t": t, "link": _pair_url(t)} for t in result.flipped]
    context.update(
        {
            "a": a,
            "b": b,
            "result": result,
            "summary": result.summary,
            "words": result.summary.in_words(result.a.label, result.b.label),
            "rows": rows,
            "flipped": flipped,
            "more_tasks": max(0, len(result.tasks) - TASK_ROWS),
        }
    )
    return render_page(request, DATASETS_TEMPLATE, context)
