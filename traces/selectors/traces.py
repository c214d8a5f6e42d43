"""Reading datasets and traces for the API and the pages."""

from django.db.models import Count, QuerySet

from traces.errors import ValidationFailed
from traces.models import Dataset, Organization, Trace, TraceEvent
from traces.rewards import SUCCESS
from traces.selectors import first_or_not_found
from traces.selectors.prepared import Prepared
from traces.selectors.search import datasets_matching
from traces.selectors.trace_filters import TraceFilter, traces_filtered

NUL = "\x00"


def dataset_list(
    *, organization: Organization, search: str = "", public_only: bool = False
) -> QuerySet[Dataset]:
    datasets = Dataset.objects.filter(organization=organization)
    if public_only:
        datasets = datasets.filter(is_public=True)
    datasets = datasets_matching(datasets=datasets, text=search)
    return datasets.annotate(trace_count=Count("traces")).order_by("-updated_at", "-id")


def dataset_get(*, organization: Organization, dataset_id: str) -> Dataset:
    rows = Dataset.objects.filter(organization=organization, id=dataset_id)
    rows = rows.annotate(trace_count=Count("traces"))
    return first_or_not_found(rows, "dataset", "dataset_id", dataset_id)


def dataset_by_id_or_name(*, organization: Organization, ref: str) -> Dataset | None:
    if NUL in ref:  # no id or name holds one
        return None
    return (
        Dataset.objects.filter(organization=organization, id=ref).first()
        or Dataset.objects.filter(organization=organization, name=ref).first()
    )


def trace_get(*, organization: Organization, trace_id: str) -> Trace:
    rows = Trace.objects.select_related("dataset").filter(organization=organization, id=trace_id)
    return first_or_not_found(rows, "trace", "trace_id", trace_id)


def trace_list(
    *,
    organization: Organization,
    public_only: bool = False,
    dataset: Dataset | None = None,
    filters: TraceFilter | None = None,
    after: str | None = None,
    limit: int = 50,
) -> tuple[list[Trace], str | None]:
    """A page of the traces that pass `filters`, in creation order (ids are time-ordered),
    and the next cursor."""
    if not 1 <= limit <= 500:
        raise ValidationFailed("limit must be 1 to 500", {"field": "limit", "rule": "range"})
    traces = Trace.objects.filter(organization=organization).select_related("dataset")
    if public_only:
        traces = traces.filter(dataset__is_public=True)
    if dataset is not None:
        traces = traces.filter(dataset=dataset)
    if filters is not None:
        traces = traces_filtered(traces=traces, filters=filters)
    if after:
        if NUL in after:
            raise ValidationFailed(
                "cursor is not a next_cursor this API gave", {"field": "cursor", "rule": "cursor"}
            )
        traces = traces.filter(id__gt=after)
    page = list(traces.order_by("id")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, (page[-1].id if more else None)


def trace_passing_trial_exists(*, trace: Trace) -> bool:
    """Whether another trace of the trace's dataset has its task (Trace.task, indexed with
    the dataset) and succeeded: what "Compare with a passing trial" needs to lead
    somewhere (one query)."""
    if trace.dataset_id is None or not trace.task:
        return False
    return (
        Trace.objects.filter(dataset_id=trace.dataset_id, task=trace.task, reward__gte=SUCCESS)
        .exclude(pk=trace.pk)
        .exists()
    )


_EVENT: Prepared[tuple] = Prepared(
    lambda trace_id: TraceEvent.objects.filter(trace_id=trace_id).values_list("pk")[:1], str
)


def trace_has_events(*, trace: Trace) -> bool:
    """Whether the trace is kept as the events a client sent (TraceEvent): what a note
    anchored to its text is addressed in."""
    return bool(_EVENT(trace.pk))
