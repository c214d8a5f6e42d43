"""Writing what an OTLP export request brings: its spans kept (OtelSpan), and each OTel
trace's blocks derived again from all its spans (traces.otel.mapping), the new ones
written and every block placed in the derived order (traces/order.py).

One transaction per request, under each dataset's lock (traces.services.datasets): two
requests bringing spans of one trace take turns, so a span is stored once and a trace is
made once, whatever races; the unique (trace, span_id) is the database's backstop.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from traces import ids, jsontext
from traces.checks import Context, Limits, ParentInfo, check_json_depth
from traces.errors import NotFound, TraceStoreError
from traces.ingest.types import Usage
from traces.models import Block, Dataset, Organization, OtelSpan, Trace
from traces.order import count_places, stitched_places
from traces.otel.decode import SpanIn
from traces.otel.mapping import Derived, Draft, derive, span_messages
from traces.services.annotations import trace_reward
from traces.services.datasets import dataset_get_or_create, dataset_lock, dataset_name_check
from traces.services.traces import trace_create
from traces.trials import trace_task_trial
from traces.validation import validate_block

DATASET_ATTRIBUTE = "trace_explorer.dataset"
DEFAULT_DATASET = "otel"
NAME_MAX = 500
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class IngestResult:
    """What the receiver answers: how many spans were refused, and why (OTLP's
    partial_success)."""

    spans: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    traces: set[str] = field(default_factory=set)


def dataset_name_of(resource: dict[str, Any]) -> str:
    """The resource's `trace_explorer.dataset`, else its `service.name`, else "otel"."""
    for key in (DATASET_ATTRIBUTE, "service.name"):
        value = resource.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return DEFAULT_DATASET


def time_of(ns: int) -> datetime:
    """A span's time as a block's created_at (microseconds); now when it has none or one
    no datetime can hold."""
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000) if ns > 0 else timezone.now()
    except OverflowError:
        return timezone.now()


def otel_spans_ingest(*, organization: Organization, spans: list[SpanIn]) -> IngestResult:
    """Store the spans in the organization (datasets made as needed) and grow their
    traces. Spans refused (no ids, a dataset name that cannot be) are counted, with their
    reason; everything else is written in one transaction."""
    result = IngestResult(spans=len(spans))
    by_dataset: dict[str, list[SpanIn]] = defaultdict(list)
    over: Counter[str] = Counter()  # the request's caps: spans refused past each
    traces: set[tuple[str, str]] = set()
    taken = 0
    for item in spans:
        if item.span is None:
            result.rejected += 1
            result.errors.append(item.problem)
            continue
        try:
            name = dataset_name_check(dataset_name_of(item.resource))
        except TraceStoreError as exc:
            result.rejected += 1
            result.errors.append(f"span {item.span['span_id']}: {exc.message}")
            continue
        cap = _request_cap(name, item.span["trace_id"], by_dataset, traces, taken)
        if cap is not None:
            over[cap] += 1
            continue
        taken += 1
        traces.add((name, item.span["trace_id"]))
        by_dataset[name].append(item)
    for cap, count in over.items():
        result.rejected += count
        result.errors.append(f"{count} spans refused: {cap}")
    with transaction.atomic():
        # Datasets locked in one order by every request, so that two requests each
        # bringing spans of the same two datasets never wait on each other.
        for name, items in sorted(by_dataset.items()):
            dataset, made = _dataset_locked(organization, name)
            by_trace: dict[str, list[SpanIn]] = defaultdict(list)
            for item in items:
                by_trace[item.span["trace_id"]].append(item)
            for trace_id, trace_items in by_trace.items():
                trace = _trace_for(organization, dataset, trace_id)
                result.traces.add(trace.pk)
                arrived = _store_spans(trace, trace_items, result)
                if arrived:
                    _grow(trace, trace_items[0].resource, result, arrived)
                if not OtelSpan.objects.filter(trace=trace).exists():
                    # made for this request, all of whose spans were refused: no empty trace
                    Trace.objects.filter(pk=trace.pk).delete()
                    result.traces.discard(trace.pk)
            if made and not Trace.objects.filter(dataset=dataset).exists():
                # made for this request, all of whose spans were refused: no empty dataset
                Dataset.objects.filter(pk=dataset.pk).delete()
                continue
            Dataset.objects.filter(pk=dataset.pk).update(updated_at=timezone.now())
    return result


