"""Reading datasets and traces for the API and the pages."""

from typing import Any

from django.db.models import Count, Q, QuerySet

from traces import jsontext
from traces.errors import NotFound, ValidationFailed
from traces.models import Dataset, Organization, Trace


def dataset_list(*, organization: Organization, search: str = "") -> QuerySet[Dataset]:
    datasets = Dataset.objects.filter(organization=organization)
    if search:
        datasets = datasets.filter(name__icontains=search)
    return datasets.annotate(trace_count=Count("traces")).order_by("-updated_at", "-id")


def dataset_get(*, organization: Organization, dataset_id: str) -> Dataset:
    found = (
        Dataset.objects.filter(organization=organization, id=dataset_id)
        .annotate(trace_count=Count("traces"))
        .first()
    )
    if found is None:
        raise NotFound(f"no dataset {dataset_id!r}", {"dataset_id": dataset_id})
    return found


def dataset_by_id_or_name(*, organization: Organization, ref: str) -> Dataset | None:
    return (
        Dataset.objects.filter(organization=organization, id=ref).first()
        or Dataset.objects.filter(organization=organization, name=ref).first()
    )


def trace_get(*, organization: Organization, trace_id: str) -> Trace:
    found = Trace.objects.filter(organization=organization, id=trace_id).first()
    if found is None:
        raise NotFound(f"no trace {trace_id!r}", {"trace_id": trace_id})
    return found


def _metadata_filter(traces: QuerySet[Trace], key: str, value: str) -> QuerySet[Trace]:
    """Candidates for metadata.<key> == value, found in the stored JSON text ("key":"value"
    or a bare number or boolean); `_metadata_matches` then checks each exactly. Text, not
    a JSON cast: PostgreSQL's jsonb refuses the \\u0000 that metadata may hold."""
    key_json = jsontext.dumps(key)
    candidates = [jsontext.dumps(value)]
    try:
        parsed = jsontext.loads(value)
    except jsontext.JsonError:
        parsed = None
    if parsed is not None and not isinstance(parsed, str):
        candidates.append(jsontext.dumps(parsed))
    query = Q()
    for candidate in candidates:
        query |= Q(metadata__contains=f"{key_json}:{candidate}")
    return traces.filter(query)


def trace_list(
    *,
    organization: Organization,
    dataset: Dataset | None = None,
    metadata: dict[str, str] | None = None,
    reward: float | None = None,
    reward_min: float | None = None,
    reward_max: float | None = None,
    after: str | None = None,
    limit: int = 50,
) -> tuple[list[Trace], str | None]:
    """A page of traces in creation order (ids are time-ordered), and the next cursor."""
    if not 1 <= limit <= 500:
        raise ValidationFailed("limit must be 1 to 500", {"field": "limit", "rule": "range"})
    traces = Trace.objects.filter(organization=organization).select_related("dataset")
    if dataset is not None:
        traces = traces.filter(dataset=dataset)
    for key, value in (metadata or {}).items():
        traces = _metadata_filter(traces, key, value)
    if reward is not None:
        traces = traces.filter(reward=reward)
    if reward_min is not None:
        traces = traces.filter(reward__gte=reward_min)
    if reward_max is not None:
        traces = traces.filter(reward__lte=reward_max)
    if after:
        traces = traces.filter(id__gt=after)
    page = list(traces.order_by("id")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    exact = [t for t in page if _metadata_matches(t.metadata, metadata or {})]
    return exact, (page[-1].id if more else None)


def _metadata_matches(found: Any, wanted: dict[str, str]) -> bool:
    for key, value in wanted.items():
        if not isinstance(found, dict) or key not in found:
            return False
        actual = found[key]
        if isinstance(actual, str):
            if actual != value:
                return False
        elif jsontext.dumps(actual) != value:
            return False
    return True
