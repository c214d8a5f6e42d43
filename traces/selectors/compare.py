"""Comparing runs (DESIGN.md, "Comparing runs"; issue 12): two traces step by step, two
datasets (or two slices of one) task by task.

Traces. Each block is read as a compact signature, in one indexed query per trace (the
blocks in the order they were written, `block_number`): its kind (lane and sub type),
what names it (a tool's name, a message's role) and a hash of what it says (a call's
arguments, a message's or a result's content). Call ids are left out: they differ
between two runs of the same task. The alignment then works on small integers, never
on the text:

1. the common prefix and suffix are matched as they are (most trials of one task begin
   alike);
2. what remains is aligned on the full signatures with patience diff (blocks that occur
   once on each side anchor the alignment, in order), and a region small enough
   (`CELLS`) exactly, as a longest common subsequence while the alignment's allowance of
   cells lasts (`ALIGN_CELLS`); a region too large to align with no unique
   anchor is left unmatched, so that the work stays bounded (about linear) whatever the
   traces hold;
3. inside each stretch left unmatched, blocks of the same kind and name (the same tool
   called with other arguments, a message that says something else) are paired the same
   way on their kind alone: a pair whose content differs (`same` false).

A step is `(a, b, same)`: indexes of blocks on each side (None where one side has no
matching block). The first divergence is the first step that is not `same`.

Datasets. A trace succeeds exactly when accuracy counts it as a success: its reward is
1 (traces.rewards); a trace without a reward does not succeed. Per task (the value of the
dataset's task key in a trace's metadata): n traces, the share that succeed, pass@k and
pass^k over those n. Over the tasks both sides share: the mean of the per-task
differences (B - A) with a paired 95% confidence interval (Student's t over the
differences, cut to -1..1, where a difference of two shares lies: with two or three tasks
the t interval alone reached past 2), and the Wilcoxon signed-rank test of the differences as
`scipy.stats.wilcoxon` computes it by default. Each side's accuracy (successes over all
its traces) comes with a 95% Wilson score interval.
"""

import math
import warnings
from bisect import bisect_left
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db.models import F, QuerySet, TextField
from django.db.models.expressions import ExpressionWrapper, RawSQL

from traces import kinds
from traces.models import WRITTEN_ORDER, Block, Dataset, Trace
from traces.rewards import succeeded
from traces.selectors.stats import (
    default_group_key,
    metadata_keys,
    metadata_value_sql,  # the one SQL reading of metadata[key] (both databases)
    pass_at_k,
    pass_hat_k,
    traces_with_metadata_value,
)

# A region of at most this many cells (len(a) * len(b)) is aligned exactly (a longest
# common subsequence); larger ones by patience diff, whose work is about linear.
CELLS = 62_500
# ... and one alignment spends at most this many cells on them in all (~0.2 s): a crafted
# pair of 40,000-block traces made of hundreds of such regions took seconds a request.
# Once spent, regions are aligned by patience diff alone.
ALIGN_CELLS = 2_000_000
PASS_K_MAX = 5

Signature = tuple[str, str, int]  # (sub type, tool name or role, hash of the content)
Step = tuple[int | None, int | None, bool]


# --- signatures --------------------------------------------------------------------------


def _digest(value: Any) -> int:
    """A hash of a JSON value, to compare within one request (Python's own hash: fast, and
    the signatures of both traces are made in the same process). A string is hashed as
    it is; any other value as its compact JSON (keys in the order written)."""
    if isinstance(value, str):
        return hash(("s", value))
    try:
        return hash(("j", orjson.dumps(value)))
    except (TypeError, orjson.JSONEncodeError):
        return hash(("r", repr(value)))