def _request_cap(name: str, trace_id: str, by_dataset, traces, taken: int) -> str | None:
    """Which of the request's caps this span is past, if any (the request's first
    spans, traces and datasets are taken; the rest refused)."""
    if taken >= settings.OTEL_REQUEST_MAX_SPANS:
        return f"a request brings at most {settings.OTEL_REQUEST_MAX_SPANS} spans"
    if name not in by_dataset and len(by_dataset) >= settings.OTEL_REQUEST_MAX_DATASETS:
        return f"a request brings spans of at most {settings.OTEL_REQUEST_MAX_DATASETS} datasets"
    if (name, trace_id) not in traces and len(traces) >= settings.OTEL_REQUEST_MAX_TRACES:
        return f"a request brings spans of at most {settings.OTEL_REQUEST_MAX_TRACES} traces"
    return None


def _dataset_locked(organization: Organization, name: str) -> tuple[Dataset, bool]:
    """The organization's dataset of this name, made if missing, locked for the request;
    made again if a deletion took it between the two. True if this request made it."""
    for attempt in range(2):
        dataset, made = dataset_get_or_create(organization=organization, name=name)
        try:
            return dataset_lock(dataset=dataset), made
        except NotFound:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _trace_for(organization: Organization, dataset: Dataset, otel_trace_id: str) -> Trace:
    """The dataset's trace of this OTel trace id (the caller holds the dataset's lock, so
    two requests never both make it)."""
    found = (
        OtelSpan.objects.filter(otel_trace_id=otel_trace_id, trace__dataset=dataset)
        .values_list("trace_id", flat=True)
        .first()
    )
    if found is not None:
        return Trace.objects.get(pk=found)
    return trace_create(
        organization=organization, dataset=dataset, metadata={"otel.trace_id": otel_trace_id}
    )


def _store_spans(trace: Trace, items: list[SpanIn], result: IngestResult) -> set[str]:
    """Keep the spans the trace does not have yet, within its caps (OTEL_TRACE_MAX_SPANS,
    OTEL_TRACE_MAX_BYTES: past them a span is refused); the ids of those kept."""
    new: dict[str, dict[str, Any]] = {}
    for item in items:
        new.setdefault(item.span["span_id"], item.span)
    stored = set(
        OtelSpan.objects.filter(trace=trace, span_id__in=list(new)).values_list(
            "span_id", flat=True
        )
    )
    held = OtelSpan.objects.filter(trace=trace).aggregate(n=Count("id"), b=Sum("size"))
    count, size = held["n"], held["b"] or 0
    rows = []
    for span_id, span in new.items():
        if span_id in stored:
            continue
        span_size = len(jsontext.dumps(span))
        messages = sum(map(len, span_messages(span)))
        if messages > settings.OTEL_SPAN_MAX_MESSAGES:
            result.rejected += 1
            result.errors.append(
                f"span {span_id}: {messages} messages, the most a span may hold is "
                f"{settings.OTEL_SPAN_MAX_MESSAGES}"
            )
            continue
        if (
            count + 1 > settings.OTEL_TRACE_MAX_SPANS
            or size + span_size > settings.OTEL_TRACE_MAX_BYTES
        ):  # noqa: E501
            result.rejected += 1
            result.errors.append(
                f"span {span_id}: the trace holds {count} spans of {size} bytes, the most "
                f"is {settings.OTEL_TRACE_MAX_SPANS} spans of {settings.OTEL_TRACE_MAX_BYTES}"
            )
            continue
        count, size = count + 1, size + span_size
        rows.append(
            OtelSpan(
                trace=trace, otel_trace_id=span["trace_id"], span_id=span_id,
                start_ns=min(span.get("start_ns") or 0, (1 << 63) - 1), span=span,
                size=span_size,
            )
        )  # fmt: skip
    OtelSpan.objects.bulk_create(rows)
    return {row.span_id for row in rows}


@dataclass
class _Stored:
    id: str
    sub_type: str
    parent_id: str | None
    result_seq: int | None
    place: tuple
    is_error: bool
    call_id: str | None


