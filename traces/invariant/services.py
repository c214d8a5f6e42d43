"""Writes of Invariant Explorer's /api/v1 (spec invariant-explorer-api.md) on the store.

A trace keeps its events as pushed (TraceEvent, what GET answers) and is also written as
blocks through the chat import's converter (traces/ingest/events.py), which the pages,
/v1 and search read. The converter is asked for its best: an event it cannot turn into
blocks (a tool output that names no call of the trace, a message over the import's size
limit) is kept as an event with no blocks, never refused, since Explorer stores events as
given."""

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from traces import ids
from traces.addresses import AddressInvalid, address_block, address_parse
from traces.checks import Limits, check_no_nul
from traces.errors import BadRequest, NotFound
from traces.ingest.drafts import BlockDraft
from traces.ingest.events import events_to_blocks
from traces.invariant.events import (
    BadTimestamp,
    FoundImage,
    event_rewritten,
    merged_order,
    timestamp_parsed,
)
from traces.models import (
    Annotation,
    ApiKey,
    Block,
    Dataset,
    Image,
    Organization,
    Trace,
    TraceEvent,
    TraceImage,
)
from traces.order import Placer
from traces.selectors.blocks import trace_blocks_placed_again
from traces.services.annotations import trace_reward
from traces.services.datasets import dataset_get_or_create, dataset_lock
from traces.trials import trace_task_trial
from traces.validation import check_accuracy

NAME_RULE = re.compile(r"[A-Za-z0-9_-]+")
NAME_RULE_TEXT = "Dataset name can only contain A-Z, a-z, 0-9, - and _"
SNIPPETS = "snippets"  # the dataset part of an image link of a trace without dataset


def explorer_name_check(name: Any) -> str:
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise BadRequest(NAME_RULE_TEXT)
    if len(name) > 200:
        raise BadRequest("a dataset name has at most 200 characters")
    return name


def image_link(dataset_name: str | None, trace_uuid: Any, sha: str) -> str:
    return f"/api/v1/trace/image/{dataset_name or SNIPPETS}/{trace_uuid}/{sha}.png"


@dataclass
class Writer:
    """Who writes: the user (a session, test mode) or the API key."""

    user: Any = None
    api_key: ApiKey | None = None


@dataclass
class _Event:
    stored: Any  # as Explorer keeps and answers it
    for_blocks: Any  # the same with its images inline, for the converter
    timestamp: datetime | None = None


def _prepared(events: Sequence[Any], link, images: dict[str, FoundImage]) -> list[_Event]:
    # The converter takes the images from the event as sent (its own references).
    return [
        _Event(event_rewritten(e, images, link), event_rewritten(e, None), _moment(e))
        for e in events
    ]


def _moment(event: Any) -> datetime | None:
    """A stored event's timestamp as an instant, for a later append's merge; None when it
    has none or one that is not ISO-8601 (a push stores it as given)."""
    if not isinstance(event, dict) or "timestamp" not in event:
        return None
    try:
        return timestamp_parsed(event["timestamp"])
    except BadTimestamp:
        return None


# --- blocks -----------------------------------------------------------------------------


def _block_time(base: datetime, position: int, j: int) -> datetime:
    """A block's created_at: the stitched order reads blocks in creation order, so an
    event's blocks are stamped after its position in the trace (an append may put an
    event between two others)."""
    return base + timedelta(milliseconds=position, microseconds=j)


def _free_call_id(call_id: str, taken: set[str]) -> str:
    n, candidate = 2, call_id
    while candidate in taken:
        candidate, n = f"{call_id}#{n}", n + 1
    taken.add(candidate)
    return candidate