def signature_of(sub_type: str, payload: Any) -> Signature:
    """What a block is compared on: its kind, its name (a tool's, a message's role) and a
    hash of its content. Ids (call ids, seq) are left out."""
    if not isinstance(payload, dict):
        return (sub_type, "", _digest(payload))
    if sub_type == "TOOL_CALL":
        name = payload.get("name")
        return (sub_type, name if isinstance(name, str) else "", _digest(payload.get("arguments")))
    if sub_type == "TOOL_RESULT":
        body = payload.get("output", payload.get("delta"))
        return (sub_type, "", _digest(body))
    if sub_type == "MESSAGE":
        role = payload.get("role")
        return (sub_type, role if isinstance(role, str) else "", _digest(payload.get("content")))
    rest = {k: v for k, v in payload.items() if k not in ("call_id", "seq")}
    return (sub_type, "", _digest(rest))


@dataclass(frozen=True)
class TraceSignatures:
    ids: list[str]
    signatures: list[Signature]


def trace_signatures(*, trace: Trace) -> TraceSignatures:
    """The trace's blocks in written order, each as its id and signature (one query)."""
    rows = (
        Block.objects.filter(trace=trace)
        .annotate(payload_text=ExpressionWrapper(F("payload"), output_field=TextField()))
        .order_by(*WRITTEN_ORDER)
        .values_list("id", "sub_type", "payload_text")
    )
    ids, signatures = [], []
    for block_id, sub_type, text in rows.iterator(chunk_size=2000):
        try:
            payload = orjson.loads(text) if text is not None else None
        except orjson.JSONDecodeError:
            payload = text
        ids.append(block_id)
        signatures.append(signature_of(sub_type, payload))
    return TraceSignatures(ids=ids, signatures=signatures)


# --- alignment ---------------------------------------------------------------------------