def _grow(trace: Trace, resource: dict[str, Any], result: IngestResult, arrived: set[str]) -> None:
    """Derive the trace from all its spans; write the blocks not stored yet; place every
    block in the derived order; keep the trace's counts, usage and metadata. A span of
    this request any of whose blocks is refused is refused whole: its row is deleted and
    the trace derived again without it, so nothing of it is kept."""
    # The trace row's lock first, as the blocks API takes it to append: no block is
    # written in between the read below and the placing.
    Trace.objects.select_for_update().filter(pk=trace.pk).values_list("pk").first()
    stored: dict[str, _Stored] = {}
    stored_keys: dict[str, str] = {}
    # By creation: this places and numbers them again.
    rows = Block.objects.filter(trace=trace).order_by("created_at", "id")
    for row in rows.values_list(
        "id", "sub_type", "parent_id", "result_seq", "metadata", "turn", "act", "step",
        "number", "is_error", "call_id",
    ):  # fmt: skip
        stored[row[0]] = _Stored(row[0], row[1], row[2], row[3], row[5:9], row[9], row[10])
        otel = row[4].get("otel") if isinstance(row[4], dict) else None
        if isinstance(otel, dict) and isinstance(otel.get("key"), str):
            stored_keys[otel["key"]] = row[0]
    while arrived:  # each turn refuses at least one span, or ends
        spans = list(OtelSpan.objects.filter(trace=trace).values_list("span", flat=True))
        derived = derive(spans, resource)
        by_key = dict(stored_keys)
        new, refused = _new_blocks(trace, derived, by_key, stored, arrived)
        if not refused:
            _place(trace, derived, by_key, stored, new)
            return
        for span_id, reason in refused.items():
            result.rejected += 1
            result.errors.append(f"span {span_id}: {reason}")
        OtelSpan.objects.filter(trace=trace, span_id__in=list(refused)).delete()
        arrived -= set(refused)


def _new_blocks(trace, derived, by_key, stored, arrived) -> tuple[list, dict[str, str]]:
    """The blocks of the drafts not stored yet, and the spans of this request refused
    (span id -> why)."""
    calls_taken = {s.call_id for s in stored.values() if s.sub_type == "TOOL_CALL"}
    new: list[tuple[Draft, Block]] = []
    refused: dict[str, str] = {}
    limits = Limits.for_import()
    for draft in derived.drafts:
        if draft.key in by_key:
            continue
        try:
            block = _block_of(trace, draft, by_key, stored, new, calls_taken, limits)
        except TraceStoreError as exc:
            if draft.span_id in arrived:
                refused.setdefault(draft.span_id, exc.message)
            continue
        if block is None:
            continue
        if len(stored) + len(new) >= settings.OTEL_TRACE_MAX_BLOCKS:
            if draft.span_id in arrived:
                refused.setdefault(
                    draft.span_id,
                    f"the trace would hold more than {settings.OTEL_TRACE_MAX_BLOCKS} blocks",
                )
            continue  # a stored span's late block past the cap: left out
        by_key[draft.key] = block.id
        new.append((draft, block))
    return new, refused


def _block_of(trace, draft, by_key, stored, new, calls_taken, limits):
    """The draft validated as a block of the trace; None when its parent is not there;
    TraceStoreError when it is refused."""
    parent = None
    if draft.parent_key is not None:
        parent_id = by_key.get(draft.parent_key)
        if parent_id is None:
            return None  # its parent was refused
        if parent_id in stored:
            parent_sub_type = stored[parent_id].sub_type
            parent_call = stored[parent_id].call_id
        else:
            parent_block = next(b for _, b in new if b.id == parent_id)
            parent_sub_type, parent_call = parent_block.sub_type, parent_block.call_id
        parent = ParentInfo(id=parent_id, sub_type=parent_sub_type, call_id=parent_call)
    check_json_depth(draft.raw, "raw")
    valid = validate_block(
        sub_type=draft.sub_type, payload=draft.payload, parent=parent, limits=limits,
        ctx=Context(trace_id=trace.pk), strict=False,
    )  # fmt: skip
    if valid.sub_type == "TOOL_CALL" and valid.call_id in calls_taken:
        raise TraceStoreError(f"the trace has a call {valid.call_id!r} already", {})
    if valid.sub_type == "TOOL_CALL":
        calls_taken.add(valid.call_id)
    when = time_of(draft.time_ns)
    metadata = {**dict(valid.notes), **draft.metadata}
    return Block(
        id=ids.block_id(), trace=trace, block_type=valid.block_type, sub_type=valid.sub_type,
        parent_id=parent.id if parent else None, payload=valid.payload, metadata=metadata,
        raw=draft.raw, extra={}, call_id=valid.call_id, result_seq=valid.result_seq,
        is_error=draft.is_error, created_at=when, updated_at=when,
    )  # fmt: skip


