"""A trace's neighbours in its dataset, for moving from trace to trace: in the order and
among the traces of the list the reader came from (its filter and sort)."""

from traces.models import Trace
from traces.selectors.trace_filters import TraceFilter, trace_after, traces_filtered

FIELDS = ("id", "index", "name")


def trace_neighbours(
    *, trace: Trace, filters: TraceFilter | None = None, sort: str = "index"
) -> tuple[Trace | None, Trace | None]:
    """The traces just before and just after `trace` in its dataset's list, filtered by
    `filters` and sorted by `sort` (by index when none), with their id, index and name
    only; None at either end, or outside a dataset. `trace` need not pass the filter
    (the reader may have changed it since): its place in the order is where it would be."""
    if trace.dataset_id is None:
        return None, None
    siblings = Trace.objects.filter(dataset_id=trace.dataset_id)
    if filters is not None:
        siblings = traces_filtered(traces=siblings, filters=filters)
    siblings = siblings.exclude(pk=trace.pk)
    prev = trace_after(traces=siblings, trace=trace, sort=sort, backwards=True, fields=FIELDS)
    nxt = trace_after(traces=siblings, trace=trace, sort=sort, fields=FIELDS)
    return prev, nxt
