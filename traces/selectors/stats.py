"""Reward statistics of datasets, and the trace list of the dataset page, as SQL.

Definitions (the pages show them in their tooltips):

- A trace *has a reward* when its `reward` column is set (extra.reward, else
  metadata.reward; booleans count as 1/0).
- *Mean reward*: the mean over the traces that have one.
- A trace *succeeded* when its reward is 1 (within 1e-6, tau-bench's rule).
- *Accuracy*: the share of the rewarded traces that succeeded, when every reward lies
  within [0, 1]: a trace succeeds exactly when accuracy counts it as a success
  (DESIGN.md), so the dataset pages and the comparison of datasets agree. With 0/1
  rewards (tau-bench, SWE-bench resolved) it is the mean reward; with partial credit the
  mean credit is the mean reward, shown beside it. When some reward lies outside [0, 1]
  (a score, a negative penalty) there is no accuracy: only the mean reward is shown.
- Per group of traces sharing a metadata value (a task, by default `task_id`), with n
  rewarded trials of which c succeeded:
  pass@k = 1 - C(n-c, k) / C(n, k)  (at least one of k trials succeeds; unbiased, Chen
  et al. 2021), pass^k = C(c, k) / C(n, k)  (all k trials succeed; tau-bench). The
  dataset's value is the mean over the groups with at least k rewarded trials.
- A trace is *annotated* when its own `extra` holds any key, any of its blocks has a
  non-empty `extra`, or it or a block has a label or comment (an `Annotation`): someone
  (or some code) wrote on it after the import.

Trace metadata is JSON kept as text (traces.jsontext); reading one of its keys is done
by each database's JSON functions: SQLite's json_each, PostgreSQL's `json` type (not
jsonb, which refuses the \\u0000 that metadata may hold).
"""