def _place(trace: Trace, derived: Derived, by_key, stored, new) -> None:
    """Every block of the trace in the derived order (blocks it does not derive, such as
    ones appended through the blocks API, after them as written), placed afresh: a batch
    that brings earlier spans puts their blocks where they belong."""
    adopted, stand_ins = _adopt(derived, by_key, stored, new)
    order = [by_key[d.key] for d in derived.drafts if d.key in by_key]
    seen = set(order)
    order += [block_id for block_id in stored if block_id not in seen]
    fresh = {block.id: block for _, block in new}
    index = {block_id: n for n, block_id in enumerate(order)}

    def facts(block_id: str) -> tuple[str, str | None, int | None]:
        if block_id in fresh:
            b = fresh[block_id]
            return b.sub_type, b.parent_id, b.result_seq
        s = stored[block_id]
        return s.sub_type, s.parent_id, s.result_seq

    rows = [facts(block_id) for block_id in order]
    places = stitched_places([(sub, index.get(parent), seq) for sub, parent, seq in rows])
    changed = []
    for n, (block_id, place) in enumerate(zip(order, places, strict=True)):
        values = (place.turn, place.act, place.step, n + 1)
        if block_id in fresh:
            block = fresh[block_id]
            block.turn, block.act, block.step, block.number = values
        elif stored[block_id].place != values:
            changed.append(
                Block(id=block_id, turn=values[0], act=values[1], step=values[2], number=values[3])
            )  # noqa: E501
    Block.objects.bulk_create([block for _, block in new])
    for block_id, payload in adopted.items():  # their new parents exist now
        changes = {"payload": payload} if payload is not None else {}
        Block.objects.filter(pk=block_id).update(parent_id=stored[block_id].parent_id, **changes)
    Block.objects.filter(pk__in=stand_ins).delete()
    Block.objects.bulk_update(changed, ["turn", "act", "step", "number"], batch_size=500)
    errors = sum(1 for s in stored.values() if s.is_error) + sum(1 for _, b in new if b.is_error)
    counts = count_places([r[0] for r in rows], places)
    _update_trace(trace, derived, len(order), counts, errors)


def _call_payload(draft: Draft, parent_id: str) -> dict[str, Any] | None:
    """The model's own call (its arguments, as it wrote them) validated, to stand for the
    one made from the tool span; None to keep that one."""
    parent = ParentInfo(id=parent_id, sub_type="MESSAGE", call_id=None)
    try:
        return validate_block(
            sub_type="TOOL_CALL", payload=draft.payload, parent=parent,
            limits=Limits.for_import(), ctx=Context(trace_id=""), strict=False,
        ).payload  # fmt: skip
    except TraceStoreError:
        return None


def _adopt(derived: Derived, by_key, stored, new) -> tuple[dict[str, Any], set[str]]:
    """A call made from a tool span that came before the model span that made it (spans
    are exported as they end) is taken over by that model's message once it arrives:
    the stored call moves under it (`stored` changed to say so), and the empty assistant
    message made to hold the call, now derived no more and holding nothing, goes (it is
    taken out of `stored`). The calls moved, and the stand-ins to delete."""
    adopted = {}
    for draft in derived.drafts:
        block_id = by_key.get(draft.key)
        if draft.sub_type != "TOOL_CALL" or block_id not in stored:
            continue
        parent_id = by_key.get(draft.parent_key)
        if parent_id is not None and stored[block_id].parent_id != parent_id:
            stored[block_id].parent_id = parent_id
            adopted[block_id] = _call_payload(draft, parent_id)
    if not adopted:
        return adopted, set()
    derived_ids = {by_key[d.key] for d in derived.drafts if d.key in by_key}
    holding = {s.parent_id for s in stored.values()} | {b.parent_id for _, b in new}
    stand_ins = {
        block_id
        for key, block_id in by_key.items()
        if key.startswith("span:") and block_id not in derived_ids and block_id not in holding
    }
    for block_id in stand_ins:
        stored.pop(block_id, None)
    return adopted, stand_ins


def _update_trace(trace: Trace, derived: Derived, count: int, counts: dict, errors: int) -> None:
    locked = Trace.objects.get(pk=trace.pk)  # locked by _grow
    metadata = locked.metadata if isinstance(locked.metadata, dict) else {}
    metadata = {**metadata, **derived.metadata}
    locked.metadata = metadata
    locked.name = (derived.name or locked.name).replace("\x00", "")[:NAME_MAX]
    locked.reward = trace_reward(extra=locked.extra, metadata=metadata)
    locked.task, locked.trial = trace_task_trial(metadata=metadata)
    locked.block_count, locked.block_counts, locked.tool_errors = count, counts, errors
    usage = Usage.of(  # plain numbers in range only, as an import keeps them
        input_tokens=derived.input_tokens, output_tokens=derived.output_tokens,
        duration_seconds=derived.duration_seconds,
    )  # fmt: skip
    locked.input_tokens, locked.output_tokens = usage.input_tokens, usage.output_tokens
    locked.duration_seconds = usage.duration_seconds
    locked.save()