def _blocks_write(
    trace: Trace, events: list[Any], fresh: set[int], existing: dict[int, list[str]]
) -> dict[int, list[str]]:
    """Convert the trace's whole event list; write the blocks of the `fresh` events (their
    parents among the blocks of earlier events are the stored ones, `existing`: event
    index -> its block ids in order). A block whose parent was never stored is left out
    with its children. Returns event index -> the block ids written for it."""
    drafts: list[BlockDraft] = []
    converted = events_to_blocks(
        events, location={}, limits=Limits.for_import(), images=True, emit=drafts.append
    )
    stored: dict[str, str] = {}  # a draft's id -> the id its block has in the table
    per_event: Counter = Counter()
    written: dict[int, list[str]] = {}
    taken = set(
        Block.objects.filter(trace=trace, sub_type="TOOL_CALL").values_list("call_id", flat=True)
    )
    renamed: dict[str, str] = {}  # a call id the converter gave -> the one written
    rows, base, now = [], trace.created_at, timezone.now()
    for draft in drafts:
        i = draft.metadata.get("event_index", 0)
        j = per_event[i]
        per_event[i] += 1
        if i not in fresh:
            olds = existing.get(i, [])
            if j < len(olds):
                stored[draft.id] = olds[j]
            continue
        parent = None
        if draft.parent_id is not None:
            parent = stored.get(draft.parent_id)
            if parent is None:
                continue
        payload, call_id = draft.payload, draft.call_id
        if draft.sub_type == "TOOL_CALL" and call_id is not None:
            renamed[call_id] = _free_call_id(call_id, taken)
        if call_id is not None and renamed.get(call_id, call_id) != call_id:
            call_id = renamed[call_id]
            payload = {**payload, "call_id": call_id}
        stored[draft.id] = draft.id
        written.setdefault(i, []).append(draft.id)
        rows.append(
            Block(
                id=draft.id, trace=trace, block_type=draft.block_type, sub_type=draft.sub_type,
                parent_id=parent, payload=payload, metadata=draft.metadata, raw=draft.raw,
                extra=draft.extra, call_id=call_id, result_seq=draft.result_seq,
                is_error=draft.is_error, created_at=_block_time(base, i, j), updated_at=now,
            )
        )  # fmt: skip
    Block.objects.bulk_create(rows, batch_size=500)
    _images_link(trace, {sha: (i.mime_type, i.data) for sha, i in converted.images.items()})
    return written


def _images_link(trace: Trace, images: dict[str, tuple[str, bytes]]) -> None:
    """Each image stored once in the trace's organization, and linked to the trace."""
    if not images:
        return
    org = trace.organization_id
    Image.objects.bulk_create(
        [
            Image(organization_id=org, sha256=sha, mime_type=mime, data=data, size=len(data))
            for sha, (mime, data) in images.items()
        ],
        ignore_conflicts=True,
    )
    found = Image.objects.filter(organization_id=org, sha256__in=list(images)).values_list(
        "id", flat=True
    )
    TraceImage.objects.bulk_create(
        [TraceImage(trace=trace, image_id=image_id) for image_id in found], ignore_conflicts=True
    )


def _counts_refresh(trace: Trace) -> None:
    """The trace's stitched order, numbers and counts again (traces/order.py), and each
    event's first block number, after its blocks changed. Only the rows whose place or
    number changed are written: an append at the end writes its new blocks' places, not
    every block's again."""
    placed = trace_blocks_placed_again(trace=trace)
    _rows_moved(
        Block,
        ("turn", "act", "step", "number"),
        list(zip(placed.ids, placed.stored, placed.computed, strict=True)),
    )
    errors = Block.objects.filter(trace=trace, is_error=True).count()
    Trace.objects.filter(pk=trace.pk).update(
        block_count=len(placed.ids), tool_errors=errors, block_counts=placed.counts
    )
    number, firsts = 1, []
    events = TraceEvent.objects.filter(trace=trace).order_by("position")
    for pk, first_block, block_count in events.values_list("pk", "first_block", "block_count"):
        firsts.append((pk, (first_block,), (number if block_count else None,)))
        number += block_count
    _rows_moved(TraceEvent, ("first_block",), firsts)


