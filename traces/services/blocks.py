"""Appending blocks to a trace through the API: one at a time or a batch."""

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from traces import ids, jsontext
from traces.bulk import BLOCK_COLUMNS, PLACE_COLUMNS, adapt_datetime, insert_rows
from traces.checks import NUL, Context, Limits, ParentInfo, ValidBlock, check_json_depth
from traces.errors import (
    DuplicateCallId,
    DuplicateResultSeq,
    NotFound,
    TraceStoreError,
    ValidationFailed,
)
from traces.models import Block, Trace
from traces.order import ORPHAN, Place, TraceOrder, count_places, place_block
from traces.search_queue import search_queue_traces, search_queued_here
from traces.selectors.blocks import block_dict, trace_blocks_placed_again
from traces.services.annotations import check_extra
from traces.validation import validate_block

BATCH_MAX = 1000


@dataclass
class BlockInput:
    sub_type: Any
    payload: Any
    block_type: Any = None
    parent_block_id: Any = None
    raw: Any = None
    extra: Any = None
    ref: Any = None


def _duplicate_error(exc: IntegrityError, valid: ValidBlock) -> TraceStoreError:
    text = str(exc)
    if "result_seq" in text or "block_unique_result_seq" in text:
        seq = valid.result_seq
        return DuplicateResultSeq(
            f"this trace already has a TOOL_RESULT for call_id {valid.call_id!r} with seq {seq}",
            {"field": "payload.seq", "call_id": valid.call_id, "seq": seq},
        )
    if "call_id" in text or "block_unique_call_id" in text:
        return DuplicateCallId(
            f"this trace already has a TOOL_CALL with call_id {valid.call_id!r}",
            {"field": "payload.call_id", "call_id": valid.call_id},
        )
    raise exc


def _parent_id_checked(parent_block_id: Any) -> str | None:
    """The parent id a block names, if it can name one: a string without NUL (no id holds
    one, and PostgreSQL would refuse it); a NUL names no block."""
    if parent_block_id is not None and not isinstance(parent_block_id, str):
        raise ValidationFailed(
            "parent_block_id must be a string", {"field": "parent_block_id", "rule": "type"}
        )
    return parent_block_id


def _parent_missing(parent_block_id: str) -> ValidationFailed:
    return ValidationFailed(
        f"parent_block_id {parent_block_id!r} names no block of this trace",
        {"field": "parent_block_id", "rule": "parent_exists"},
    )


# What the deferred check of a block's parent names when it refuses one (migration 0023).
PARENT_RULE = "block_parent_same_trace"


def _parent_found(
    parent_block_id: str | None, row: tuple | None
) -> tuple[ParentInfo | None, Place]:
    """The parent a block names, from its row (sub_type, call_id, turn, act) or None when
    the trace has no such block, and its place in the stitched order."""
    if parent_block_id is None:
        return None, ORPHAN
    if row is None or row[0] is None:
        raise _parent_missing(parent_block_id)
    return ParentInfo(id=parent_block_id, sub_type=row[0], call_id=row[1]), Place(row[2], row[3])


def _parent_row(trace_id: str, parent_block_id: str | None) -> tuple | None:
    """The parent's (sub_type, call_id, turn, act), None when the trace has no such block."""
    if parent_block_id is None or NUL in parent_block_id:
        return None
    # [:1], not first(): no ORDER BY for a key looked up.
    found = Block.objects.filter(trace_id=trace_id, id=parent_block_id).values_list(
        "sub_type", "call_id", "turn", "act"
    )[:1]
    return next(iter(found), None)


def _parent_of(trace: Trace, parent_block_id: Any) -> tuple[ParentInfo | None, Place]:
    """The parent a block names, and its place in the stitched order."""
    parent_block_id = _parent_id_checked(parent_block_id)
    return _parent_found(parent_block_id, _parent_row(trace.pk, parent_block_id))