def _patience_anchors(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    """Pairs (i, j) of elements that occur exactly once in a and once in b, the longest
    increasing run of them (both indexes increasing)."""
    count_a: dict[int, int] = {}
    for x in a:
        count_a[x] = count_a.get(x, 0) + 1
    where_b: dict[int, int] = {}
    count_b: dict[int, int] = {}
    for j, x in enumerate(b):
        count_b[x] = count_b.get(x, 0) + 1
        where_b[x] = j
    pairs = [(i, where_b[x]) for i, x in enumerate(a) if count_a[x] == 1 and count_b.get(x) == 1]
    # Longest increasing subsequence of the j's (patience sorting), O(n log n).
    tails: list[int] = []  # j of the smallest tail of each length
    tail_at: list[int] = []  # index in pairs of that tail
    back: list[int] = [-1] * len(pairs)
    for p, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(p)
        else:
            tails[k] = j
            tail_at[k] = p
        back[p] = tail_at[k - 1] if k > 0 else -1
    out: list[tuple[int, int]] = []
    p = tail_at[-1] if tail_at else -1
    while p != -1:
        out.append(pairs[p])
        p = back[p]
    out.reverse()
    return out


def _lcs(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    """A longest common subsequence of a and b, as matched pairs: the dynamic programme,
    O(len(a) * len(b)) (a region of at most CELLS)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below, x = table[i], table[i + 1], a[i]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if x == b[j] else max(below[j], row[j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


class _Cells:
    """The exact-alignment cells one alignment may still spend (ALIGN_CELLS)."""

    def __init__(self) -> None:
        self.left = ALIGN_CELLS

    def take(self, cells: int) -> bool:
        if cells > CELLS or cells > self.left:
            return False
        self.left -= cells
        return True


def _match(a: Sequence[Hashable], b: Sequence[Hashable], cells: _Cells) -> list[tuple[int, int]]:
    """Matched pairs (i, j) of equal elements of a and b, both increasing: a bounded
    longest common subsequence (see the module's docstring)."""
    codes: dict[Hashable, int] = {}
    ca = [codes.setdefault(x, len(codes)) for x in a]
    cb = [codes.setdefault(x, len(codes)) for x in b]
    pairs: list[tuple[int, int]] = []
    stack = [(0, len(ca), 0, len(cb))]
    while stack:
        a0, a1, b0, b1 = stack.pop()
        # common prefix and suffix
        while a0 < a1 and b0 < b1 and ca[a0] == cb[b0]:
            pairs.append((a0, b0))
            a0 += 1
            b0 += 1
        while a0 < a1 and b0 < b1 and ca[a1 - 1] == cb[b1 - 1]:
            a1 -= 1
            b1 -= 1
            pairs.append((a1, b1))
        if a0 == a1 or b0 == b1:
            continue
        if cells.take((a1 - a0) * (b1 - b0)):
            pairs.extend((a0 + i, b0 + j) for i, j in _lcs(ca[a0:a1], cb[b0:b1]))
            continue
        anchors = _patience_anchors(ca[a0:a1], cb[b0:b1])
        if not anchors:
            continue  # too large to align, and nothing unique to anchor it: unmatched
        pi, pj = a0, b0
        for i, j in anchors:
            pairs.append((a0 + i, b0 + j))
            stack.append((pi, a0 + i, pj, b0 + j))
            pi, pj = a0 + i + 1, b0 + j + 1
        stack.append((pi, a1, pj, b1))
    pairs.sort()
    return pairs


def _kind(signature: Signature) -> tuple[str, str]:
    return signature[0], signature[1]


def align(a: Sequence[Signature], b: Sequence[Signature]) -> list[Step]:
    """The steps of the alignment of two signature lists, in order (module docstring)."""
    steps: list[Step] = []
    cells = _Cells()

    def gap(a0: int, a1: int, b0: int, b1: int) -> None:
        """An unmatched stretch: pair blocks of the same kind and name, differing."""
        if a0 == a1 or b0 == b1:
            steps.extend((i, None, False) for i in range(a0, a1))
            steps.extend((None, j, False) for j in range(b0, b1))
            return
        pi, pj = a0, b0
        for i, j in _match([_kind(s) for s in a[a0:a1]], [_kind(s) for s in b[b0:b1]], cells):
            i, j = a0 + i, b0 + j
            steps.extend((x, None, False) for x in range(pi, i))
            steps.extend((None, y, False) for y in range(pj, j))
            steps.append((i, j, False))
            pi, pj = i + 1, j + 1
        steps.extend((x, None, False) for x in range(pi, a1))
        steps.extend((None, y, False) for y in range(pj, b1))

    pi, pj = 0, 0
    for i, j in _match(a, b, cells):
        gap(pi, i, pj, j)
        steps.append((i, j, True))
        pi, pj = i + 1, j + 1
    gap(pi, len(a), pj, len(b))
    return steps


@dataclass(frozen=True)
class TraceComparison:
    a: Trace
    b: Trace
    a_ids: list[str]
    b_ids: list[str]
    a_signatures: list[Signature]
    b_signatures: list[Signature]
    steps: list[Step]

    @property
    def first_divergence(self) -> int | None:
        """The index of the first step that is not `same`; None when the runs are alike."""
        for n, (_, _, same) in enumerate(self.steps):
            if not same:
                return n
        return None

    def step_ids(self, step: Step) -> tuple[str | None, str | None]:
        i, j, _ = step
        return (
            self.a_ids[i] if i is not None else None,
            self.b_ids[j] if j is not None else None,
        )

    @property
    def same_count(self) -> int:
        return sum(1 for _, _, same in self.steps if same)


def trace_compare(*, a: Trace, b: Trace) -> TraceComparison:
    """Two traces aligned step by step (the module's docstring)."""
    sa = trace_signatures(trace=a)
    sb = trace_signatures(trace=b)
    return TraceComparison(
        a=a,
        b=b,
        a_ids=sa.ids,
        b_ids=sb.ids,
        a_signatures=sa.signatures,
        b_signatures=sb.signatures,
        steps=align(sa.signatures, sb.signatures),
    )


def blocks_by_id(*, trace: Trace, block_ids: list[str]) -> dict[str, Block]:
    """The blocks of `trace` with these ids (one query), for the steps a page shows."""
    if not block_ids:
        return {}
    rows = Block.objects.filter(trace=trace, id__in=block_ids).only(
        "id", "trace", "sub_type", "payload"
    )
    return {b.pk: b for b in rows}


def lane_of(sub_type: str) -> str:
    kind = kinds.kind_of(sub_type)
    return kind.lane if kind is not None else ""


# --- other trials of a task --------------------------------------------------------------


def task_key_of(trace: Trace) -> str | None:
    """The key naming the trace's task in its metadata (the dataset page's default)."""
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    return default_group_key(list(metadata))


def task_value_of(trace: Trace, key: str) -> str | None:
    """The task's value as the metadata filter takes it (strings as they are)."""
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    if key not in metadata:
        return None
    value = metadata[key]
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def other_trials(*, trace: Trace, limit: int = 50) -> list[Trace]:
    """Other traces of the trace's dataset with the same task, those with another outcome
    first (a passing trial for a failed one), then in the dataset's order."""
    if trace.dataset_id is None:
        return []
    key = task_key_of(trace)
    value = task_value_of(trace, key) if key else None
    if key is None or value is None:
        return []
    rows = traces_with_metadata_value(
        traces=Trace.objects.filter(dataset_id=trace.dataset_id).exclude(pk=trace.pk),
        key=key,
        value=value,
    )
    found = list(rows.order_by("index", "id")[:limit])
    passed = trace.reward is not None and succeeded(trace.reward)

    def other_outcome(t: Trace) -> bool:
        return (t.reward is not None and succeeded(t.reward)) != passed

    return sorted(found, key=lambda t: not other_outcome(t))


def trials_of_task(*, dataset: Dataset, key: str, value: str) -> tuple[Trace, Trace] | None:
    """A representative pair of trials of one task: a failed one and a passing one when
    there are both, else the first two; None with fewer than two."""
    rows = traces_with_metadata_value(traces=dataset.traces.all(), key=key, value=value)
    found = list(rows.order_by("index", "id")[:500])
    if len(found) < 2:
        return None
    passing = [t for t in found if t.reward is not None and succeeded(t.reward)]
    failing = [t for t in found if not (t.reward is not None and succeeded(t.reward))]
    if passing and failing:
        return failing[0], passing[0]
    return found[0], found[1]


# --- datasets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One side of a dataset comparison: a dataset, or the slice of it whose
    metadata[slice_key] is slice_value."""

    dataset: Dataset
    slice_key: str | None = None
    slice_value: str | None = None

    @property
    def label(self) -> str:
        if self.slice_key:
            return f"{self.dataset.name} [{self.slice_key}={self.slice_value}]"
        return self.dataset.name

    def traces(self) -> QuerySet[Trace]:
        rows = Trace.objects.filter(dataset=self.dataset)
        if self.slice_key is not None and self.slice_value is not None:
            rows = traces_with_metadata_value(
                traces=rows, key=self.slice_key, value=self.slice_value
            )
        return rows


@dataclass
class TaskRow:
    task: Any  # the task id, as stored in metadata (a string, a number...)
    n_a: int
    n_b: int
    successes_a: int
    successes_b: int
    pass_at_a: list[float | None] = field(default_factory=list)
    pass_at_b: list[float | None] = field(default_factory=list)
    pass_hat_a: list[float | None] = field(default_factory=list)
    pass_hat_b: list[float | None] = field(default_factory=list)
    pair: tuple[str, str] | None = None  # (a trace, b trace) of a flipped task

    @property
    def success_a(self) -> float:
        return self.successes_a / self.n_a

    @property
    def success_b(self) -> float:
        return self.successes_b / self.n_b

    @property
    def difference(self) -> float:
        return self.success_b - self.success_a

    @property
    def flipped(self) -> str | None:
        """ "a" when only A ever solves it, "b" when only B does, else None."""
        if self.successes_a and not self.successes_b:
            return "a"
        if self.successes_b and not self.successes_a:
            return "b"
        return None


@dataclass(frozen=True)
class Proportion:
    successes: int
    total: int
    low: float | None
    high: float | None

    @property
    def value(self) -> float | None:
        return self.successes / self.total if self.total else None


@dataclass(frozen=True)
class Summary:
    shared_tasks: int
    accuracy_a: Proportion
    accuracy_b: Proportion
    mean_difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    statistic: float | None
    test: str
    solved_a: int  # shared tasks solved at least once
    solved_b: int

    @property
    def significant(self) -> bool | None:
        return None if self.p_value is None else self.p_value < 0.05

    def in_words(self, name_a: str = "A", name_b: str = "B") -> str:
        """What the numbers say, in one sentence."""
        if self.shared_tasks == 0:
            return f"{name_a} and {name_b} share no task: nothing to compare."
        more = self.solved_b - self.solved_a
        if more > 0:
            head = f"{name_b} solves {more} more task{'s' if more != 1 else ''} than {name_a}"
        elif more < 0:
            head = f"{name_b} solves {-more} fewer task{'s' if more != -1 else ''} than {name_a}"
        else:
            head = f"{name_a} and {name_b} solve as many tasks"
        head += f" (of {self.shared_tasks} shared)"
        if self.p_value is None:
            return head + "; no task's success rate differs, so there is no test to run."
        verdict = "is" if self.significant else "is not"
        return (
            f"{head}; the difference in per-task success {verdict} significant at 5% "
            f"({self.test}, p = {self.p_value:.3g})."
        )


@dataclass(frozen=True)
class DatasetComparison:
    a: Side
    b: Side
    key: str | None
    ks_a: list[int]  # the k of pass@k / pass^k shown for A (up to its most trials of a task)
    ks_b: list[int]
    tasks: list[TaskRow]  # shared tasks, by difference (B - A), largest first
    only_a: int  # tasks on one side only
    only_b: int
    summary: Summary

    @property
    def flipped(self) -> list[TaskRow]:
        return [t for t in self.tasks if t.flipped]


def _task_rows(side: Side, key: str | None) -> tuple[dict[str, list[tuple[str, bool]]], int, int]:
    """Per task (the JSON text of its value): its traces as (id, succeeded); and the
    side's trace and success counts. One query (no tasks when there is no key)."""
    sql, params = metadata_value_sql(key) if key else ("NULL", [])
    rows = (
        side.traces()
        .order_by("index", "id")
        .annotate(task_value=RawSQL(sql, params, output_field=TextField()))
        .values_list("id", "task_value", "reward")
    )
    tasks: dict[str, list[tuple[str, bool]]] = {}
    total = wins = 0
    for trace_id, value, reward in rows.iterator(chunk_size=2000):
        ok = reward is not None and succeeded(reward)
        total += 1
        wins += ok
        if value is not None and value != "null":
            tasks.setdefault(value, []).append((trace_id, ok))
    return tasks, total, wins


def _scipy_stats():
    """scipy.stats, imported on first use: importing it costs over a second of CPU (numpy,
    its distributions), which every process serving any page (each gunicorn worker, each
    test worker) paid at start for the compare page alone."""
    from scipy import stats

    return stats


def wilson(successes: int, total: int) -> Proportion:
    """A share with its 95% Wilson score interval (scipy's binomtest)."""
    if total == 0:
        return Proportion(successes, total, None, None)
    stats = _scipy_stats()
    ci = stats.binomtest(successes, total).proportion_ci(confidence_level=0.95, method="wilson")
    return Proportion(successes, total, float(ci.low), float(ci.high))


def paired_statistics(
    differences: list[float], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[Any, ...]:
    """(mean, ci_low, ci_high, statistic, p_value) of paired differences: Student's t
    interval of the mean, within `bounds` (where the mean must lie), and the Wilcoxon
    signed-rank test (scipy's defaults). The test is None when no difference is non-zero;
    the interval when fewer than two."""
    n = len(differences)
    if n == 0:
        return None, None, None, None, None
    mean = math.fsum(differences) / n
    stats = _scipy_stats()
    low = high = None
    if n >= 2:
        if all(d == differences[0] for d in differences):
            low = high = mean
        else:
            ci = stats.ttest_1samp(differences, 0.0).confidence_interval(0.95)
            low, high = max(bounds[0], float(ci.low)), min(bounds[1], float(ci.high))
    statistic = p_value = None
    if any(d != 0 for d in differences):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns of ties and small samples
            result = stats.wilcoxon(differences)
        statistic, p_value = float(result.statistic), float(result.pvalue)
        if math.isnan(p_value):
            statistic = p_value = None
    return mean, low, high, statistic, p_value


WILCOXON = "Wilcoxon signed-rank test (scipy.stats.wilcoxon, two-sided)"


def common_task_key(a: Side, b: Side) -> str | None:
    """The task key of the comparison: the dataset page's default among the keys both
    sides have."""
    keys_a = set(metadata_keys(traces=a.traces()))
    keys_b = set(metadata_keys(traces=b.traces()))
    return default_group_key(sorted(keys_a & keys_b))


def dataset_compare(*, a: Side, b: Side, key: str | None = None) -> DatasetComparison:
    """Two datasets (or slices) task by task (the module's docstring)."""
    key = key or common_task_key(a, b)
    tasks_a, total_a, wins_a = _task_rows(a, key)
    tasks_b, total_b, wins_b = _task_rows(b, key)
    shared = [t for t in tasks_a if t in tasks_b]
    # pass@k and pass^k for k up to the most trials of a shared task, on each side
    ks_a = list(range(1, min(PASS_K_MAX, max((len(tasks_a[t]) for t in shared), default=0)) + 1))
    ks_b = list(range(1, min(PASS_K_MAX, max((len(tasks_b[t]) for t in shared), default=0)) + 1))
    rows = []
    for value in shared:
        ta, tb = tasks_a[value], tasks_b[value]
        ca, cb = sum(ok for _, ok in ta), sum(ok for _, ok in tb)
        row = TaskRow(
            task=orjson.loads(value),
            n_a=len(ta),
            n_b=len(tb),
            successes_a=ca,
            successes_b=cb,
            pass_at_a=[pass_at_k(len(ta), ca, k) for k in ks_a],
            pass_at_b=[pass_at_k(len(tb), cb, k) for k in ks_b],
            pass_hat_a=[pass_hat_k(len(ta), ca, k) for k in ks_a],
            pass_hat_b=[pass_hat_k(len(tb), cb, k) for k in ks_b],
        )
        if row.flipped == "b":
            row.pair = (next(i for i, ok in ta if not ok), next(i for i, ok in tb if ok))
        elif row.flipped == "a":
            row.pair = (next(i for i, ok in ta if ok), next(i for i, ok in tb if not ok))
        rows.append(row)
    # Largest difference first, either way (a loss of 0.75 before a loss of 0.5), then
    # gains before losses of the same size.
    rows.sort(key=lambda r: (-abs(r.difference), -r.difference, str(r.task)))
    differences = [r.success_b - r.success_a for r in rows]
    mean, low, high, statistic, p_value = paired_statistics(differences, bounds=(-1.0, 1.0))
    summary = Summary(
        shared_tasks=len(rows),
        accuracy_a=wilson(wins_a, total_a),
        accuracy_b=wilson(wins_b, total_b),
        mean_difference=mean,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        statistic=statistic,
        test=WILCOXON,
        solved_a=sum(1 for r in rows if r.successes_a),
        solved_b=sum(1 for r in rows if r.successes_b),
    )
    return DatasetComparison(
        a=a,
        b=b,
        key=key,
        ks_a=ks_a,
        ks_b=ks_b,
        tasks=rows,
        only_a=sum(1 for t in tasks_a if t not in tasks_b),
        only_b=sum(1 for t in tasks_b if t not in tasks_a),
        summary=summary,
    )
