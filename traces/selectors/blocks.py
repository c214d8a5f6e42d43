"""Reading a trace's blocks: flat, and stitched into spec/004's tree.

Rows are read in one query with their JSON columns as text; the API embeds that
text as it is (orjson.Fragment), so a 10,000-block trace is never decoded and
encoded again. Pages ask for each field as StoredJson (decode="lazy"): the text, decoded
only for the blocks a page shows, and only while it may (explorer/render/effort.py).
"""

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import F, Max, TextField
from django.db.models.expressions import ExpressionWrapper
from django.db.models.functions import Substr

from traces import kinds
from traces.models import Block, Organization, Trace
from traces.order import count_places, stitched_places
from traces.selectors import first_or_not_found
from traces.selectors.search import (
    NUL,
    SNIPPET_COLUMNS,
    SearchHit,
    blocks_matching,
    search_words,
    with_snippet,
)

# A block as the API, the export and the pages show it (spec/004's fields, in its order),
# and the model's names for them.
BLOCK_FIELDS = (
    "id", "trace_id", "block_type", "sub_type", "parent_block_id", "payload", "metadata",
    "raw", "extra", "created_at", "updated_at",
)  # fmt: skip
BLOCK_MODEL_FIELDS = (*BLOCK_FIELDS[:4], "parent_id", *BLOCK_FIELDS[5:])


def block_dict(values: Iterable[Any]) -> dict[str, Any]:
    """The block whose BLOCK_FIELDS are `values`, in that order, as a dictionary."""
    return dict(zip(BLOCK_FIELDS, values, strict=True))


def block_of(block: Block) -> dict[str, Any]:
    return block_dict(getattr(block, name) for name in BLOCK_MODEL_FIELDS)


_TEXT_COLUMNS = ("payload", "metadata", "raw", "extra")


class StoredJson:
    """A JSON column as stored (its compact text), decoded on demand: decoding allocates
    (up to ~0.4 µs a character), so a page decodes only what it shows."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def decode(self) -> Any:
        return orjson.loads(self.text)


def _node_maker(decode: bool | str) -> Callable[[tuple], dict[str, Any]]:
    def json_value(text: str | None) -> Any:
        if text is None:
            return None
        if decode == "lazy":
            return StoredJson(text)
        return orjson.loads(text) if decode else orjson.Fragment(text)

    zone = connection.timezone  # once: `connection` is a thread's, looked up at each use

    def aware(value: Any) -> Any:
        # A raw cursor's date on SQLite is naive, in the connection's time zone.
        if value is None or value.tzinfo is not None:
            return value
        return value.replace(tzinfo=zone)

    def make(row: tuple) -> dict[str, Any]:
        return block_dict((*row[:5], *map(json_value, row[5:9]), aware(row[9]), aware(row[10])))

    return make


def trace_tree_get(*, trace: Trace, decode: bool | str = False) -> dict[str, Any]:
    """spec/004's stitched tree, whole: message -> (think, tool_call -> results), plus
    orphans, in the order the writes stored (traces/order.py). JSON fields as
    orjson.Fragment (the API), decoded (`decode=True`) or StoredJson (`decode="lazy"`,
    the pages).

    Each block hangs under its parent when the parent is of the sub type its kind allows
    (traces/kinds.py); a block whose parent is missing or of another sub type is an
    orphan, listed under its kind's `orphans` key."""
    return {
        "trace_id": trace.pk,
        "messages": _messages(trace, after=0, rows=None, decode=decode),
        "orphans": _orphans_by_kind(trace, decode=decode),
    }


# --- In stitched order, a part at a time (traces/order.py) -------------------------------

STITCHED_ORDER = (
    "turn",
    "act",
    "step",
    "result_seq",
    "created_at",
    "id",
)  # index block_stitched_order
PLACE_FIELDS = ("turn", "act", "step", "number")
CURSOR_FRACTION = 0.0001  # of a trace's blocks a reader of trace_blocks_from reads, about


def _placed_rows(trace: Trace):
    text = {
        f"{name}_text": ExpressionWrapper(F(name), output_field=TextField())
        for name in _TEXT_COLUMNS
    }
    return (
        Block.objects.filter(trace=trace)
        .annotate(**text)
        .values_list(
            *BLOCK_MODEL_FIELDS[:5], *text, *BLOCK_MODEL_FIELDS[9:], *PLACE_FIELDS, "is_error"
        )
    )