def _rows_moved(model, fields: tuple[str, ...], rows: list[tuple[Any, tuple, tuple]]) -> None:
    """Write (pk, old values, new values) rows whose values changed. An event put before
    others moves every later block's number (and often its turn) by the same amount:
    rows are written a shift at a time, `number = number + 1` for 500 rows a statement,
    not a CASE with a branch a row (bulk_update's, 17 s for 10,000 blocks)."""
    shifts: dict[tuple, list[Any]] = {}
    others: list[Any] = []
    for pk, old, new in rows:
        if old == new:
            continue
        if None in old or None in new:
            others.append(model(pk=pk, **dict(zip(fields, new, strict=True))))
        else:
            delta = tuple(b - a for a, b in zip(old, new, strict=True))
            shifts.setdefault(delta, []).append(pk)
    for delta, pks in shifts.items():
        change = {f: F(f) + d for f, d in zip(fields, delta, strict=True) if d}
        for start in range(0, len(pks), 500):
            model.objects.filter(pk__in=pks[start : start + 500]).update(**change)
    model.objects.bulk_update(others, list(fields), batch_size=500)


# --- annotations ------------------------------------------------------------------------


def _event_blocks(trace: Trace, position: int) -> list[tuple[str, str]]:
    event = TraceEvent.objects.filter(trace=trace, position=position).first()
    if event is None or not event.block_count or event.first_block is None:
        return []
    numbers = (event.first_block, event.first_block + event.block_count - 1)
    rows = Block.objects.filter(trace=trace, number__range=numbers).order_by("number")
    return list(rows.values_list("id", "sub_type"))


def _annotation(trace: Trace, note: Any, writer: Writer) -> Annotation:
    if not isinstance(note, dict):
        raise BadRequest("each annotation is an object with content and address")
    content = note.get("content")
    content = content if isinstance(content, str) else str(content)
    address = note.get("address")
    address = address if isinstance(address, str) or address is None else str(address)
    # text columns, which refuse U+0000 on PostgreSQL (a 500 there): refused everywhere
    check_no_nul(content, "content")
    if address is not None:
        check_no_nul(address, "address")
    if not content and address is None:
        raise BadRequest("an annotation needs content or an address")
    block = None
    if address is not None:
        try:
            parsed = address_parse(address)
        except AddressInvalid:
            parsed = None  # kept as given: an address may point nowhere
        if parsed is not None and parsed.event is not None:
            block = address_block(parsed, _event_blocks(trace, parsed.event))
    return Annotation(
        uuid=uuid4(), id=ids.annotation_id(), trace=trace, block_id=block, comment=content,
        address=address, extra_metadata=note.get("extra_metadata"), author=writer.user,
        api_key=writer.api_key,
    )  # fmt: skip


def annotations_add(*, trace: Trace, notes: Sequence[Any], writer: Writer) -> list[Annotation]:
    rows = [_annotation(trace, note, writer) for note in notes]
    return Annotation.objects.bulk_create(rows)


def explorer_annotation_update(
    *, annotation: Annotation, content: Any, extra_metadata: Any
) -> Annotation:
    """Replace the content; merge `extra_metadata` into the stored one, key by key."""
    annotation.comment = check_no_nul(
        content if isinstance(content, str) else str(content), "content"
    )
    if isinstance(extra_metadata, dict):
        old = annotation.extra_metadata if isinstance(annotation.extra_metadata, dict) else {}
        annotation.extra_metadata = {**old, **extra_metadata}
    if not annotation.comment and annotation.address is None and annotation.label_id is None:
        raise BadRequest("an annotation needs content or an address")
    annotation.save(update_fields=["comment", "extra_metadata"])
    return annotation


# --- traces -----------------------------------------------------------------------------