class _Appending:
    """The trace's counts and stitched order while blocks are appended to it, read under
    the trace row's lock (traces/order.py), and written back with the new blocks."""

    def __init__(self, trace: Trace, parent_block_id: str | None = None) -> None:
        """`parent_block_id`: the parent one block names, read in the statement that
        takes the lock (`parent_row`): a one-block append makes one round trip fewer.
        That statement reads it as it began; if the trace changed while it waited for the
        lock, it is read again (`_locked_trace`)."""
        self.trace = trace
        found = _locked_trace(trace.pk, parent_block_id)
        if found is None:  # deleted since the request found it
            raise NotFound(f"no trace {trace.pk!r}", {"trace_id": trace.pk})
        self.block_count, counts = found[:2]
        self.parent_row = found[2:]
        self.counts = counts if isinstance(counts, dict) else {}
        self.order = TraceOrder(turns=self.counts.get("MESSAGE", 0), acts_of_turn=self._acts)
        self.places: dict[str, Place] = {}

    def _acts(self, turn: int) -> int:
        rows = Block.objects.filter(trace=self.trace, turn=turn)
        return rows.aggregate(n=Max("act"))["n"] or 0

    def place(self, row: "_NewRow", parent_sub_type: str | None, parent_place: Place) -> tuple:
        place = place_block(
            sub_type=row.sub_type, result_seq=row.result_seq, parent_sub_type=parent_sub_type,
            parent_place=self.places.get(row.parent_id, parent_place), order=self.order,
        )  # fmt: skip
        self.places[row.id] = place
        self.block_count += 1
        return (place.turn, place.act, place.step, self.block_count)

    def save(self, rows: list["_NewRow"]) -> None:
        counts = count_places(
            [r.sub_type for r in rows], [self.places[r.id] for r in rows], self.counts
        )
        Trace.objects.filter(pk=self.trace.pk).update(
            block_count=self.block_count, block_counts=counts, updated_at=timezone.now()
        )


def _locked_trace(trace_id: str, parent_block_id: str | None) -> tuple | None:
    """(block_count, block_counts, and the parent's sub_type, call_id, turn, act, None
    when it has no such block) of the trace, its row locked FOR UPDATE; None when it is
    gone. The parent as it is under the lock: on PostgreSQL the statement that waited for
    the lock returns the trace row as the lock's holder left it, but the parent's as it
    was when the statement began; so when the trace row changed meanwhile (every writer
    of its blocks writes it: an append, OpenTelemetry's placing again), the parent is
    read again. Else a parent that holder wrote was not found, or one it moved placed
    the block by where it had been (attacker review)."""
    trace_table, block_table = Trace._meta.db_table, Block._meta.db_table
    wanted = None if parent_block_id is None or NUL in parent_block_id else parent_block_id
    if connection.features.has_select_for_update_of:
        # t0: the trace row as the statement began, which the lock leaves as it was.
        sql = (
            f"SELECT t.block_count, t.block_counts, p.sub_type, p.call_id, p.turn, p.act, "
            f"t.xmin = t0.xmin FROM {trace_table} t JOIN {trace_table} t0 ON t0.id = t.id "
            f"LEFT JOIN {block_table} p ON p.trace_id = t.id AND p.id = %s "
            f"WHERE t.id = %s FOR UPDATE OF t"
        )
    else:  # SQLite: no row locks; its transactions here are IMMEDIATE, one writer at a time
        sql = (
            f"SELECT t.block_count, t.block_counts, p.sub_type, p.call_id, p.turn, p.act, 1 "
            f"FROM {trace_table} t LEFT JOIN {block_table} p "
            f"ON p.trace_id = t.id AND p.id = %s WHERE t.id = %s"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [wanted, trace_id])
        row = cursor.fetchone()
    if row is None:
        return None
    *row, unchanged = row
    if not unchanged and wanted is not None:
        row[2:] = _parent_row(trace_id, wanted) or (None, None, None, None)
    if isinstance(row[1], str):  # SQLite: the JSON as its text
        row[1] = jsontext.loads(row[1])
    return tuple(row)