# What the trace page reads of every block it shows: no payload (read only for the blocks
# it draws anew), raw (its drawer loads it) or dates (it shows none). In plain SQL: a page
# reads ~250 rows, and the ORM's work for each row cost as much as reading it.
_PAGE_FIELDS = ("id", "trace_id", "block_type", "sub_type", "parent_block_id")
_PAGE_JSON = ("metadata", "extra")
_PAGE_COLUMNS = (*_PAGE_FIELDS, *_PAGE_JSON, *PLACE_FIELDS, "is_error", "rendered")


# What blocks.stitched reads of every block: all of it, and its place.
_TREE_COLUMNS = (*BLOCK_FIELDS, *PLACE_FIELDS, "is_error")
_JSON_COLUMNS = frozenset(_TEXT_COLUMNS)


def _ordered_rows(
    trace: Trace,
    columns: tuple[str, ...],
    turn: int,
    act: int,
    batch: int,
    turn_below: int | None = None,
    as_bytes: frozenset[str] = frozenset(),
) -> Iterator[tuple]:
    """The `columns` of the blocks from (turn, act) on (to the turn `turn_below`, when
    given), in stitched order, `batch` rows a fetch (a server-side cursor on PostgreSQL);
    JSON columns as their text, those named in `as_bytes` as its UTF-8 bytes on SQLite."""
    qn = connection.ops.quote_name
    select = [
        f"CAST({qn(c)} AS BLOB)" if c in as_bytes and connection.vendor == "sqlite" else qn(c)
        for c in columns
    ]
    where = f"{qn('trace_id')} = %s AND {qn('turn')} >= %s"
    params: list[Any] = [trace.pk, turn]
    if turn_below is not None:
        where += f" AND {qn('turn')} < %s"
        params.append(turn_below)
    if act:
        where += f" AND NOT ({qn('turn')} = %s AND {qn('act')} < %s)"
        params += [turn, act]
    sql = (
        f"SELECT {', '.join(select)} FROM {qn(Block._meta.db_table)} "
        f"WHERE {where} ORDER BY {', '.join(map(qn, STITCHED_ORDER))}"
    )
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(batch):
            yield from rows


def _payload_texts(trace: Trace, ids: list[str]) -> dict[str, str]:
    """The payloads of these blocks of `trace`, by primary key. (With the trace in the
    WHERE clause SQLite walks the trace's index instead: every block of the trace.)"""
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {qn('id')}, {qn('trace_id')}, {qn('payload')} FROM "
        f"{qn(Block._meta.db_table)} WHERE {qn('id')} IN ({', '.join(['%s'] * len(ids))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, ids)
        return {pk: text for pk, trace_id, text in cursor.fetchall() if trace_id == trace.pk}


class _Payloads:
    """The payloads of a batch of the page's rows, read in one query when the first of
    them is asked for: a page stops a block or two past what it shows, and those blocks,
    never drawn and so never kept by the render cache, would have their payloads read by
    every request."""

    __slots__ = ("trace", "ids", "texts")

    def __init__(self, trace: Trace, ids: list[str]) -> None:
        self.trace, self.ids = trace, ids
        self.texts: dict[str, str] | None = None

    def text(self, block_id: str) -> str:
        if self.texts is None:
            self.texts = _payload_texts(self.trace, self.ids)
        return self.texts.get(block_id, "null")  # null: removed meanwhile


class _BatchPayload(StoredJson):
    """A payload as StoredJson, its text read with its batch's (_Payloads) when asked."""

    __slots__ = ("block_id", "batch")

    def __init__(self, block_id: str, batch: _Payloads) -> None:
        self.block_id, self.batch = block_id, batch

    @property
    def text(self) -> str:  # type: ignore[override]
        return self.batch.text(self.block_id)