@dataclass
class _NewTrace:
    """A trace read and converted before the dataset's lock is taken, so that the lock is
    held only while its rows are written."""

    uuid: Any
    metadata: dict[str, Any]
    events: list[_Event]
    images: dict[str, tuple[str, bytes]]  # sha -> (mime type, bytes)
    drafts: list[BlockDraft]


def events_count_check(count: int, *, stored: int = 0) -> None:
    """A trace's events within EXPLORER_MAX_TRACE_EVENTS: every append converts the whole
    trace again under its lock, so its time grows with the trace."""
    limit = settings.EXPLORER_MAX_TRACE_EVENTS
    if stored + count > limit:
        held = f"{stored} stored and {count} new" if stored else f"{count}"
        raise BadRequest(
            f"a trace holds at most {limit} events (EXPLORER_MAX_TRACE_EVENTS); this one "
            f"would hold {held}"
        )


def _new_trace(events: Sequence[Any], metadata: dict, dataset_name: str | None) -> _NewTrace:
    events_count_check(len(events))
    uuid, found = uuid4(), {}
    prepared = _prepared(events, _linker(dataset_name, uuid), found)
    drafts: list[BlockDraft] = []
    converted = events_to_blocks(
        [e.for_blocks for e in prepared], location={}, limits=Limits.for_import(),
        images=True, emit=drafts.append,
    )  # fmt: skip
    images = {sha: (i.mime_type, i.data) for sha, i in found.items()}
    images.update({sha: (i.mime_type, i.data) for sha, i in converted.images.items()})
    return _NewTrace(uuid, metadata, prepared, images, drafts)


def _fresh_blocks(trace: Trace, drafts: list[BlockDraft]) -> tuple[list[Block], Counter, dict]:
    """A new trace's blocks, placed in the stitched order as they come (traces/order.py)
    and numbered; a block whose parent the converter left out is left out too. Their rows,
    the blocks of each event, and the counts per kind."""
    placer, rows, per_event, index = Placer(), [], Counter(), {}
    now = timezone.now()
    for draft in drafts:
        parent = None
        if draft.parent_id is not None:
            parent = index.get(draft.parent_id)
            if parent is None:
                continue
        i = draft.metadata.get("event_index", 0)
        place = placer.add(draft.sub_type, parent, draft.result_seq)
        index[draft.id] = len(rows)
        rows.append(
            Block(
                id=draft.id, trace=trace, block_type=draft.block_type, sub_type=draft.sub_type,
                parent_id=draft.parent_id, payload=draft.payload, metadata=draft.metadata,
                raw=draft.raw, extra=draft.extra, call_id=draft.call_id,
                result_seq=draft.result_seq, is_error=draft.is_error,
                created_at=_block_time(trace.created_at, i, per_event[i]), updated_at=now,
                turn=place.turn, act=place.act, step=place.step, number=len(rows) + 1,
            )
        )  # fmt: skip
        per_event[i] += 1
    return rows, per_event, placer.counts


def _trace_write(
    new: _NewTrace, *, organization: Organization, dataset: Dataset | None, index: int,
    writer: Writer, notes: Sequence[Any], name: str | None = None,
) -> Trace:  # fmt: skip
    metadata = new.metadata
    name = name or (metadata["name"] if _named(metadata) else f"Run {index}")
    task, trial = trace_task_trial(metadata=metadata)
    trace = Trace.objects.create(
        uuid=new.uuid, organization=organization, dataset=dataset, index=index,
        name=name[:500], metadata=metadata, reward=_reward(metadata), task=task, trial=trial,
    )  # fmt: skip
    rows, per_event, counts = _fresh_blocks(trace, new.drafts)
    Block.objects.bulk_create(rows, batch_size=500)
    first, events = 1, []
    for n, e in enumerate(new.events):
        events.append(
            TraceEvent(
                trace=trace, position=n, event=e.stored, timestamp=e.timestamp,
                block_count=per_event[n], first_block=first if per_event[n] else None,
            )
        )  # fmt: skip
        first += per_event[n]
    TraceEvent.objects.bulk_create(events, batch_size=500)
    _images_link(trace, new.images)
    errors = sum(1 for b in rows if b.is_error)
    Trace.objects.filter(pk=trace.pk).update(
        block_count=len(rows), tool_errors=errors, block_counts=counts
    )
    if notes:
        annotations_add(trace=trace, notes=notes, writer=writer)
    return trace


