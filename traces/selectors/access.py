"""A dataset or trace by id, for an actor who wants to do something to it (traces.policy).

A missing id and an object the actor may not know of raise the same NotFound; an object
the actor may read but not change raises Forbidden.
"""

from traces.models import Dataset, Trace
from traces.policy import Action, Actor, require
from traces.selectors import first_or_not_found
from traces.selectors.prepared import Prepared

# Every page of a dataset or trace asks for it (traces/selectors/prepared.py).
_DATASET: Prepared[Dataset] = Prepared(
    lambda dataset_id: Dataset.objects.select_related("organization").filter(id=dataset_id), str
)
_TRACE: Prepared[Trace] = Prepared(
    lambda trace_id: Trace.objects.select_related("dataset", "organization").filter(id=trace_id),
    str,
)


def dataset_for(*, actor: Actor, dataset_id: str, action: Action = Action.READ) -> Dataset:
    found = first_or_not_found(lambda: _DATASET(dataset_id), "dataset", "dataset_id", dataset_id)
    require(actor, action, found)
    return found


def trace_for(*, actor: Actor, trace_id: str, action: Action = Action.READ) -> Trace:
    found = first_or_not_found(lambda: _TRACE(trace_id), "trace", "trace_id", trace_id)
    require(actor, action, found)
    return found
