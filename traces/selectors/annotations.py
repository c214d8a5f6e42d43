"""Reading labels and comments (traces.models.Annotation) and a dataset's vocabulary."""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from traces.models import Annotation, Dataset, Label, Organization, Trace
from traces.selectors import first_or_not_found
from traces.selectors.prepared import Prepared

NUL = "\x00"
ANNOTATIONS_SHOWN = 500  # a trace page lists its first annotations


def labels_of(*, dataset: Dataset) -> QuerySet[Label]:
    """The dataset's vocabulary by name."""
    return Label.objects.filter(dataset=dataset).order_by("name", "id")


_VOCABULARY: Prepared[Label] = Prepared(
    lambda dataset_id: Label.objects.filter(dataset_id=dataset_id).order_by("name", "id"), str
)


def vocabulary_of(*, dataset: Dataset) -> list[Label]:
    """`labels_of`, read as every trace page reads it (traces/selectors/prepared.py)."""
    return _VOCABULARY(dataset.pk)


@dataclass(frozen=True)
class LabelCount:
    label: Label
    traces: int  # traces tagged with it, on the trace or on one of its blocks
    annotations: int


def label_counts(*, dataset: Dataset) -> list[LabelCount]:
    """Each label of the dataset's vocabulary with how many traces and annotations use it,
    the most used first (one grouped query)."""
    rows = labels_of(dataset=dataset).annotate(
        n_traces=Count("annotations__trace", distinct=True), n_annotations=Count("annotations")
    )
    counts = [LabelCount(row, row.n_traces, row.n_annotations) for row in rows]
    return sorted(counts, key=lambda c: (-c.traces, c.label.name))


def label_get(*, dataset: Dataset, label_id: str) -> Label:
    rows = Label.objects.select_related("dataset").filter(dataset=dataset, id=label_id)
    return first_or_not_found(rows, "label", "label_id", label_id)


def annotations_of(*, trace: Trace) -> QuerySet[Annotation]:
    """The trace's labels and comments, its blocks' included, oldest first."""
    return (
        Annotation.objects.filter(trace=trace)
        .select_related("label", "author", "api_key")
        .order_by("created_at", "id")
    )


_SHOWN: Prepared[Annotation] = Prepared(
    lambda trace_id: (
        Annotation.objects.filter(trace_id=trace_id)
        .select_related("label", "author", "api_key")
        .order_by("created_at", "id")[:ANNOTATIONS_SHOWN]
    ),
    str,
)


def annotation_author(annotation: Annotation) -> str:
    """Who wrote it, as a page says: the user, "API key", or for a note an upload brought
    (traces/ingest/notes.py) who wrote it where it came from, "(imported)"; "" if no one
    is known."""
    if annotation.author_id is not None:
        return annotation.author.get_username()
    if annotation.api_key_id is not None:
        return "API key"
    extra = annotation.extra_metadata
    imported = extra.get("imported") if isinstance(extra, dict) else None
    if not isinstance(imported, dict):
        return ""
    who = imported.get("author")
    return f"{who[:100]} (imported)" if isinstance(who, str) and who else "imported"


def annotations_shown(*, trace: Trace) -> list[Annotation]:
    """The first ANNOTATIONS_SHOWN of `annotations_of`, as every trace page reads them
    (traces/selectors/prepared.py)."""
    return _SHOWN(trace.pk)


def annotation_get_in_org(*, organization: Organization, annotation_id: str) -> Annotation:
    rows = Annotation.objects.select_related("trace__dataset", "label").filter(
        trace__organization=organization, id=annotation_id
    )
    return first_or_not_found(rows, "annotation", "annotation_id", annotation_id)


def traces_labelled(*, traces: QuerySet[Trace], label: str) -> QuerySet[Trace]:
    """The traces among `traces` tagged (on the trace or a block) with a label of this
    name, in any case."""
    label = label.strip()
    if not label:
        return traces
    if NUL in label:
        return traces.none()
    tagged = Annotation.objects.filter(trace=OuterRef("pk"), label__name__iexact=label)
    return traces.filter(Exists(tagged))


def annotations_matching(*, text: str) -> QuerySet[Annotation]:
    """The annotations whose comment or label name holds `text`, in any case (search of the
    trace list: annotations are few and short, so a scan is cheap)."""
    return Annotation.objects.filter(Q(comment__icontains=text) | Q(label__name__icontains=text))


def block_label_names(
    *, trace: Trace, annotations: list[Annotation] | None = None
) -> dict[str, list[str]]:
    """Block id -> the names of the labels on that block of the trace. `annotations`: all
    of the trace's, as `annotations_of` reads them, when the caller has them (the trace
    page shows them): then no query."""
    found: dict[str, list[str]] = {}
    if annotations is None:
        rows = (
            Annotation.objects.filter(trace=trace, block__isnull=False, label__isnull=False)
            .order_by("created_at", "id")
            .values_list("block_id", "label__name")
        )[:5000]
    else:
        rows = [
            (note.block_id, note.label.name)
            for note in annotations
            if note.block_id is not None and note.label_id is not None
        ]
    for block_id, name in rows:
        names = found.setdefault(block_id, [])
        if name not in names:
            names.append(name)
    return found


def trace_label_names(*, trace_ids: list[str]) -> dict[str, list[str]]:
    """The label names on each of these traces (their blocks' included), for a list."""
    found: dict[str, list[str]] = {}
    if not trace_ids:
        return found
    rows = (
        Annotation.objects.filter(trace_id__in=trace_ids, label__isnull=False)
        .values_list("trace_id", "label__name")
        .distinct()
        .order_by("trace_id", "label__name")
    )
    for trace_id, name in rows:
        found.setdefault(trace_id, []).append(name)
    return found
