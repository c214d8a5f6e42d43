"""Which traces a list shows: one filter, read from the dataset page's form and from the
query parameters of `/v1/.../traces`, applied by one selector."""

from dataclasses import dataclass, field

from django.db.models import QuerySet

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
    if filters.label:
        traces = traces_labelled(traces=traces, label=filters.label)
    if filters.text:
        traces = traces_matching(traces=traces, text=filters.text)
    return traces