@dataclass
class _NewRow:
    """A validated block, ready to write: no model instance, which would cost more than
    the write itself at a thousand blocks a request."""

    id: str
    sub_type: str
    block_type: str
    parent_id: str | None
    payload: Any
    metadata: dict[str, Any]
    raw: Any
    extra: dict[str, Any]
    call_id: str | None
    result_seq: int | None

    def as_tuple(self, trace_id: str, now: Any) -> tuple:
        dumps = jsontext.dumps
        raw = None if self.raw is None else dumps(self.raw)
        return (
            self.id, trace_id, self.block_type, self.sub_type, self.parent_id,
            dumps(self.payload), dumps(self.metadata), raw, dumps(self.extra),
            self.call_id, self.result_seq, now, now,
        )  # fmt: skip

    def as_output(self, trace_id: str, now: Any) -> dict[str, Any]:
        return block_dict((
            self.id, trace_id, self.block_type, self.sub_type, self.parent_id, self.payload,
            self.metadata, self.raw, self.extra, now, now,
        ))  # fmt: skip

    def valid(self) -> ValidBlock:
        return ValidBlock(
            self.sub_type, self.block_type, self.payload, self.call_id, self.result_seq
        )


def _row_for(
    trace: Trace,
    block: BlockInput,
    parent: ParentInfo | None,
    parent_id: str | None,
    limits: Limits,
) -> _NewRow:
    """The block validated (traces.validation) under `parent`, ready to write."""
    valid = validate_block(
        sub_type=block.sub_type,
        block_type=block.block_type,
        payload=block.payload,
        parent=parent,
        limits=limits,
        ctx=Context(trace_id=trace.pk, parent_block_id=parent_id),
    )
    check_json_depth(block.raw, "raw")
    return _NewRow(
        id=ids.block_id(),
        sub_type=valid.sub_type,
        block_type=valid.block_type,
        parent_id=parent_id,
        payload=valid.payload,
        metadata=dict(valid.notes),
        raw=block.raw,
        extra={} if block.extra is None else check_extra(block.extra),
        call_id=valid.call_id,
        result_seq=valid.result_seq,
    )


def _tuples(rows: list[_NewRow], trace: Trace, stamp: Any) -> list[tuple]:
    try:
        return [row.as_tuple(trace.pk, stamp) for row in rows]
    except TypeError as exc:  # raw or extra that JSON cannot keep (e.g. NaN)
        raise ValidationFailed(f"cannot be kept as JSON: {exc}", {"rule": "json"}) from None


def block_create(
    *, trace: Trace, block: BlockInput, limits: Limits | None = None
) -> dict[str, Any]:
    """Append one block; returns it as the API shows it. Its parent is read under the
    trace's lock (`_Appending`); one deleted by a writer that does not take that lock
    fails the key check at the commit, and is refused as one the trace does not have."""
    limits = limits or Limits.from_settings()
    parent_id = _parent_id_checked(block.parent_block_id)
    row = None
    try:
        with transaction.atomic():
            appending = _Appending(trace, parent_id)
            parent, parent_place = _parent_found(parent_id, appending.parent_row)
            row = _row_for(trace, block, parent, parent_id, limits)
            [values] = _tuples([row], trace, adapt_datetime(timezone.now()))
            now = _write_locked(appending, [row], [values], {row.id: (parent, parent_place)})
    except IntegrityError as exc:
        if row is None:
            raise
        if parent_id is not None and PARENT_RULE in str(exc):
            raise _parent_missing(parent_id) from None
        raise _duplicate_error(exc, row.valid()) from None
    return row.as_output(trace.pk, now)


def _write(
    trace: Trace,
    rows: list[_NewRow],
    values: list[tuple],
    parents: dict[str, tuple[ParentInfo | None, Place]],
) -> Any:
    """The blocks, each with its place in the stitched order, and the trace's counts, in
    one transaction that holds the trace row's lock (appends to a trace take turns).
    Their created_at is taken under the lock, so that the order of creation is the order
    of the places. Returns it."""
    with transaction.atomic():
        appending = _Appending(trace)
        return _write_locked(appending, rows, values, _parents_now(trace, rows, parents))


