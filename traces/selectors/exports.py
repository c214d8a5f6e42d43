"""Datasets back out as JSONL: chat events (what was imported, unchanged) or blocks."""

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from traces import jsontext, kinds
from traces.ingest.images import referenced_images, restore_images
from traces.ingest.types import USAGE_COLUMNS
from traces.models import WRITTEN_ORDER, Annotation, Block, Dataset, Trace
from traces.selectors.blocks import BLOCK_MODEL_FIELDS, block_dict
from traces.selectors.images import trace_image_bytes

EXPORT_FORMATS = ("chat", "blocks")


def _blocks_of(trace: Trace) -> list[dict[str, Any]]:
    rows = Block.objects.filter(trace=trace).order_by(*WRITTEN_ORDER)
    return [block_dict(row) for row in rows.values_list(*BLOCK_MODEL_FIELDS)]


def _with_images(trace: Trace, value: Any) -> Any:
    """`value` with the images the trace was stored with put back, byte for byte."""
    shas = referenced_images(value)
    if not shas:
        return value
    return restore_images(value, trace_image_bytes(trace=trace, shas=shas))


def _event_of(block: dict[str, Any], children: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The chat event of a block written through the blocks API (no original event): its
    kind's own event, with what the kinds of its children add to it; None for a kind that
    goes into its parent's event (traces/kinds.py)."""
    kind = kinds.kind_of(block["sub_type"])
    if kind is None or kind.to_event is None:
        return None
    event = kind.to_event(block["payload"])
    for child_kind in kinds.children_of(kind.sub_type):
        if child_kind.into_event is None:
            continue
        payloads = [c["payload"] for c in children if c["sub_type"] == child_kind.sub_type]
        if payloads:
            child_kind.into_event(event, payloads)
    return event


def trace_events(*, trace: Trace) -> list[dict[str, Any]]:
    """The trace as chat events: the original events where the blocks keep them."""
    blocks = _blocks_of(trace)
    children: dict[str, list[dict[str, Any]]] = {}
    for block in blocks:
        if block["parent_block_id"] is not None:
            children.setdefault(block["parent_block_id"], []).append(block)
    events: list[Any] = []
    seen_events: set[int] = set()
    for block in blocks:
        event_index = block["metadata"].get("event_index")
        if event_index is not None:
            if event_index not in seen_events and block["raw"] is not None:
                seen_events.add(event_index)
                events.append(block["raw"])
            continue
        event = _event_of(block, children.get(block["id"], []))
        if event is not None:
            events.append(event)
    return _with_images(trace, events)


def trace_blocks_export(*, trace: Trace) -> list[dict[str, Any]]:
    out = []
    for block in _blocks_of(trace):
        del block["trace_id"]  # the line is the trace's
        block["created_at"] = block["created_at"].isoformat()
        block["updated_at"] = block["updated_at"].isoformat()
        out.append(block)
    return _with_images(trace, out)


def annotation_export(annotation: Annotation) -> dict[str, Any]:
    """A label or comment as export lines and the API give it; an Explorer note's address
    and extra_metadata where it has them (an upload of the export keeps them)."""
    author = annotation.author.get_username() if annotation.author_id else None
    out = {
        "id": annotation.id,
        "label": annotation.label.name if annotation.label_id else None,
        "comment": annotation.comment,
        "block_id": annotation.block_id,
        "author": author,
        "created_at": annotation.created_at.isoformat(),
    }
    if annotation.address is not None:
        out["address"] = annotation.address
    if annotation.extra_metadata is not None:
        out["extra_metadata"] = annotation.extra_metadata
    return out


def _dataset_annotations(dataset: Dataset) -> dict[str, list[dict[str, Any]]]:
    """Every label and comment of the dataset's traces, by trace (they are few)."""
    rows = (
        Annotation.objects.filter(trace__dataset=dataset)
        .select_related("label", "author")
        .order_by("created_at", "id")
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows.iterator(chunk_size=500):
        found.setdefault(row.trace_id, []).append(annotation_export(row))
    return found


def dataset_export_lines(
    *, dataset: Dataset, fmt: str = "chat", traces: QuerySet[Trace] | None = None
) -> Iterator[bytes]:
    """JSONL: a first line with the dataset's metadata, then one trace a line (every trace
    by index, or `traces` of the dataset in their order: what a filtered list shows); a
    trace with labels or comments has them in `annotations` (by block id)."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {EXPORT_FORMATS}, not {fmt!r}")
    yield jsontext.dumps({"metadata": dataset.metadata}).encode() + b"\n"
    annotations = _dataset_annotations(dataset)
    if traces is None:
        traces = dataset.traces.order_by("index")
    for trace in traces.filter(dataset=dataset).iterator(chunk_size=200):
        # The trace's own fields beside its content, so that the line imports back as the
        # trace it was (traces/ingest/traces_in.py): its name, its extra (a reward a
        # reader set) and its usage figures.
        line: dict[str, Any] = {"name": trace.name, "metadata": trace.metadata}
        if trace.extra:
            line["extra"] = trace.extra
        usage = {c: getattr(trace, c) for c in USAGE_COLUMNS if getattr(trace, c) is not None}
        if usage:
            line["usage"] = usage
        if fmt == "chat":
            line["messages"] = trace_events(trace=trace)
        else:
            line["blocks"] = trace_blocks_export(trace=trace)
        if trace.pk in annotations:
            line["annotations"] = annotations[trace.pk]
        yield jsontext.dumps(line).encode() + b"\n"