def _page_nodes(
    trace: Trace, stream: Iterator[tuple], drawn: Callable[[dict[str, Any]], bool], batch: int
) -> Iterator[tuple[dict[str, Any], tuple[int, int, int, int]]]:
    """The page's nodes from rows of _ordered_rows, a batch at a time: the payloads of the
    blocks `drawn` asks for in one query a batch, made when one of them is first read."""
    rows = list(itertools.islice(stream, batch))
    while rows:
        nodes = []
        for row in rows:
            # _PAGE_COLUMNS, spelled out: a page makes a few hundred of these.
            block_id, trace_id, block_type, sub_type, parent, metadata, extra = row[:7]
            node = {
                "id": block_id,
                "trace_id": trace_id,
                "block_type": block_type,
                "sub_type": sub_type,
                "parent_block_id": parent,
                "metadata": None if metadata is None else StoredJson(metadata),
                "extra": None if extra is None else StoredJson(extra),
                "rendered": row[12],
            }
            if row[11]:  # a tool error, as its format said (Block.is_error)
                node["is_error"] = True
            nodes.append(node)
        wanted = [node for node in nodes if drawn(node)]
        if wanted:
            payloads = _Payloads(trace, sorted(node["id"] for node in wanted))
            for node in wanted:
                node["payload"] = _BatchPayload(node["id"], payloads)
        for node, row in zip(nodes, rows, strict=True):
            yield node, row[7:11]
        rows = list(itertools.islice(stream, batch))


def trace_blocks_from(
    *,
    trace: Trace,
    turn: int = 0,
    act: int = 0,
    decode: bool | str = False,
    batch: int = 32,
    drawn: Callable[[dict[str, Any]], bool] | None = None,
    turn_below: int | None = None,
) -> Iterator[tuple[dict[str, Any], tuple[int, int, int, int]]]:
    """The trace's blocks in stitched order from the place (turn, act) on (to the turn
    `turn_below`, when given: a caller that knows where it stops reads no row past it),
    orphans aside, each with its (turn, act, step, number); one range query on
    block_stitched_order,
    read `batch` rows at a time as the caller consumes them, so a caller that stops after
    a page's worth has read only that (a server-side cursor on PostgreSQL). The caller
    closes the iterator when it stops (that ends its transaction).

    `drawn`: the trace page's read (JSON as StoredJson): each node without its dates and
    raw, with `rendered` (the page's render cache, Block.rendered; None when empty), and
    with its payload only if `drawn(node)` says the page draws it anew (read for a batch
    of rows in one query by id)."""
    # On PostgreSQL in a transaction: outside one its server-side cursor is WITH HOLD, and
    # a held cursor is computed whole when its transaction ends, i.e. the rest of the
    # trace. (Not on SQLite, where a transaction is IMMEDIATE: it would take the write lock.)
    postgresql = connection.vendor == "postgresql"
    with transaction.atomic() if postgresql else contextlib.nullcontext():
        if postgresql:
            # A cursor is planned for a tenth of its rows by default: for a trace of
            # 30,000 blocks a sort of all of them beats the index. A page reads a few
            # hundred: plan for that (the index walk), for this transaction only.
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL cursor_tuple_fraction = {CURSOR_FRACTION}")
        if drawn is not None:
            stream = _ordered_rows(trace, _PAGE_COLUMNS, turn, act, batch, turn_below)
            try:
                yield from _page_nodes(trace, stream, drawn, batch)
            finally:
                stream.close()
            return
        # Plain SQL too: the ORM's converters (its dates, parsed and made aware a field at
        # a time) cost more than reading the rows (blocks.stitched's first page: ~40%).
        make = _node_maker(decode)
        # The API embeds the JSON as it is (orjson.Fragment): as bytes, SQLite's text is
        # neither decoded into str nor encoded back (~1 ms a MB of non-ASCII text).
        as_bytes = frozenset() if decode == "lazy" else _JSON_COLUMNS
        stream = _ordered_rows(trace, _TREE_COLUMNS, turn, act, batch, turn_below, as_bytes)
        try:
            for row in stream:
                node = make(row[:11])
                if row[15]:  # a tool error, as its format said (Block.is_error)
                    node["is_error"] = True
                yield node, row[11:15]
        finally:
            stream.close()


Item = tuple[int, int, dict[str, Any]]  # (turn, act: 0 for the message, node)