def _reward(metadata: dict) -> float | None:
    try:
        return trace_reward(extra={}, metadata=metadata)
    except Exception:  # noqa: BLE001 - a reward out of range is kept in metadata, not scored
        return None


def _next_index(dataset: Dataset) -> int:
    top = dataset.traces.aggregate(top=Max("index"))["top"]
    return 0 if top is None else top + 1


def explorer_traces_push(
    *,
    organization: Organization,
    messages: list[list[Any]],
    annotations: list[Any] | None,
    metadata: list[Any] | None,
    dataset_name: str | None,
    writer: Writer,
) -> tuple[list[Trace], Dataset | None]:
    """Push traces (2.1): into the named dataset of the organization (created if new,
    race-free), with gapless indices taken under the dataset's lock; else as snippets."""
    if dataset_name is not None:
        explorer_name_check(dataset_name)
    news = []
    for n, events in enumerate(messages):
        meta = metadata[n] if metadata is not None else None
        news.append(_new_trace(events, dict(meta) if isinstance(meta, dict) else {}, dataset_name))
    dataset = None
    with transaction.atomic():
        # The rows are written first, outside the dataset; the dataset's lock is taken
        # last, only to give them their indices: concurrent pushes wait for each other
        # that long, not for each other's writes.
        traces = [
            _trace_write(
                new,
                organization=organization,
                dataset=None,
                index=0,
                writer=writer,
                notes=(annotations[n] if annotations is not None else None) or [],
            )  # fmt: skip
            for n, new in enumerate(news)
        ]
        if dataset_name is not None:
            dataset, _ = dataset_get_or_create(organization=organization, name=dataset_name)
            dataset = dataset_lock(dataset=dataset)
            first = _next_index(dataset)
            for n, trace in enumerate(traces):
                trace.dataset, trace.index = dataset, first + n
                if not _named(news[n].metadata):
                    trace.name = f"Run {trace.index}"
                trace.save(update_fields=["dataset", "index", "name"])
            dataset.save(update_fields=["updated_at"])
    return traces, dataset


def _named(metadata: dict) -> bool:
    return isinstance(metadata.get("name"), str) and bool(metadata["name"])


def _linker(dataset_name: str | None, uuid: Any):
    return lambda sha: image_link(dataset_name, uuid, sha)


