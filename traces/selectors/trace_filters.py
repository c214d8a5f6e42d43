"""Which traces a list shows and in which order: one filter, read from the dataset page's
form and from the query parameters of `/v1/.../traces`, applied by one selector; the sorts
of the trace list (each walks an index of traces/models.py, so a page of a sorted list
costs the rows it shows), shared by the list and by the trace page's previous/next."""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import F, Q, QuerySet
from django.db.models.expressions import OrderBy

from traces.models import Trace
from traces.selectors.annotations import traces_labelled
from traces.selectors.search import traces_matching
from traces.selectors.stats import traces_annotated, traces_with_metadata_value


@dataclass
class TraceFilter:
    text: str = ""  # words of a block's content (full-text search)
    reward: float | None = None  # exactly this reward
    no_reward: bool = False  # no reward at all
    reward_min: float | None = None
    reward_max: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)  # key -> value, all must match
    annotated: bool | None = None  # see traces.selectors.stats on what "annotated" means
    label: str = ""  # tagged with this label of the dataset's vocabulary (trace or block)
    tool_error: bool | None = None  # has a tool result marked as an error (or has none)


def traces_filtered(*, traces: QuerySet[Trace], filters: TraceFilter) -> QuerySet[Trace]:
    """The traces among `traces` that pass every part of `filters`."""
    for key, value in filters.metadata.items():
        traces = traces_with_metadata_value(traces=traces, key=key, value=value)
    if filters.reward is not None:
        traces = traces.filter(reward=filters.reward)
    if filters.no_reward:
        traces = traces.filter(reward__isnull=True)
    if filters.reward_min is not None:
        traces = traces.filter(reward__gte=filters.reward_min)
    if filters.reward_max is not None:
        traces = traces.filter(reward__lte=filters.reward_max)
    if filters.annotated is not None:
        traces = traces_annotated(traces=traces, annotated=filters.annotated)
    if filters.tool_error is not None:
        traces = (
            traces.filter(tool_errors__gt=0) if filters.tool_error else traces.filter(tool_errors=0)
        )
    if filters.label:
        traces = traces_labelled(traces=traces, label=filters.label)
    if filters.text:
        traces = traces_matching(traces=traces, text=filters.text)
    return traces


@dataclass(frozen=True)
class SortKey:
    column: str  # a column, or the name of the sum of `summed`
    nullable: bool = False  # NULLs come last, whichever the direction
    summed: tuple[str, ...] = ()  # columns added up (NULL when one is), as an index holds

    def value(self, trace: Trace) -> Any:
        if not self.summed:
            return getattr(trace, self.column)
        parts = [getattr(trace, column) for column in self.summed]
        return None if None in parts else sum(parts)


def _with_sums(traces: QuerySet[Trace], keys: tuple[SortKey, ...]) -> QuerySet[Trace]:
    for key in keys:
        if key.summed:
            total = sum((F(column) for column in key.summed[1:]), F(key.summed[0]))
            traces = traces.annotate(**{key.column: total})
    return traces


_INDEX = SortKey("index")
# A sort's keys, the trace's index last (unique in a dataset, so the order is total).
TRACE_SORTS: dict[str, tuple[SortKey, ...]] = {
    "index": (_INDEX,),
    "name": (SortKey("name"), _INDEX),
    "task": (SortKey("task"), SortKey("trial", nullable=True), _INDEX),
    "trial": (SortKey("trial", nullable=True), _INDEX),
    "reward": (SortKey("reward", nullable=True), _INDEX),
    "turns": (SortKey("block_count"), _INDEX),
    "errors": (SortKey("tool_errors"), _INDEX),
    # traces/models.py TOTAL_TOKENS
    "tokens": (SortKey("total_tokens", True, ("input_tokens", "output_tokens")), _INDEX),
    "cost": (SortKey("cost_usd", nullable=True), _INDEX),
    "duration": (SortKey("duration_seconds", nullable=True), _INDEX),
}


def sort_known(sort: str) -> bool:
    """Whether `sort` names a sort: a key of TRACE_SORTS, "-" before it for descending."""
    return sort.removeprefix("-") in TRACE_SORTS


def _keys(sort: str) -> tuple[tuple[SortKey, ...], bool]:
    return TRACE_SORTS[sort.removeprefix("-")], sort.startswith("-")


def _order(key: SortKey, descending: bool, nulls_last: bool = True) -> OrderBy:
    nulls: dict[str, Any] = {}
    if key.nullable:
        nulls = {"nulls_last": True} if nulls_last else {"nulls_first": True}
    return F(key.column).desc(**nulls) if descending else F(key.column).asc(**nulls)


def traces_sorted(*, traces: QuerySet[Trace], sort: str) -> QuerySet[Trace]:
    """`traces` in the order `sort` names ("index" when it names none)."""
    keys, descending = _keys(sort if sort_known(sort) else "index")
    return _with_sums(traces, keys).order_by(*(_order(key, descending) for key in keys))


def _beyond(key: SortKey, value: Any, descending: bool, nulls_last: bool) -> list[Q]:
    """The rows whose `key` comes strictly after `value` in that direction, as index
    ranges, nearest first."""
    column = key.column
    if value is None:
        return [] if nulls_last else [Q(**{f"{column}__isnull": False})]
    found = [Q(**{f"{column}__lt" if descending else f"{column}__gt": value})]
    if key.nullable and nulls_last:
        found.append(Q(**{f"{column}__isnull": True}))
    return found


def _same(key: SortKey, value: Any) -> Q:
    return Q(**{f"{key.column}__isnull": True}) if value is None else Q(**{key.column: value})


def trace_after(
    *,
    traces: QuerySet[Trace],
    trace: Trace,
    sort: str,
    backwards: bool = False,
    fields: tuple[str, ...] = (),
) -> Trace | None:
    """The trace of `traces` just after `trace` in the order `sort` names (just before
    it when `backwards`), None at the end: a keyset, asked as a few index ranges, nearest
    first (the same values of every key but the last, then of fewer keys...), so that
    each is a short walk of the sort's index wherever `trace` stands. Only `fields` are
    read, when given."""
    keys, descending = _keys(sort if sort_known(sort) else "index")
    # Backwards: the opposite direction, NULLs first.
    descending, nulls_last = (not descending, False) if backwards else (descending, True)
    values = [key.value(trace) for key in keys]
    ordered = _with_sums(traces, keys).order_by(
        *(_order(key, descending, nulls_last) for key in keys)
    )
    if fields:
        ordered = ordered.only(*fields)
    for depth in range(len(keys) - 1, -1, -1):
        equal = Q()
        for key, value in zip(keys[:depth], values[:depth], strict=True):
            equal &= _same(key, value)
        for beyond in _beyond(keys[depth], values[depth], descending, nulls_last):
            found = ordered.filter(equal & beyond).first()
            if found is not None:
                return found
    return None
