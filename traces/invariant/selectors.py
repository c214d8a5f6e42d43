"""Reads of Invariant Explorer's /api/v1 (spec invariant-explorer-api.md): its ids, and its
shapes of traces, annotations and datasets, from the store. Explorer's user namespace is
the organization (its slug is the `username` of `byuser/{username}`)."""

import hashlib
import re
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from traces import jsontext
from traces.errors import NotFound
from traces.invariant.events import event_inlined, event_truncated
from traces.models import Annotation, Dataset, Image, Organization, Trace, TraceEvent
from traces.policy import Actor, datasets_readable
from traces.selectors.exports import trace_events as chat_events

HIDDEN_TRACE_KEYS = ("uploader",)
LINK = re.compile(r"/api/v1/trace/image/[^/]+/[^/]+/([0-9a-f]{64})\.png$")
BUILT_IN_QUERIES = ("all", "annotated", "unannotated")


def as_uuid(text: str) -> uuidlib.UUID | None:
    try:
        return uuidlib.UUID(text)
    except (ValueError, TypeError, AttributeError):
        return None


def explorer_trace_get(*, trace_id: str) -> Trace:
    """The trace of an Explorer id; NotFound for a missing one and for a non-UUID."""
    found = as_uuid(trace_id)
    trace = (
        Trace.objects.select_related("dataset", "organization").filter(uuid=found).first()
        if found is not None
        else None
    )
    if trace is None:
        raise NotFound("Trace not found")
    return trace


def explorer_dataset_get(*, dataset_id: str) -> Dataset:
    found = as_uuid(dataset_id)
    dataset = (
        Dataset.objects.select_related("organization").filter(uuid=found).first()
        if found is not None
        else None
    )
    if dataset is None:
        raise NotFound("Dataset not found")
    return dataset


def explorer_dataset_by_name(*, username: str, name: str) -> Dataset:
    dataset = (
        Dataset.objects.select_related("organization")
        .filter(organization__slug=username, name=name)
        .first()
    )
    if dataset is None:
        raise NotFound("Dataset not found")
    return dataset


def explorer_annotation_get(*, trace: Trace, annotation_id: str) -> Annotation:
    found = as_uuid(annotation_id)
    annotation = (
        Annotation.objects.select_related("author", "api_key__created_by")
        .filter(trace=trace, uuid=found)
        .first()
        if found is not None
        else None
    )
    if annotation is None:
        raise NotFound("Annotation not found")
    return annotation