def _parents_now(
    trace: Trace, rows: list[_NewRow], parents: dict[str, tuple[ParentInfo | None, Place]]
) -> dict[str, tuple[ParentInfo | None, Place]]:
    """The places of the parents the batch names outside itself, read again under the
    trace's lock, in one query: they were read before it, and the lock's holder may have
    moved one (OpenTelemetry's placing again) or deleted it (a stand-in message): the
    block went under the parent's old turn, or the batch failed with a 500 at the commit
    (attacker review). One that is gone is refused as one the trace does not have."""
    ours = {row.id for row in rows}
    outside = {
        parent.id for parent, _ in parents.values() if parent and parent.id not in ours
    }
    if not outside:
        return parents
    found = Block.objects.filter(trace=trace, id__in=outside).values_list("id", "turn", "act")
    places = {block_id: Place(turn, act) for block_id, turn, act in found}
    now = {}
    for index, row in enumerate(rows):
        parent, place = parents[row.id]
        if parent is not None and parent.id in outside:
            if parent.id not in places:
                raise _with_index(_parent_missing(parent.id), index)
            place = places[parent.id]
        now[row.id] = (parent, place)
    return now


def _write_locked(
    appending: _Appending,
    rows: list[_NewRow],
    values: list[tuple],
    parents: dict[str, tuple[ParentInfo | None, Place]],
) -> Any:
    """`_write`'s work once the trace is locked (`appending`), in its transaction."""
    trace = appending.trace
    now = timezone.now()
    stamp = adapt_datetime(now)
    placed = []
    for row, value in zip(rows, values, strict=True):
        parent, parent_place = parents[row.id]
        sub_type = None if parent is None else parent.sub_type
        value = (*value[:_CREATED_AT], stamp, stamp, *value[_CREATED_AT + 2 :])
        placed.append((*value, *appending.place(row, sub_type, parent_place)))
    columns = (*BLOCK_COLUMNS, *PLACE_COLUMNS)
    if len(placed) == 1:
        # The row's own trigger queues its trace for search, as the statement below
        # would: the setting's two round trips and the statement cost more (0.3 ms
        # of a one-block append's 1.5 ms).
        insert_rows(Block._meta.db_table, columns, placed)
    else:
        with search_queued_here():
            insert_rows(Block._meta.db_table, columns, placed)
        search_queue_traces(trace_ids=[trace.pk])
    appending.save(rows)
    return now


_CREATED_AT = BLOCK_COLUMNS.index("created_at")  # then updated_at


def _with_index(exc: TraceStoreError, index: int) -> TraceStoreError:
    exc.details = {"index": index, **exc.details}
    exc.message = f"block {index}: {exc.message}"
    return exc


def _taken_keys(trace: Trace, call_ids: set[str]) -> tuple[set[str], set[tuple[str, int]]]:
    """Which of `call_ids` the trace's calls and (call, seq) results already use, read in
    one statement so that both come from the same moment. Results without seq never
    conflict (spec/004), so they are not read."""
    calls: set[str] = set()
    results: set[tuple[str, int]] = set()
    if not call_ids:
        return calls, results
    rows = Block.objects.filter(
        Q(sub_type="TOOL_CALL") | Q(sub_type="TOOL_RESULT", result_seq__isnull=False),
        trace=trace,
        call_id__in=call_ids,
    )
    for sub_type, call_id, seq in rows.values_list("sub_type", "call_id", "result_seq"):
        if sub_type == "TOOL_CALL":
            calls.add(call_id)
        else:
            results.add((call_id, seq))
    return calls, results


def _first_duplicate(trace: Trace, rows: list[_NewRow]) -> TraceStoreError | None:
    """The first block of the batch whose call id or result seq the trace (or an earlier
    block of the batch) already has, as its error with its index."""
    calls, results = _taken_keys(trace, {row.call_id for row in rows if row.call_id})
    for index, row in enumerate(rows):
        if row.sub_type == "TOOL_CALL":
            if row.call_id in calls:
                return _with_index(_duplicate_error(IntegrityError("call_id"), row.valid()), index)
            calls.add(row.call_id)
        elif row.sub_type == "TOOL_RESULT" and row.result_seq is not None:
            key = (row.call_id, row.result_seq)
            if key in results:
                error = _duplicate_error(IntegrityError("result_seq"), row.valid())
                return _with_index(error, index)
            results.add(key)
    return None


