"""Reading notes anchored to text: where each addressed annotation of a trace lands now
(traces/anchors.py), and the event a block of the trace shows. An address is resolved
when it is read, against the events as they are now: an append may have put events
before the one it meant, and Explorer does not re-base annotations either (spec 2.2)."""

from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import Q
from django.db.models.functions import Length

from traces.addresses import AddressInvalid, address_parse
from traces.anchors import QUOTE_MAX, Place, note_place, selection_address
from traces.errors import ValidationFailed
from traces.models import Annotation, Block, Trace, TraceEvent

NOTES_MAX = 500  # addressed notes a page places (annotations_context lists 500 too)
METADATA_SHOWN = 4000  # characters of a note's extra_metadata the page shows
# ...of its comment and address: Explorer's API keeps both unbounded (spec 2.5), and 500
# notes of a megabyte each must not make a megabyte page.
COMMENT_SHOWN = 4000
ADDRESS_SHOWN = 200
# The longest payload whose text a note of a trace from a file is placed in (else the
# note is on its block, without a range).
TEXT_PLACED_MAX = 64 * 1024


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most] + " …"


@dataclass(frozen=True)
class AnchoredNote:
    annotation: Annotation
    place: Place

    @property
    def extra_metadata_text(self) -> str:
        value = self.annotation.extra_metadata
        if value in (None, {}):
            return ""
        if isinstance(value, str):
            text = value
        else:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        return _cut(text, METADATA_SHOWN)

    # What the list shows, cut here once (truncatechars, three a note, was most of the
    # time of a page of 500 notes).
    @property
    def address_text(self) -> str:
        return _cut(self.annotation.address or "", 120)

    @property
    def quote_text(self) -> str:
        return _cut(self.place.quote or "", 200)

    @property
    def comment_text(self) -> str:
        return _cut(self.annotation.comment, COMMENT_SHOWN)

    def island(self, *, author: str) -> dict[str, Any]:
        """What the page's script gets of the note (json_script: it builds text nodes)."""
        return {
            "id": self.annotation.pk,
            "block": self.place.block,
            "address": _cut(self.annotation.address or "", ADDRESS_SHOWN),
            "comment": _cut(self.annotation.comment, COMMENT_SHOWN),
            "author": author,
            "quote": self.place.quote,
            "hint": round(self.place.hint, 6),
            "why": self.place.why,
            "extra_metadata": self.extra_metadata_text,
        }


def _events(trace: Trace, positions: set[int]) -> dict[int, TraceEvent]:
    rows = TraceEvent.objects.filter(trace=trace, position__in=sorted(positions)[:NOTES_MAX])
    return {row.position: row for row in rows}


def _event_blocks(trace: Trace, events: dict[int, TraceEvent]) -> dict[int, list]:
    """Each event's blocks as (id, sub type) in number order, in one query."""
    ranges = {
        p: (e.first_block, e.first_block + e.block_count - 1)
        for p, e in events.items()
        if e.first_block is not None and e.block_count
    }
    found: dict[int, list] = {p: [] for p in events}
    if not ranges:
        return found
    where = Q()
    for low, high in ranges.values():
        where |= Q(number__range=(low, high))
    rows = Block.objects.filter(where, trace=trace).order_by("number")
    for block_id, sub_type, number in rows.values_list("id", "sub_type", "number"):
        for p, (low, high) in ranges.items():
            if low <= number <= high:
                found[p].append((block_id, sub_type))
    return found


def anchored_notes(*, annotations: list[Annotation], trace: Trace) -> list[AnchoredNote]:
    """The addressed ones of `annotations` (the trace's), each with where it lands: two
    queries (the events they name, those events' blocks), whatever their number."""
    addressed = [a for a in annotations if a.address is not None][:NOTES_MAX]
    parsed: dict[str, Any] = {}
    for a in addressed:
        try:
            parsed[a.pk] = address_parse(a.address)
        except AddressInvalid as exc:
            parsed[a.pk] = str(exc)
    positions = {p.event for p in parsed.values() if not isinstance(p, str) and p.event is not None}
    events = _events(trace, positions) if positions else {}
    blocks = _event_blocks(trace, events)
    # A trace imported from a file keeps no events (Explorer's pushes do): its import put
    # each note on the block its address names, whose own text stands for the event's.
    imported = {
        a.block_id for a in addressed
        if a.block_id is not None and not isinstance(parsed[a.pk], str)
        and parsed[a.pk].event is not None and parsed[a.pk].event not in events
    }  # fmt: skip
    texts = _block_texts(trace, imported) if imported else {}
    notes = []
    for a in addressed:
        address = parsed[a.pk]
        if isinstance(address, str):
            place = Place(None, why=f"{a.address[:100]}: {address}")
        elif address.event is None:
            place = Place(None)  # <root>: a note on the trace
        elif a.block_id in imported and address.event not in events:
            place = _on_imported_block(address, a.block_id, texts.get(a.block_id), a.address[:100])
        else:
            event = events.get(address.event)
            place = note_place(
                address, event.event if event else None, blocks.get(address.event, []),
                spelled=a.address[:100],
            )  # fmt: skip
        notes.append(AnchoredNote(a, place))
    return notes