import math
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import connection
from django.db.models import (
    Avg,
    Count,
    Exists,
    F,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Floor

from traces import jsontext
from traces.models import TOTAL_TOKENS, Annotation, Block, Dataset, SubType, Trace
from traces.rewards import SUCCESS, succeeded
from traces.trials import TASK_KEYS

PASS_K_MAX = 5
MAX_KEYS = 200
# Grouping by metadata is bounded (harden F3): only keys up to GROUP_KEY_MAX_CHARS are
# offered, and values are grouped by their first GROUP_VALUE_MAX_CHARS characters (of
# their JSON text), so that megabyte values cost no more than short ones to show.
GROUP_KEY_MAX_CHARS = 100
GROUP_VALUE_MAX_CHARS = 200
_EMPTY: dict = {}  # an empty `extra` (stored as the text {})


# --- one number per dataset ----------------------------------------------------------


def _succeeded(reward: str = "reward") -> Q:
    """traces.rewards.succeeded in SQL, on the reward column `reward` names."""
    return Q(**{f"{reward}__gte": SUCCESS, f"{reward}__lte": 2 - SUCCESS})


def accuracy_of(
    *, successes: int, rewarded: int, lowest: float | None, highest: float | None
) -> float | None:
    """The accuracy as defined above: the share of rewarded traces that succeeded, when
    all rewards are within [0, 1]."""
    if not rewarded or lowest is None or highest is None:
        return None
    if lowest < 0 or highest > 1:
        return None
    return successes / rewarded


@dataclass(frozen=True)
class RewardSummary:
    traces: int
    rewarded: int
    mean: float | None
    lowest: float | None
    highest: float | None
    successes: int
    non_binary: int  # rewards other than 0 and 1
    non_integer: int
    latest: Any = None  # the latest updated_at of the traces

    @property
    def accuracy(self) -> float | None:
        return accuracy_of(
            successes=self.successes, rewarded=self.rewarded, lowest=self.lowest,
            highest=self.highest,
        )  # fmt: skip

    @property
    def binary(self) -> bool:
        return self.rewarded > 0 and self.non_binary == 0


# Up to this many distinct rewards, one GROUP BY gives the summary and the histogram.
DISTINCT_REWARDS_MAX = 1000
Distribution = list[tuple[float | None, int, Any]]  # (reward, traces, latest updated_at)


def reward_distribution(*, traces: QuerySet[Trace]) -> Distribution | None:
    """How many traces have each reward, in one query; None when the rewards take too
    many distinct values for that to be cheaper than aggregates."""
    rows = list(
        traces.order_by()
        .values_list("reward")
        .annotate(n=Count("id"), latest=Max("updated_at"))
        .values_list("reward", "n", "latest")[: DISTINCT_REWARDS_MAX + 1]
    )
    return None if len(rows) > DISTINCT_REWARDS_MAX else rows


def _summary_of(distribution: Distribution) -> RewardSummary:
    rewarded = [(r, n) for r, n, _ in distribution if r is not None]
    count = sum(n for _, n in rewarded)
    latest = [at for _, _, at in distribution if at is not None]
    return RewardSummary(
        traces=sum(n for _, n, _ in distribution),
        rewarded=count,
        mean=(sum(r * n for r, n in rewarded) / count) if count else None,
        lowest=min((r for r, _ in rewarded), default=None),
        highest=max((r for r, _ in rewarded), default=None),
        successes=sum(n for r, n in rewarded if succeeded(r)),
        non_binary=sum(n for r, n in rewarded if r not in (0.0, 1.0)),
        non_integer=sum(n for r, n in rewarded if r != math.floor(r)),
        latest=max(latest, default=None),
    )


def reward_summary(
    *, traces: QuerySet[Trace], distribution: Distribution | None = None
) -> RewardSummary:
    """Counts, mean, range and successes of the rewards of `traces`, in one query (none
    when their `distribution` is given)."""
    if distribution is not None:
        return _summary_of(distribution)
    row = traces.aggregate(
        traces=Count("id"),
        rewarded=Count("reward"),
        mean=Avg("reward"),
        lowest=Min("reward"),
        highest=Max("reward"),
        successes=Count("id", filter=_succeeded()),
        non_binary=Count("id", filter=Q(reward__isnull=False) & ~Q(reward__in=[0.0, 1.0])),
        non_integer=Count("id", filter=Q(reward__isnull=False) & ~Q(reward=Floor(F("reward")))),
        latest=Max("updated_at"),
    )
    return RewardSummary(**row)


@dataclass(frozen=True)
class UsageSummary:
    """The usage figures of some traces (Trace.input_tokens, output_tokens, cost_usd,
    duration_seconds): totals and means over the traces that have each, and how many
    do."""

    with_tokens: int
    input_tokens: int | None
    output_tokens: int | None
    with_cost: int
    cost: float | None
    mean_cost: float | None
    with_duration: int
    duration: float | None
    mean_duration: float | None

    @property
    def known(self) -> bool:
        return bool(self.with_tokens or self.with_cost or self.with_duration)


def usage_summary(*, traces: QuerySet[Trace]) -> UsageSummary:
    """Totals and means of the usage figures of `traces`, in one query."""
    tokens_known = Q(input_tokens__isnull=False) | Q(output_tokens__isnull=False)
    row = traces.aggregate(
        with_tokens=Count("id", filter=tokens_known),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        with_cost=Count("cost_usd"),
        cost=Sum("cost_usd"),
        mean_cost=Avg("cost_usd"),
        with_duration=Count("duration_seconds"),
        duration=Sum("duration_seconds"),
        mean_duration=Avg("duration_seconds"),
    )
    return UsageSummary(**row)


def usage_columns(*, traces: QuerySet[Trace]) -> dict[str, bool]:
    """Which usage figures any of `traces` has (the trace list shows only those columns):
    each one step into its sort index (traces/models.py). Asked as ">= 0", which the
    figures' constraints make the same as "is known": SQLite walks an index range for it,
    but for IS NOT NULL every entry of the dataset (82 ms at a million traces)."""
    return {
        "tokens": traces.annotate(total=TOTAL_TOKENS).filter(total__gte=0).exists(),
        "cost": traces.filter(cost_usd__gte=0).exists(),
        "duration": traces.filter(duration_seconds__gte=0).exists(),
    }


def datasets_with_stats(*, datasets: QuerySet[Dataset]) -> QuerySet[Dataset]:
    """`datasets` with trace_count, rewarded, mean_reward, successes, reward_min,
    reward_max and last_update (the latest change of the dataset or of one of its
    traces), newest first.

    Annotated on a fresh queryset, so that the joins of the access rules (which may
    repeat a dataset once per membership) never multiply the counts.
    """
    return (
        Dataset.objects.filter(pk__in=datasets.values("pk"))
        .select_related("organization")
        .annotate(
            trace_count=Count("traces"),
            rewarded=Count("traces__reward"),
            mean_reward=Avg("traces__reward"),
            successes=Count("traces__reward", filter=_succeeded("traces__reward")),
            reward_min=Min("traces__reward"),
            reward_max=Max("traces__reward"),
            last_update=Coalesce(Max("traces__updated_at"), F("updated_at")),
        )
        .order_by("-last_update", "-id")
    )


def dataset_accuracy(dataset: Dataset) -> float | None:
    """The accuracy of a dataset annotated by `datasets_with_stats`."""
    return accuracy_of(
        successes=dataset.successes, rewarded=dataset.rewarded, lowest=dataset.reward_min,
        highest=dataset.reward_max,
    )  # fmt: skip


# --- the reward histogram ------------------------------------------------------------


@dataclass(frozen=True)
class Bin:
    label: str
    low: float
    high: float
    count: int
    closed: bool  # the upper edge is included (the last bin)

    @property
    def title(self) -> str:
        if self.low == self.high:
            span = f"reward {_num(self.low)}"
        else:
            span = f"reward {_num(self.low)} to {_num(self.high)}"
            span += " inclusive" if self.closed else " (exclusive)"
        return f"{span}: {self.count} trace{'s' if self.count != 1 else ''}"


@dataclass(frozen=True)
class Histogram:
    kind: str  # "binary", "unit" (ten bins over 0..1), "integer", "range", "empty"
    bins: list[Bin]
    unrewarded: int

    @property
    def tallest(self) -> int:
        return max((b.count for b in self.bins), default=0)


def _num(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3g}"


def _edges(summary: RewardSummary) -> tuple[str, list[tuple[str, float, float, bool]]]:
    lo, hi = summary.lowest, summary.highest
    if summary.rewarded == 0 or lo is None or hi is None:
        return "empty", []
    if summary.binary:
        return "binary", [("0", 0.0, 0.0, True), ("1", 1.0, 1.0, True)]
    if lo >= 0 and hi <= 1:
        edges = [(round(i / 10, 1), round((i + 1) / 10, 1)) for i in range(10)]
        return "unit", [(f"{a:.1f}", a, b, i == 9) for i, (a, b) in enumerate(edges)]
    if summary.non_integer == 0 and hi - lo <= 20:
        values = range(int(lo), int(hi) + 1)
        return "integer", [(str(v), float(v), float(v), True) for v in values]
    # Each edge a weighted mean of lo and hi, never lo + i * (hi - lo) / 10: with extreme
    # floats (±1.7e308) that difference is infinite and the edges would be NaN.
    edges = [lo * (1 - i / 10) + hi * (i / 10) for i in range(10)] + [hi]
    return "range", [(_num(edges[i]), edges[i], edges[i + 1], i == 9) for i in range(10)]


def _in_bin(reward: float, a: float, b: float, closed: bool) -> bool:
    if a == b:
        return reward == a
    return a <= reward <= b if closed else a <= reward < b


def reward_histogram(
    *,
    traces: QuerySet[Trace],
    summary: RewardSummary | None = None,
    distribution: Distribution | None = None,
) -> Histogram:
    """Bars of the rewards of `traces`: 0 and 1 for 0/1 rewards, ten bins over [0, 1] for
    rewards within it, one bar per value for small integer scores, else ten equal bins
    between the lowest and the highest reward. One query for all bins (none when the
    rewards' `distribution` is given)."""
    summary = summary or reward_summary(traces=traces, distribution=distribution)
    kind, edges = _edges(summary)
    if distribution is not None:
        found = {
            f"bin{n}": sum(
                count
                for reward, count, _ in distribution
                if reward is not None and _in_bin(reward, a, b, closed)
            )
            for n, (_, a, b, closed) in enumerate(edges)
        }
    else:
        counts: dict[str, Any] = {}
        for n, (_, a, b, closed) in enumerate(edges):
            if a == b:
                q = Q(reward=a)
            elif closed:
                q = Q(reward__gte=a, reward__lte=b)
            else:
                q = Q(reward__gte=a, reward__lt=b)
            counts[f"bin{n}"] = Count("id", filter=q)
        found = traces.aggregate(**counts) if counts else {}
    bins = [
        Bin(label=label, low=a, high=b, count=found[f"bin{n}"], closed=closed)
        for n, (label, a, b, closed) in enumerate(edges)
    ]
    return Histogram(kind=kind, bins=bins, unrewarded=summary.traces - summary.rewarded)


# --- metadata keys -------------------------------------------------------------------


def pg_json(column: str) -> str:
    """`column` (JSON kept as text) as PostgreSQL's json type. Its JSON functions turn every
    string of the document into text and refuse U+0000 there, so the escape is read as
    U+FFFD: a NUL in one value must not break the query of a whole dataset."""
    return f"(replace({column}, '\\u0000', '\\ufffd')::json)"


def pg_text(value: str) -> str:
    """A key or JSON text to compare with what `pg_json` reads: NUL as it reads it (a
    parameter with NUL would fail the query)."""
    return value.replace("\x00", "\ufffd").replace("\\u0000", "\\ufffd")


def _sqlite_metadata(nul: bool) -> str:
    """The metadata column for SQLite's json_each, which cuts a string at its first NUL:
    when a filter holds NUL, NUL is read as U+FFFD there too, as on PostgreSQL."""
    if nul:
        return "replace(traces_trace.metadata, '\\u0000', '\\ufffd')"
    return "traces_trace.metadata"


def metadata_value_sql(key: str, *, nul: bool = False) -> tuple[str, list[Any]]:
    """SQL for the JSON text of `metadata[key]` of the current trace row (NULL if absent);
    `nul`: NUL read as U+FFFD (see `_sqlite_metadata`)."""
    if connection.vendor == "postgresql":
        return f"({pg_json('traces_trace.metadata')} -> %s)::text", [pg_text(key)]
    return (
        "(SELECT CASE e.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
        "WHEN 'null' THEN 'null' WHEN 'object' THEN e.value WHEN 'array' THEN e.value "
        "ELSE json_quote(e.value) END "
        f"FROM json_each({_sqlite_metadata(nul)}) AS e WHERE e.key = %s LIMIT 1)",
        [key.replace("\x00", "\ufffd") if nul else key],
    )


def metadata_keys(*, traces: QuerySet[Trace]) -> list[str]:
    """The keys present in the metadata of `traces`, sorted (at most MAX_KEYS, each of at
    most GROUP_KEY_MAX_CHARS characters)."""
    ids_sql, ids_params = traces.values("id").query.sql_with_params()
    if connection.vendor == "postgresql":
        sql = (
            "SELECT DISTINCT k FROM traces_trace t, "
            f"LATERAL json_object_keys(CASE WHEN json_typeof({pg_json('t.metadata')}) = 'object' "
            f"THEN {pg_json('t.metadata')} ELSE '{{}}'::json END) AS k "
            f"WHERE t.id IN ({ids_sql}) AND length(k) <= {GROUP_KEY_MAX_CHARS} "
            f"ORDER BY k LIMIT {MAX_KEYS}"
        )
    else:
        sql = (
            "SELECT DISTINCT e.key FROM traces_trace t, json_each(t.metadata) AS e "
            f"WHERE json_type(t.metadata) = 'object' AND t.id IN ({ids_sql}) "
            f"AND length(e.key) <= {GROUP_KEY_MAX_CHARS} ORDER BY e.key LIMIT {MAX_KEYS}"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, ids_params)
        return [row[0] for row in cursor.fetchall()]


GROUP_KEY_PREFERENCE = TASK_KEYS


def default_group_key(keys: list[str]) -> str | None:
    """`task_id` where traces have it, else the first other usual task key, else none."""
    for key in GROUP_KEY_PREFERENCE:
        if key in keys:
            return key
    return None


# --- rewards grouped by a metadata key, with pass@k ----------------------------------


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """At least one of k trials (drawn from n, c of them successes) succeeds."""
    if k < 1 or n < k:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """All k trials (drawn from n, c of them successes) succeed (tau-bench's pass^k)."""
    if k < 1 or n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


@dataclass(frozen=True)
class Group:
    value_json: str | None  # the JSON text of the value, None when the key is missing
    count: int
    rewarded: int
    mean: float | None
    successes: int
    pass_at: list[float | None]  # k = 1..len
    pass_hat: list[float | None]

    @property
    def cut(self) -> bool:
        """The value is longer than GROUP_VALUE_MAX_CHARS: the group holds every value that
        begins as `value_json` does."""
        return self.value_json is not None and len(self.value_json) > GROUP_VALUE_MAX_CHARS

    @property
    def value(self) -> Any:
        if self.value_json is None:
            return None
        if self.cut:
            return self.value_json[:GROUP_VALUE_MAX_CHARS] + "…"
        return orjson.loads(self.value_json)

    @property
    def missing(self) -> bool:
        return self.value_json is None

    @property
    def filter_value(self) -> str:
        """What the key=value filter takes to select this group: strings as they are,
        other values as compact JSON (a cut value: its beginning, with an ellipsis)."""
        value = self.value
        return value if isinstance(value, str) else jsontext.dumps(value)


@dataclass(frozen=True)
class GroupTable:
    key: str
    ks: list[int]
    groups: list[Group]
    pass_at: list[float | None]  # mean over groups with at least k rewarded trials
    pass_hat: list[float | None]
    groups_counted: list[int]  # how many groups each mean is over
    mean: float | None
    total_groups: int = 0
    rows: list[Group] = field(default_factory=list)  # the groups shown (at most `limit`)


def _sort_key(group: Group) -> tuple:
    if group.value_json is None:
        return (3, "")
    value = group.value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return (2, group.value_json)
    if isinstance(value, str):
        # "task-2" before "task-10": digits compare as numbers.
        parts = [(0, int(p), "") if _digit(p[0]) else (1, 0, p) for p in _split_digits(value)]
        return (1, parts)
    return (0, value)


def _split_digits(text: str) -> list[str]:
    out, current = [], ""
    for ch in text:
        if current and _digit(ch) != _digit(current[-1]):
            out.append(current)
            current = ""
        current += ch
    if current:
        out.append(current)
    return out


def _digit(ch: str) -> bool:
    return "0" <= ch <= "9"  # str.isdigit() takes "²", which int() refuses


def _digit_run(text: str) -> bool:
    return bool(text) and all(map(_digit, text))


def group_sort_known(sort: str) -> bool:
    """Whether `sort` names a column of the groups table ("-" before it: descending)."""
    name = sort.removeprefix("-")
    if name in ("value", "count", "mean"):
        return True
    for prefix in ("pass", "hat"):
        if name.startswith(prefix) and _digit_run(name[len(prefix) :]):
            return 1 <= int(name[len(prefix) :]) <= PASS_K_MAX
    return False


def _group_figure(group: Group, name: str) -> float | None:
    if name == "count":
        return group.count
    if name == "mean":
        return group.mean
    figures = group.pass_at if name.startswith("pass") else group.pass_hat
    k = int(name.removeprefix("pass").removeprefix("hat"))
    return figures[k - 1] if k <= len(figures) else None


def _sorted_groups(groups: list[Group], sort: str) -> list[Group]:
    """The groups by value (digits as numbers), or by a figure, ties by value; the group
    without the key, and groups without the figure, last either way."""
    groups = sorted(groups, key=_sort_key)
    name, descending = sort.removeprefix("-"), sort.startswith("-")
    if name == "value":
        keyed = [g for g in groups if not g.missing]
        return (keyed[::-1] if descending else keyed) + [g for g in groups if g.missing]
    known, rest = [], []
    for group in groups:
        has = not group.missing and _group_figure(group, name) is not None
        (known if has else rest).append(group)
    known.sort(key=lambda g: _group_figure(g, name), reverse=descending)  # stable: ties by value
    return known + rest


def rewards_by_key(
    *,
    traces: QuerySet[Trace],
    key: str,
    k_max: int = PASS_K_MAX,
    limit: int = 200,
    sort: str = "value",
) -> GroupTable:
    """Rewards of `traces` grouped by the value of metadata[key]: count, mean reward,
    successes and pass@k / pass^k for k = 1..min(k_max, most rewarded trials in a group),
    the groups in the order `sort` names (group_sort_known), the first `limit` shown.
    One GROUP BY query; pass@k is computed from its counts."""
    sql, params = metadata_value_sql(key)
    sql = f"substr({sql}, 1, {GROUP_VALUE_MAX_CHARS + 1})"
    rows = (
        traces.order_by()
        .annotate(group_value=RawSQL(sql, params, output_field=TextField()))
        .values("group_value")
        .annotate(
            count=Count("id"),
            rewarded=Count("reward"),
            mean=Avg("reward"),
            successes=Count("id", filter=_succeeded()),
        )
    )
    found = list(rows)
    top = max((r["rewarded"] for r in found if r["group_value"] is not None), default=0)
    ks = list(range(1, min(k_max, top) + 1))
    groups = []
    for r in found:
        n, c = r["rewarded"], r["successes"]
        # Traces without the key are no task's trials: no pass@k of them (their rewards
        # still count in the mean of their row).
        trials = ks if r["group_value"] is not None else []
        groups.append(
            Group(
                value_json=r["group_value"],
                count=r["count"],
                rewarded=n,
                mean=r["mean"],
                successes=c,
                pass_at=[pass_at_k(n, c, k) if k in trials else None for k in ks],
                pass_hat=[pass_hat_k(n, c, k) if k in trials else None for k in ks],
            )
        )
    groups = _sorted_groups(groups, sort if group_sort_known(sort) else "value")
    keyed = [g for g in groups if not g.missing]
    pass_at, pass_hat, counted = [], [], []
    for i, _ in enumerate(ks):
        at = [g.pass_at[i] for g in keyed if g.pass_at[i] is not None]
        hat = [g.pass_hat[i] for g in keyed if g.pass_hat[i] is not None]
        pass_at.append(sum(at) / len(at) if at else None)
        pass_hat.append(sum(hat) / len(hat) if hat else None)
        counted.append(len(at))
    rewarded = sum(g.rewarded for g in keyed)
    total = sum((g.mean or 0) * g.rewarded for g in keyed)
    return GroupTable(
        key=key,
        ks=ks,
        groups=groups,
        pass_at=pass_at,
        pass_hat=pass_hat,
        groups_counted=counted,
        mean=total / rewarded if rewarded else None,
        total_groups=len(groups),
        rows=groups[:limit],
    )


# --- filters of the dataset page's trace list ----------------------------------------


def traces_with_metadata_value(*, traces: QuerySet[Trace], key: str, value: str):
    """The traces whose metadata[key] equals `value`: a string equal to it, or, when
    `value` reads as JSON (a number, true, false, null, an object...), that value.
    Exact, in SQL, so that counts and pages stay right. A NUL in the key or the value
    matches a NUL stored there, read as U+FFFD on both databases."""
    nul = "\x00" in key or "\x00" in value
    sql, params = metadata_value_sql(key, nul=nul)
    candidates = [jsontext.dumps(value)]
    try:
        # "7 " is the string "7 ", not the number 7.
        parsed = jsontext.loads(value) if value == value.strip() else value
    except jsontext.JsonError:
        parsed = None
    else:
        if not isinstance(parsed, str):
            candidates.append(jsontext.dumps(parsed))
    number = None
    if isinstance(parsed, int | float) and not isinstance(parsed, bool):
        number = float(parsed)
    if connection.vendor == "postgresql":
        text_match = f"{sql} IN ({', '.join(['%s'] * len(candidates))})"
        where = [text_match]
        all_params = [*params, *map(pg_text, candidates)]
        if number is not None:
            where.append(
                f"CASE WHEN json_typeof({pg_json('traces_trace.metadata')} -> %s) = 'number' "
                f"THEN ({sql})::float8 END = %s"
            )
            all_params += [pg_text(key), *params, number]
    else:
        where = [f"{sql} IN ({', '.join(['%s'] * len(candidates))})"]
        if nul:  # json_quote writes U+FFFD itself, not its escape
            candidates = [c.replace("\\u0000", "\ufffd") for c in candidates]
        all_params = [*params, *candidates]
        if number is not None:
            where.append(
                f"EXISTS (SELECT 1 FROM json_each({_sqlite_metadata(nul)}) AS n "
                "WHERE n.key = %s AND n.type IN ('integer', 'real') AND n.value = %s)"
            )
            all_params += [params[0], number]
    return traces.extra(where=[" OR ".join(f"({w})" for w in where)], params=all_params)


def traces_annotated(*, traces: QuerySet[Trace], annotated: bool = True) -> QuerySet[Trace]:
    """Annotated (see the module docstring) or not."""
    block_notes = Block.objects.filter(trace=OuterRef("pk")).exclude(extra=_EMPTY)
    labelled = Annotation.objects.filter(trace=OuterRef("pk"))
    condition = ~Q(extra=_EMPTY) | Exists(block_notes) | Exists(labelled)
    return traces.filter(condition) if annotated else traces.exclude(condition)


# --- what the dataset page shows of each trace ---------------------------------------


def with_first_user_message(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    """Annotate `first_user_payload`: the payload of the trace's first MESSAGE block of
    role user (a correlated subquery, read with the page's own query)."""
    first = (
        Block.objects.filter(trace=OuterRef("pk"), sub_type=SubType.MESSAGE)
        .filter(payload__contains='"role":"user"')
        # The written order as block_number gives it, nothing more (NULLS LAST, or a
        # tiebreak, would make SQLite sort every match): the first match ends the scan.
        .order_by("number")
        .values("payload")[:1]
    )
    return traces.annotate(first_user_payload=Subquery(first))


def message_text(payload: Any) -> str:
    """The text of a MESSAGE payload: its content, or the text parts of a list content."""
    if not isinstance(payload, dict):
        return ""
    content = payload.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif part.get("type") in ("image_url", "image", "input_image"):
                    texts.append("[image]")
        return " ".join(texts)
    return ""


def _tool_name_sql() -> str:
    """payload.name of a TOOL_CALL block, read by the database."""
    if connection.vendor == "postgresql":
        return f"({pg_json('traces_block.payload')} ->> 'name')"
    return "json_extract(traces_block.payload, '$.name')"


def tools_used(*, trace_ids: list[str]) -> dict[str, list[str]]:
    """The distinct tool names called in each of these traces (one query)."""
    if not trace_ids:
        return {}
    rows = (
        Block.objects.filter(trace_id__in=trace_ids, sub_type=SubType.TOOL_CALL)
        .annotate(tool=RawSQL(_tool_name_sql(), [], output_field=TextField()))
        .values_list("trace_id", "tool")
        .distinct()
    )
    found: dict[str, set[str]] = {}
    for trace_id, tool in rows:
        if tool:
            found.setdefault(trace_id, set()).add(tool)
    return {trace_id: sorted(names) for trace_id, names in found.items()}