def org_user_id(organization_id: int) -> str:
    """A stable UUID for an organization, Explorer's `user_id` of what it owns."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"trace-explorer:org:{organization_id}"))


def _time(value) -> str | None:
    return value.isoformat() if value is not None else None


# --- annotations ------------------------------------------------------------------------


def _author(annotation: Annotation) -> dict[str, Any]:
    user = annotation.author or (annotation.api_key.created_by if annotation.api_key else None)
    if user is not None:
        name, key = user.get_username(), f"user:{user.pk}"
    elif annotation.api_key is not None:
        name, key = annotation.api_key.name or "API key", f"key:{annotation.api_key_id}"
    else:
        name, key = "", "none"
    ident = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"trace-explorer:{key}"))
    return {"id": ident, "username": name, "image_url_hash": hashlib.md5(key.encode()).hexdigest()}


def annotation_out(annotation: Annotation, *, trace: Trace, with_user: bool = True) -> dict:
    out = {
        "id": str(annotation.uuid),
        "trace_id": str(trace.uuid),
        "content": annotation.comment,
        "address": annotation.address,
        "time_created": _time(annotation.created_at),
        "extra_metadata": annotation.extra_metadata,
    }
    if with_user:
        out["user"] = _author(annotation)
    return out


def trace_annotations(*, trace: Trace) -> QuerySet[Annotation]:
    return (
        Annotation.objects.filter(trace=trace)
        .select_related("author", "api_key__created_by")
        .order_by("created_at", "id")
    )


# --- traces -----------------------------------------------------------------------------


def trace_extra_metadata(trace: Trace) -> dict[str, Any]:
    """Explorer's trace metadata: the trace's metadata with what readers added in the
    explorer over it (`extra`: a reward given on the trace page), `uploader` left out."""
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    extra = trace.extra if isinstance(trace.extra, dict) else {}
    out = {**metadata, **extra}
    for key in HIDDEN_TRACE_KEYS:
        out.pop(key, None)
    return out


def trace_events(*, trace: Trace) -> list[Any]:
    """The trace's events as pushed; for a trace that came in another way (an upload of
    the pages, /v1), its events as the chat export rebuilds them from its blocks."""
    rows = TraceEvent.objects.filter(trace=trace).order_by("position")
    events = list(rows.values_list("event", flat=True))
    if events or not trace.block_count:
        return events
    return chat_events(trace=trace)


def _hierarchy(trace: Trace) -> list:
    path = trace.metadata.get("hierarchy_path") if isinstance(trace.metadata, dict) else None
    return path if isinstance(path, list) else []


def trace_out(
    trace: Trace, *, include_annotations: bool = True, max_length: int | None = None
) -> dict[str, Any]:
    events = trace_events(trace=trace)
    if max_length is not None:
        events = [event_truncated(e, max_length) for e in events]
    out = {
        "id": str(trace.uuid),
        "index": trace.index,
        "messages": events,
        "dataset": str(trace.dataset.uuid) if trace.dataset_id else None,
        "user_id": org_user_id(trace.organization_id),
        "name": trace.name,
        "hierarchy_path": _hierarchy(trace),
        "user": trace.organization.slug,
        "extra_metadata": trace_extra_metadata(trace),
        "time_created": _time(trace.created_at),
        "time_last_pushed": _time(trace.updated_at),
    }
    if include_annotations:
        out["annotations"] = [
            annotation_out(a, trace=trace) for a in trace_annotations(trace=trace)
        ]
    return out


def snippets_of(*, organization: Organization, limit: int) -> list[Trace]:
    rows = Trace.objects.filter(organization=organization, dataset__isnull=True)
    return list(rows.select_related("organization").order_by("-created_at", "-id")[:limit])


# --- datasets ---------------------------------------------------------------------------


def _metadata(dataset: Dataset, *, owner: bool) -> dict[str, Any]:
    metadata = dict(dataset.metadata) if isinstance(dataset.metadata, dict) else {}
    if not owner:
        metadata.pop("policies", None)
    return metadata


def dataset_out(
    dataset: Dataset, *, owner: bool, full: bool = False, with_user: bool = False,
    include_metadata: bool = True, latest: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """Explorer's Dataset; `full` adds user, num_traces and queries (the single-dataset
    GETs); `with_user` adds user (the lists)."""
    if latest is None:
        latest = dataset.traces.aggregate(t=Max("updated_at"))["t"]
    out = {
        "id": str(dataset.uuid),
        "name": dataset.name,
        "extra_metadata": _metadata(dataset, owner=owner) if include_metadata else {},
        "is_public": dataset.is_public,
        "user_id": org_user_id(dataset.organization_id),
        "time_created": _time(dataset.created_at),
        "latest_trace_time": _time(latest),
    }
    if full or with_user:
        out["user"] = {"id": out["user_id"], "username": dataset.organization.slug}
    if full:
        counts = dataset.traces.aggregate(
            all=Count("id"),
            annotated=Count("id", filter=Q(annotations__isnull=False), distinct=True),
        )
        out["num_traces"] = counts["all"]
        out["queries"] = [
            {"id": name, "name": name.capitalize(), "count": count, "query": f"is:{name}",
             "deletable": False}
            for name, count in (
                ("all", counts["all"]), ("annotated", counts["annotated"]),
                ("unannotated", counts["all"] - counts["annotated"]),
            )
        ]  # fmt: skip
    return out


def dataset_list_for(
    *, actor: Actor, kind: str, q: str | None, limit: int | None
) -> QuerySet[Dataset]:
    own = Dataset.objects.filter(organization_id__in=list(actor.roles))
    rows = {
        "private": own,
        "public": Dataset.objects.filter(is_public=True),
        "any": datasets_readable(actor),
        "homepage": Dataset.objects.none(),  # no homepage list is configured
    }[kind]
    if q:
        rows = rows.filter(name__icontains=q)
    rows = rows.select_related("organization").annotate(latest=Max("traces__updated_at"))
    rows = rows.order_by("-updated_at", "-created_at")
    return rows[:limit] if limit is not None else rows


def dataset_traces_page(
    *, dataset: Dataset, limit: int | None, offset: int, indices: list[int] | None = None
) -> list[dict[str, Any]]:
    rows = Trace.objects.filter(dataset=dataset).order_by("index")
    if indices is not None:
        rows = rows.filter(index__in=indices)
    rows = rows[offset : offset + limit] if limit is not None else rows[offset:]
    traces = list(rows)
    by_source: dict[int, dict[str, int]] = {t.pk: {} for t in traces}
    notes = Annotation.objects.filter(trace__in=traces).values_list("trace_id", "extra_metadata")
    for trace_id, extra in notes:
        source = extra.get("source") if isinstance(extra, dict) else None
        source = source if isinstance(source, str) else "user"
        counts = by_source[trace_id]
        counts[source] = counts.get(source, 0) + 1
    return [
        {"id": str(t.uuid), "index": t.index, "name": t.name, "hierarchy_path": _hierarchy(t),
         "extra_metadata": trace_extra_metadata(t), "messages": [],
         "annotations_by_source": by_source[t.pk]}
        for t in traces
    ]  # fmt: skip


# --- download ---------------------------------------------------------------------------


def _sha_of(link: str) -> str | None:
    found = LINK.search(link) if isinstance(link, str) else None
    return found[1] if found else None


def _trace_images(trace: Trace) -> dict[str, bytes]:
    rows = Image.objects.filter(trace_links__trace=trace).values_list("sha256", "data")
    return {sha: bytes(data) for sha, data in rows}


def dataset_download_lines(
    *, dataset: Dataset, owner: bool, include_ids: bool, only_annotated: bool
) -> Iterator[bytes]:
    """Explorer's JSONL: the dataset's metadata line, then a line per trace in index order,
    its images inline again; uploaded again (2.7) it gives the same dataset."""
    yield jsontext.dumps({"metadata": _metadata(dataset, owner=owner)}).encode() + b"\n"
    traces = Trace.objects.filter(dataset=dataset).order_by("index")
    if only_annotated:
        traces = traces.filter(annotations__isnull=False).distinct()
    for trace in traces.iterator(chunk_size=100):
        images = _trace_images(trace)
        events = [event_inlined(e, images, _sha_of) for e in trace_events(trace=trace)]
        metadata = {k: v for k, v in (trace.metadata or {}).items() if k not in HIDDEN_TRACE_KEYS}
        line = {"index": trace.index, "messages": events, "metadata": metadata}
        line["annotations"] = [
            {"content": a.comment, "address": a.address, "extra_metadata": a.extra_metadata}
            for a in Annotation.objects.filter(trace=trace).order_by("created_at", "id")
        ]
        if include_ids:
            line["id"] = str(trace.uuid)
        yield jsontext.dumps(line).encode() + b"\n"


def trace_image(*, trace: Trace, sha: str) -> bytes | None:
    """An image of the trace (one linked to it), by its SHA-256."""
    row = Image.objects.filter(trace_links__trace=trace, sha256=sha).values_list("data").first()
    return bytes(row[0]) if row else None


def key_uuid(api_key) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"trace-explorer:key:{api_key.pk}"))


def is_author(annotation: Annotation, actor: Actor) -> bool:
    """Whether the actor wrote the annotation: its user, or its key, or a key its user made."""
    if actor.user is not None:
        made_by_key = annotation.api_key is not None and annotation.api_key.created_by_id
        return actor.user.pk in (annotation.author_id, made_by_key)
    if actor.api_key is not None:
        return annotation.api_key_id == actor.api_key.pk or (
            annotation.author_id is not None and annotation.author_id == actor.api_key.created_by_id
        )
    return False