def _block_texts(trace: Trace, block_ids: set[str]) -> dict[str, str | None]:
    """The text of each block (a message's content, a tool's output), None where it has
    none (a call, a multimodal message) or is too long to be read for a note
    (TEXT_PLACED_MAX: 500 notes on 2 MB outputs would read a gigabyte a view)."""
    rows = Block.objects.filter(trace=trace, pk__in=sorted(block_ids)[:NOTES_MAX])
    short = rows.annotate(size=Length("payload")).filter(size__lte=TEXT_PLACED_MAX)
    texts: dict[str, str | None] = {}
    for block_id, sub_type, payload in short.values_list("id", "sub_type", "payload"):
        key = {"MESSAGE": "content", "TOOL_RESULT": "output"}.get(sub_type)
        value = payload.get(key) if key and isinstance(payload, dict) else None
        texts[block_id] = value if isinstance(value, str) else None
    return texts


def _on_imported_block(address: Any, block_id: str, text: str | None, spelled: str) -> Place:
    """Where a note an import put on `block_id` lands: on the range of the block's text its
    address names when it names the event's content, else on the block."""
    if text is None or address.path not in ((), ("content",)):
        return Place(block_id)
    place = note_place(address, {"content": text}, [(block_id, "")], spelled=spelled)
    return place if place.block == block_id else Place(block_id)


@dataclass(frozen=True)
class BlockEvent:
    """The stored event a block shows: its index (Explorer's `messages[i]`), the event,
    the block's sub type, and which call of the event it is (a TOOL_CALL's, else None)."""

    index: int
    event: Any
    sub_type: str
    call: int | None


def block_event(*, trace: Trace, block_id: str) -> BlockEvent | None:
    """The event the trace's block `block_id` was written from; None when the trace has no
    stored events (it was not pushed through /api/v1) or the block is none of theirs."""
    block = Block.objects.filter(trace=trace, id=block_id).values("number", "sub_type").first()
    if block is None or block["number"] is None:
        return None
    number = block["number"]
    event = (
        TraceEvent.objects.filter(trace=trace, first_block__lte=number)
        .order_by("-first_block").first()
    )  # fmt: skip
    if event is None or number >= event.first_block + event.block_count:
        return None
    call = None
    if block["sub_type"] == "TOOL_CALL":
        numbers = Block.objects.filter(
            trace=trace, sub_type="TOOL_CALL", number__gte=event.first_block, number__lt=number
        )
        call = numbers.count()
    return BlockEvent(event.position, event.event, block["sub_type"], call)


def address_of_selection(*, trace: Trace, block_id: Any, quote: Any, hint: Any) -> str:
    """The address of text selected in the trace page's block `block_id` (its occurrence
    nearest `hint`, its start as a fraction of the block's text); ValidationFailed, saying
    which part is wrong, when there is none."""
    if not isinstance(block_id, str) or not block_id or "\x00" in block_id:
        raise ValidationFailed("block: select text in a block", {"field": "block"})
    if not isinstance(quote, str) or not quote.strip() or "\x00" in quote:
        raise ValidationFailed("quote: select some text first", {"field": "quote"})
    if len(quote) > QUOTE_MAX:
        raise ValidationFailed(
            f"quote: select at most {QUOTE_MAX} characters, not {len(quote)}",
            {"field": "quote", "rule": "max_length", "limit": QUOTE_MAX},
        )
    try:
        fraction = min(1.0, max(0.0, float(hint)))
    except (TypeError, ValueError):
        fraction = 0.0
    shown = block_event(trace=trace, block_id=block_id[:64])
    if shown is None:
        raise ValidationFailed(
            f"block {block_id[:64]!r}: not an event of this trace as an Explorer client "
            "pushed it (only pushed and uploaded Explorer traces keep their events); "
            "label the block instead",
            {"field": "block", "rule": "has_event"},
        )
    address = selection_address(
        event_index=shown.index, event=shown.event, sub_type=shown.sub_type,
        call=shown.call, quote=quote, hint=fraction,
    )  # fmt: skip
    if address is None:
        raise ValidationFailed(
            f"quote: messages[{shown.index}] does not hold the selected text as stored "
            "(select within one part of the message)",
            {"field": "quote", "rule": "in_event", "event": shown.index},
        )
    return address