def explorer_messages_append(
    *, trace: Trace, messages: list[Any], timestamps: list[datetime | None],
    annotations: Sequence[Any], writer: Writer,
) -> None:  # fmt: skip
    """Append events (2.2): merged with the stored ones by timestamp, each list in its own
    order (an old event goes first only if strictly earlier; one without a timestamp counts
    at the trace's creation). The new events' blocks are written and every block placed
    again; annotations are added as given (indices refer to the merged list)."""
    now = timezone.now()
    images: dict[str, FoundImage] = {}
    dataset_name = trace.dataset.name if trace.dataset_id else None
    new = _prepared(messages, _linker(dataset_name, trace.uuid), images)
    for event, moment in zip(new, timestamps, strict=True):
        event.timestamp = moment or now
    with transaction.atomic():
        locked = Trace.objects.select_for_update().filter(pk=trace.pk).first()
        if locked is None:
            raise NotFound("Trace not found")
        old = list(TraceEvent.objects.filter(trace=trace).order_by("position"))
        events_count_check(len(new), stored=len(old))
        order = merged_order(
            [e.timestamp or trace.created_at for e in old], [e.timestamp for e in new]
        )
        # Every event's blocks as the table holds them, by the event's old position.
        existing: dict[int, list[str]] = {}
        numbered = dict(
            Block.objects.filter(trace=trace).values_list("number", "id").order_by("number")
        )
        for e in old:
            if e.block_count and e.first_block is not None:
                span = range(e.first_block, e.first_block + e.block_count)
                existing[e.position] = [numbered[k] for k in span if k in numbered]
        merged_events, fresh, old_blocks = [], set(), {}
        for position, (is_new, k) in enumerate(order):
            if is_new:
                fresh.add(position)
                merged_events.append(new[k].for_blocks)
            else:
                # its image links as text: only its calls matter to the new events
                merged_events.append(old[k].event)
                old_blocks[position] = existing.get(old[k].position, [])
        written = _blocks_write(trace, merged_events, fresh, old_blocks)
        _moved_blocks_restamp(trace, order, old, old_blocks)
        _events_merge(trace, order, old, new, written)
        _images_link(trace, {sha: (i.mime_type, i.data) for sha, i in images.items()})
        _counts_refresh(trace)
        if annotations:
            annotations_add(trace=trace, notes=annotations, writer=writer)
        Trace.objects.filter(pk=trace.pk).update(updated_at=now)
        if trace.dataset_id:
            Dataset.objects.filter(pk=trace.dataset_id).update(updated_at=now)


def _events_merge(
    trace: Trace, order: list[tuple[bool, int]], old: list[TraceEvent], new: list[_Event],
    written: dict[int, list[str]],
) -> None:  # fmt: skip
    """The merged events in the table: the stored ones that an append moved get their new
    position, the new ones are added. A stored event moves by the count of new events
    merged before it, so the moved ones fall in runs of one shift each: they are lifted
    above every position first (one UPDATE; the unique (trace, position) is checked row by
    row on PostgreSQL, so no row may land on a taken place meanwhile), then each run is
    put down at its place (one UPDATE a run, at most one per new event), never one
    statement per event. An append after every stored event (the usual case) moves none."""
    shifts: dict[int, list[int]] = {}  # shift -> the old positions that move by it
    for p, (is_new, k) in enumerate(order):
        if not is_new and old[k].position != p:
            shifts.setdefault(p - old[k].position, []).append(old[k].position)
    if not shifts:
        return _events_add(trace, order, new, written)
    lift = old[-1].position + len(order) + 1  # above every old and new position
    events = TraceEvent.objects.filter(trace=trace)
    # Each run is a range of old positions that holds only its own events (the stored
    # events keep their order, and a later one moves at least as far as an earlier one).
    runs = [(min(positions), max(positions), shift) for shift, positions in shifts.items()]
    for low, high, _ in runs:
        events.filter(position__range=(low, high)).update(position=F("position") + lift)
    for low, high, shift in runs:
        events.filter(position__range=(low + lift, high + lift)).update(
            position=F("position") - lift + shift
        )
    _events_add(trace, order, new, written)


def _events_add(
    trace: Trace, order: list[tuple[bool, int]], new: list[_Event],
    written: dict[int, list[str]],
) -> None:  # fmt: skip
    TraceEvent.objects.bulk_create(
        [
            TraceEvent(
                trace=trace, position=p, event=new[k].stored, timestamp=new[k].timestamp,
                block_count=len(written.get(p, [])),
            )
            for p, (is_new, k) in enumerate(order)
            if is_new
        ],
        batch_size=500,
    )  # fmt: skip