def trace_items_from(
    *,
    trace: Trace,
    turn: int = 0,
    act: int = 0,
    decode: bool | str = False,
    numbered: bool = False,
    batch: int = 32,
    drawn: Callable[[dict[str, Any]], bool] | None = None,
    turn_below: int | None = None,
) -> Iterator[Item]:
    """The stitched tree from (turn, act) on, a message or an act at a time: a message
    (its `children` filled by the acts that follow it), or a think or call with its
    results as `children`, as blocks.stitched shows them; read as it is consumed."""
    pending: Item | None = None
    message: dict[str, Any] | None = None
    message_turn = -1
    leaves = {k.sub_type for k in kinds.KINDS if not kinds.children_of(k.sub_type)}
    stream = trace_blocks_from(
        trace=trace, turn=turn, act=act, decode=decode, batch=batch, drawn=drawn,
        turn_below=turn_below,
    )  # fmt: skip
    try:
        for node, (at_turn, at_act, step, number) in stream:
            if numbered:
                node["number"] = number
            if step:
                if pending is not None and pending[:2] == (at_turn, at_act):
                    pending[2].setdefault("children", []).append(node)
                continue
            if pending is not None:
                yield pending
            if node["sub_type"] not in leaves:
                node["children"] = []
            if at_act == 0:
                message, message_turn = node, at_turn
            elif message is not None and at_turn == message_turn:
                message["children"].append(node)
            pending = (at_turn, at_act, node)
        if pending is not None:
            yield pending
    finally:
        stream.close()


def trace_tree_page(*, trace: Trace, after: int, rows: int) -> dict[str, Any]:
    """`rows` messages of spec/004's stitched tree from the message `after` (0-based),
    each with its children; the orphans come with the last page. `next_cursor`: where
    the next page starts, None after the last. Reads only the page's blocks."""
    total = trace.block_counts.get("MESSAGE", 0) if isinstance(trace.block_counts, dict) else 0
    end = after + rows
    last = end >= total
    return {
        "trace_id": trace.pk,
        "messages": _messages(trace, after=after, rows=rows, decode=False),
        "orphans": _orphans_by_kind(trace, decode=False, empty=not last),
        "next_cursor": None if last else str(end),
    }


def _messages(
    trace: Trace, *, after: int, rows: int | None, decode: bool | str
) -> list[dict[str, Any]]:
    """The messages from `after` (`rows` of them, or all), each with its children."""
    messages: list[dict[str, Any]] = []
    end = None if rows is None else after + rows
    items = trace_items_from(trace=trace, turn=after, decode=decode, batch=2000, turn_below=end)
    try:
        for _turn, act, node in items:
            if act == 0:
                messages.append(node)
    finally:
        items.close()
    return messages


def _orphans_by_kind(
    trace: Trace, *, decode: bool | str, empty: bool = False
) -> dict[str, list[dict[str, Any]]]:
    orphans: dict[str, list[dict[str, Any]]] = {k.orphans: [] for k in kinds.KINDS if k.parent}
    for node in [] if empty else trace_orphans(trace=trace, decode=decode):
        orphans[kinds.BY_SUB_TYPE[node["sub_type"]].orphans].append(node)
    return orphans


def trace_blocks_page(
    *, trace: Trace, cursor: tuple[int, int, int] | None, limit: int, decode: bool | str = False
) -> tuple[list[dict[str, Any]], tuple[int, int, int] | None]:
    """`limit` blocks in stitched order (orphans last) from `cursor` = (turn, act, skip:
    blocks of that act already given; turn -1: the orphans, skip of them), and the next
    cursor. Reads only the page's blocks (and the blocks skipped of one act)."""
    turn, act, skip = cursor or (0, 0, 0)
    page: list[dict[str, Any]] = []
    if turn >= 0:
        rows = _placed_rows(trace).filter(turn__gte=turn)
        if act:
            rows = rows.exclude(turn=turn, act__lt=act)
        rows = rows.order_by(*STITCHED_ORDER)[skip : skip + limit + 1]
        make = _node_maker(decode)
        places = []
        for row in rows:
            page.append(make(row[:11]))
            places.append(row[11:13])
        if len(page) > limit:
            last = places[limit]
            same = sum(1 for p in places[:limit] if p == last)
            if last == (turn, act):
                same += skip
            return page[:limit], (last[0], last[1], same)
        turn, act, skip = -1, 0, 0
        limit -= len(page)
        if not limit:
            more = _placed_rows(trace).filter(turn__isnull=True).exists()
            return page, (-1, 0, 0) if more else None
    orphans = _placed_rows(trace).filter(turn__isnull=True).order_by("created_at", "id")
    make = _node_maker(decode)
    found = [make(row[:11]) for row in orphans[skip : skip + limit + 1]]
    more = len(found) > limit
    page.extend(found[:limit])
    return page, (-1, 0, skip + limit) if more else None


def trace_orphans(*, trace: Trace, decode: bool | str = False) -> list[dict[str, Any]]:
    """The blocks outside the stitched tree, in creation order."""
    make = _node_maker(decode)
    rows = _placed_rows(trace).filter(turn__isnull=True).order_by("created_at", "id")
    return [make(row[:11]) for row in rows]


