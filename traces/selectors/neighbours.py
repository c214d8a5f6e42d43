"""A trace's neighbours in its dataset, for moving from trace to trace: in the order and
among the traces of the list the reader came from (its filter and sort)."""

from traces.models import Trace
from traces.selectors.prepared import Prepared
from traces.selectors.trace_filters import TraceFilter, trace_after, traces_filtered

FIELDS = ("id", "index", "name")


def _by_index(*, backwards: bool) -> Prepared[Trace]:
    """The nearest trace before (after) an index in a dataset: `trace_after` of the list
    as it opens, unfiltered by index, which most readers walk (its two queries prepared:
    traces/selectors/prepared.py)."""
    beyond, order = ("index__lt", "-index") if backwards else ("index__gt", "index")
    return Prepared(
        lambda dataset_id, trace_id, index: (
            Trace.objects.filter(dataset_id=dataset_id)
            .exclude(pk=trace_id)
            .filter(**{beyond: index})
            .order_by(order)
            .only(*FIELDS)[:1]
        ),
        str,
        str,
        int,
    )


_BEFORE, _AFTER = _by_index(backwards=True), _by_index(backwards=False)


def trace_neighbours(
    *, trace: Trace, filters: TraceFilter | None = None, sort: str = "index"
) -> tuple[Trace | None, Trace | None]:
    """The traces just before and just after `trace` in its dataset's list, filtered by
    `filters` and sorted by `sort` (by index when none), with their id, index and name
    only; None at either end, or outside a dataset. `trace` need not pass the filter
    (the reader may have changed it since): its place in the order is where it would be."""
    if trace.dataset_id is None:
        return None, None
    if filters is None and sort == "index":
        found = [way(trace.dataset_id, trace.pk, trace.index) for way in (_BEFORE, _AFTER)]
        return tuple(rows[0] if rows else None for rows in found)  # type: ignore[return-value]
    siblings = Trace.objects.filter(dataset_id=trace.dataset_id)
    if filters is not None:
        siblings = traces_filtered(traces=siblings, filters=filters)
    siblings = siblings.exclude(pk=trace.pk)
    prev = trace_after(traces=siblings, trace=trace, sort=sort, backwards=True, fields=FIELDS)
    nxt = trace_after(traces=siblings, trace=trace, sort=sort, fields=FIELDS)
    return prev, nxt