def blocks_create_batch(
    *, trace: Trace, blocks: list[BlockInput], limits: Limits | None = None
) -> list[dict[str, Any]]:
    """All or nothing; a parent may be an earlier block of the batch, named by its `ref`.
    Returns the written blocks as the API shows them."""
    limits = limits or Limits.from_settings()
    if not blocks or len(blocks) > BATCH_MAX:
        raise ValidationFailed(
            f"a batch holds 1 to {BATCH_MAX} blocks, not {len(blocks)}",
            {"field": "blocks", "rule": "batch_size", "max": BATCH_MAX},
        )
    rows: list[_NewRow] = []
    refs: dict[str, _NewRow] = {}
    parents: dict[str, tuple[ParentInfo | None, Place]] = {}
    for index, block in enumerate(blocks):
        try:
            ref = block.parent_block_id
            if isinstance(ref, str) and ref in refs:
                p = refs[ref]
                parent = ParentInfo(id=p.id, sub_type=p.sub_type, call_id=p.call_id)
                parent_place, parent_id = ORPHAN, p.id  # placed in the batch (_Appending)
            else:
                parent, parent_place = _parent_of(trace, ref)
                parent_id = ref
            row = _row_for(trace, block, parent, parent_id, limits)
            parents[row.id] = (parent, parent_place)
            if block.ref is not None:
                if not isinstance(block.ref, str) or block.ref in refs:
                    raise ValidationFailed(
                        "ref must be a string not used by an earlier block of the batch",
                        {"field": "ref", "rule": "unique"},
                    )
                refs[block.ref] = row
        except TraceStoreError as exc:
            raise _with_index(exc, index) from None
        rows.append(row)
    duplicate = _first_duplicate(trace, rows)
    if duplicate is not None:
        raise duplicate
    tuples = _tuples(rows, trace, adapt_datetime(timezone.now()))
    try:
        now = _write(trace, rows, tuples, parents)
    except IntegrityError as exc:
        if PARENT_RULE in str(exc):  # a parent deleted by a writer without the lock
            raise _first_parent_gone(trace, rows) from None
        # A concurrent writer committed the same key in between: say which block lost.
        raise _first_duplicate(trace, rows) or _duplicate_error(exc, rows[0].valid()) from None
    return [row.as_output(trace.pk, now) for row in rows]


def _first_parent_gone(trace: Trace, rows: list[_NewRow]) -> TraceStoreError:
    """The first block of the batch whose parent, outside the batch, the trace no longer
    has, as its error with its index."""
    ours = {row.id for row in rows}
    named = {row.parent_id for row in rows if row.parent_id and row.parent_id not in ours}
    there = set(Block.objects.filter(trace=trace, id__in=named).values_list("id", flat=True))
    for index, row in enumerate(rows):
        if row.parent_id in named and row.parent_id not in there:
            return _with_index(_parent_missing(row.parent_id), index)
    return _parent_missing(next(iter(named), ""))


def trace_order_refill(*, trace: Trace) -> None:
    """Place every block of the trace again (traces/order.py), its blocks in creation
    order, and count them: what a change of the table of block kinds' parents asks of
    the traces already stored (migration 0014 does the same for every trace)."""
    placed = trace_blocks_placed_again(trace=trace)
    with transaction.atomic():
        Block.objects.bulk_update(
            [
                Block(id=block_id, turn=turn, act=act, step=step, number=number)
                for block_id, (turn, act, step, number) in zip(
                    placed.ids, placed.computed, strict=True
                )
            ],
            ["turn", "act", "step", "number"],
            batch_size=1000,
        )
        Trace.objects.filter(pk=trace.pk).update(block_counts=placed.counts)