def block_place(
    *, trace: Trace, block_id: str | None = None, number: int | None = None
) -> tuple[int | None, int] | None:
    """(turn, act) of the block with this id or number (turn None: an orphan); None when
    the trace has no such block."""
    rows = Block.objects.filter(trace=trace)
    rows = rows.filter(pk=block_id) if block_id is not None else rows.filter(number=number)
    return rows.values_list("turn", "act").first()


def turn_acts(*, trace: Trace, turn: int) -> int:
    """How many thinks and calls hang under the message of this turn."""
    rows = Block.objects.filter(trace=trace, turn=turn)
    return rows.aggregate(n=Max("act"))["n"] or 0


def trace_outline_rows(*, trace: Trace, first_turn: int, turns: int) -> list[tuple]:
    """The blocks of the turns [first_turn, first_turn + turns) in stitched order, as
    (id, turn, act, step, sub_type, number, the first 300 characters of the payload's
    JSON text, extra, is_error): what an outline of those turns says, one range query."""
    head = Substr(ExpressionWrapper(F("payload"), output_field=TextField()), 1, 300)
    rows = Block.objects.filter(
        trace=trace, turn__gte=first_turn, turn__lt=first_turn + turns
    ).annotate(head=head)
    return list(
        rows.order_by(*STITCHED_ORDER).values_list(
            "id", "turn", "act", "step", "sub_type", "number", "head", "extra", "is_error"
        )
    )


def trace_block_hits(*, trace: Trace, text: str, limit: int) -> list[tuple]:
    """The trace's blocks whose content matches `text` (full-text search), in stitched
    order, at most `limit`: (id, turn, sub_type, number, SearchHit: a piece of the
    block around the first word searched)."""
    text = text.strip()
    if not text or NUL in text:
        return []
    rows = blocks_matching(text=text).filter(trace=trace, turn__isnull=False)
    rows = with_snippet(rows, search_words(text)).order_by(*STITCHED_ORDER)
    found = rows.values_list("id", "turn", "sub_type", "number", *SNIPPET_COLUMNS)[:limit]
    return [(*row[:4], SearchHit.of(row[0], row[2], *row[4:])) for row in found]


def block_numbers(*, trace: Trace, block_ids: set[str]) -> dict[str, int | None]:
    """The how-manieth block of the trace each of these is (Block.number): one query."""
    if not block_ids:
        return {}
    rows = Block.objects.filter(trace=trace, pk__in=block_ids)
    return dict(rows.values_list("id", "number"))


def block_get(*, trace: Trace, block_id: str) -> Block:
    rows = Block.objects.filter(trace=trace, id=block_id)
    return first_or_not_found(rows, "block", "block_id", block_id)


def block_get_in_org(*, organization: Organization, block_id: str) -> Block:
    rows = Block.objects.select_related("trace__dataset")
    rows = rows.filter(trace__organization=organization, id=block_id)
    return first_or_not_found(rows, "block", "block_id", block_id)


@dataclass(frozen=True)
class PlacedAgain:
    """The trace's blocks in creation order, each with its stored place and the place
    traces/order.py gives it computed afresh (numbered from 1), and the counts of those."""

    ids: list[str]
    stored: list[tuple[Any, Any, Any, Any]]  # (turn, act, step, number) as stored
    computed: list[tuple[int | None, int, int, int]]
    counts: dict[str, Any]


def trace_blocks_placed_again(*, trace: Trace) -> PlacedAgain:
    """Every block of the trace placed again from its rows (one query): what a write that
    changed a trace's blocks other than by appending, or a change of the table of kinds,
    stores (trace_order_refill, the Explorer append)."""
    rows = list(
        Block.objects.filter(trace=trace)
        # By creation, not by `number`: this is what numbers them again (an Explorer
        # append may have written blocks earlier in time than those stored).
        .order_by("created_at", "id")
        .values_list("id", "sub_type", "parent_id", "result_seq", "turn", "act", "step", "number")
    )
    index = {row[0]: n for n, row in enumerate(rows)}
    places = stitched_places([(row[1], index.get(row[2]), row[3]) for row in rows])
    return PlacedAgain(
        ids=[row[0] for row in rows],
        stored=[row[4:] for row in rows],
        computed=[(place.turn, place.act, place.step, n + 1) for n, place in enumerate(places)],
        counts=count_places([row[1] for row in rows], places),
    )