def _moved_blocks_restamp(
    trace: Trace, order: list[tuple[bool, int]], old: list[TraceEvent],
    blocks: dict[int, list[str]],
) -> None:  # fmt: skip
    """The blocks of stored events that an append moved to a later position get the
    creation time of their new place, so that the stitched order follows the events: a
    block of an event moved by n places is n milliseconds later (_block_time), written a
    shift at a time."""
    shifts: dict[int, list[str]] = {}
    for position, (is_new, k) in enumerate(order):
        if not is_new and old[k].position != position:
            shifts.setdefault(position - old[k].position, []).extend(blocks.get(position, []))
    for shift, block_ids in shifts.items():
        later = F("created_at") + timedelta(milliseconds=shift)
        for start in range(0, len(block_ids), 500):
            Block.objects.filter(trace=trace, id__in=block_ids[start : start + 500]).update(
                created_at=later
            )


def explorer_dataset_create(
    *, organization: Organization, name: Any, metadata: dict[str, Any], is_public: bool
) -> Dataset:
    """A new dataset (2.6); its metadata gains `created_on` (local time)."""
    from traces.services.datasets import DatasetNameTaken, dataset_create

    explorer_name_check(name)
    created_on = timezone.localtime().strftime("%Y-%m-%d %H:%M:%S")
    try:
        return dataset_create(
            organization=organization, name=name, is_public=is_public,
            metadata={**metadata, "created_on": created_on},
        )  # fmt: skip
    except DatasetNameTaken:
        raise BadRequest("Dataset with the same name already exists") from None


# --- dataset metadata (2.10) ------------------------------------------------------------

UPDATABLE = ("benchmark", "name", "accuracy", "invariant.test_results", "analysis_report")
TEST_COUNTS = ("num_tests", "num_passed")


def _metadata_value(key: str, value: Any) -> Any:
    """The value to store for an updatable key; BadRequest when it breaks the key's rule."""
    if value is None:
        raise BadRequest(f"{key} must not be null")
    if key == "policies":
        raise BadRequest("policies cannot be updated through this endpoint")
    if key in ("benchmark", "name") and (not isinstance(value, str) or not value):
        raise BadRequest(f"{key} must be a non-empty string")
    if key == "accuracy" and (
        isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0
    ):
        raise BadRequest("accuracy must be a non-negative int or float")
    if key == "accuracy":
        check_accuracy({"accuracy": value})  # finite, within the pages' bound
    if key == "analysis_report" and not isinstance(value, str):
        raise BadRequest("analysis_report must be a string")
    if key == "invariant.test_results":
        if not isinstance(value, dict):
            raise BadRequest("invariant.test_results must be an object")
        counts = {k: value[k] for k in TEST_COUNTS if value.get(k) is not None}
        if any(isinstance(v, bool) or not isinstance(v, int) for v in counts.values()):
            raise BadRequest("num_tests and num_passed must be integers or null")
        if not counts:
            raise BadRequest("invariant.test_results needs num_tests or num_passed")
        return counts
    return value


def explorer_metadata_update(
    *, dataset: Dataset, metadata: Any, replace_all: Any
) -> dict[str, Any]:
    """Update the updatable keys of a dataset's metadata (2.10): each given key replaces its
    value; with `replace_all`, an updatable key not given is removed. Other keys stay. The
    types are checked before the keys."""
    if not isinstance(metadata, dict):
        raise BadRequest("metadata must be an object")
    if not isinstance(replace_all, bool):
        raise BadRequest("replace_all must be a boolean")
    values = {key: _metadata_value(key, value) for key, value in metadata.items()}
    unknown = [key for key in values if key not in UPDATABLE]
    if unknown:
        raise BadRequest(
            f"cannot update {', '.join(unknown)}; the keys that can be updated are "
            + ", ".join(UPDATABLE)
        )
    with transaction.atomic():
        locked = dataset_lock(dataset=dataset)
        current = dict(locked.metadata) if isinstance(locked.metadata, dict) else {}
        if replace_all:
            for key in UPDATABLE:
                current.pop(key, None)
        current.update(values)
        locked.metadata = current
        locked.save(update_fields=["metadata", "updated_at"])
    dataset.metadata = current
    return current
