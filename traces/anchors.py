"""Notes anchored to text (issue 13 item 3): where an Explorer address lands in a trace's
stored events, and the address a reader's selection on the trace page spells. Pure: no
database (traces/selectors/anchors.py reads the events and blocks).

The text an address points at is a string of the event *as stored* (TraceEvent.event,
what Explorer's clients pushed), not the page's rendering of it: a message's Markdown
drops characters, a folded body shows a preview. So a placed note carries its `quote`
(the text it covers) and where that starts in the string as a fraction (`hint`); the page
finds the quote in what it shows, the occurrence nearest the hint. A selection comes back
the same way: the selected text and its fraction of the block's text, found here in the
event's strings."""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from traces.addresses import Address, address_block, text_span

QUOTE_MAX = 2000  # characters of a quote a note carries to the page
_KEY = re.compile(r"[A-Za-z0-9_\-]+")  # a key an address can spell as `.KEY`


@dataclass(frozen=True)
class Place:
    """Where a note lands: its block (None: nowhere on the trace), and within the block's
    text the covered `quote` starting at fraction `hint`; `why` says what did not resolve
    (the note is then listed on its block, or on the trace, unplaced)."""

    block: str | None
    quote: str | None = None
    hint: float = 0.0
    why: str = ""


def value_at(event: Any, path: tuple[str | int, ...]) -> tuple[bool, Any]:
    """(found, value) at `path` inside a stored event."""
    value = event
    for step in path:
        if isinstance(value, dict) and isinstance(step, str) and step in value:
            value = value[step]
        elif isinstance(value, dict) and isinstance(step, int) and str(step) in value:
            value = value[str(step)]
        elif isinstance(value, list) and isinstance(step, int) and step < len(value):
            value = value[step]
        else:
            return False, None
    return True, value


def note_place(
    address: Address, event: Any, event_blocks: list[tuple[str, str]], *, spelled: str
) -> Place:
    """Where the note of `address` lands, given its event (None: no such event) and that
    event's blocks. `spelled` is the address as stored, for the reasons."""
    if event is None:
        return Place(None, why=f"{spelled}: the trace has no event {address.event}")
    block = address_block(address, event_blocks)
    if block is None:
        return Place(None, why=f"{spelled}: event {address.event} shows no such block")
    path = address.path
    anchored = address.line is not None or address.chars is not None or address.bbox
    if not path and anchored:
        path = ("content",)  # the legacy `messages[0]:L0`: the event's content
    found, value = value_at(event, path)
    if not found:
        return Place(block, why=f"{spelled}: the event has nothing at this path")
    if not anchored:
        return Place(block)  # the whole event or value: the block, no range
    if not isinstance(value, str):
        return Place(block, why=f"{spelled}: the value at this path is not text")
    span = text_span(value, address)
    if span is None:
        what = "an image region" if address.bbox else "past the end of the text"
        return Place(block, why=f"{spelled}: {what} ({len(value)} characters)")
    start, end = span
    return Place(block, quote=value[start:end][:QUOTE_MAX], hint=start / max(1, len(value)))


# --- From a selection -------------------------------------------------------------------


def _strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple, str]]:
    """Every string inside `value` with its path, depth first, keys an address can spell."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _KEY.fullmatch(key) and not key.isdigit():
                yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _strings(item, (*path, n))


def _candidates(event: Any, sub_type: str, call: int | None) -> Iterator[tuple[tuple, str]]:
    """The strings of an event a block shows: a TOOL_CALL's are under `tool_calls[call]`;
    the others' are the rest of the event, its `content` first."""
    if not isinstance(event, dict):
        return
    if sub_type == "TOOL_CALL":
        calls = event.get("tool_calls")
        if isinstance(calls, list) and call is not None and call < len(calls):
            yield from _strings(calls[call], ("tool_calls", call))
        return
    keys = sorted(event, key=lambda k: k != "content")
    for key in keys:
        if key not in ("tool_calls", "role", "timestamp") and isinstance(key, str):
            if _KEY.fullmatch(key) and not key.isdigit():
                yield from _strings(event[key], (key,))


# Between two words a page shows, the stored text may hold white space the page folded,
# or Markdown it drew instead of showing: emphasis, code ticks, headings, quotes, a link's
# brackets and target. Each alternative starts with characters of its own: no backtracking.
_FOLDED = r"\s+"
_MARKUP = r"(?:[\s*_`~#>]|\]\([^)\s]*\)|\[)+"


def _found(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    spans = []
    for m in pattern.finditer(text):
        spans.append((m.start(), m.end()))
        if len(spans) >= 1000:
            break
    return spans


def _matches(text: str, quote: str) -> list[tuple[int, int]]:
    """Where `quote` is in `text`: exactly; else with white space folded between its words;
    else with Markdown between them too (a page draws `**bold** [link](url)` as `bold
    link`)."""
    found, at = [], text.find(quote)
    while at >= 0 and len(found) < 1000:
        found.append((at, at + len(quote)))
        at = text.find(quote, at + 1)
    words = quote.split()
    for between in (_FOLDED, _MARKUP):
        if found or not words:
            break
        found = _found(re.compile(between.join(re.escape(w) for w in words)), text)
    return found


def spell(event_index: int, path: tuple[str | int, ...]) -> str:
    return f"messages[{event_index}]" + "".join(
        f"[{step}]" if isinstance(step, int) else f".{step}" for step in path
    )


def selection_address(
    *, event_index: int, event: Any, sub_type: str, call: int | None, quote: str, hint: float
) -> str | None:
    """The address of the text `quote` selected in a block that shows event `event_index`
    (the `call`-th call when it is a TOOL_CALL), its occurrence nearest `hint` (its start
    as a fraction of the text): `...:Lk` when it is exactly one whole line, else
    `...:start-end`. None when the event holds no such text."""
    if not quote.strip():
        return None
    for path, text in _candidates(event, sub_type, call):
        spans = _matches(text, quote)
        if not spans:
            continue
        start, end = min(spans, key=lambda s: abs(s[0] - hint * len(text)))
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start)
        line_end = len(text) if line_end < 0 else line_end
        if start == line_start and end == line_end and end > start:
            return f"{spell(event_index, path)}:L{text.count(chr(10), 0, start)}"
        return f"{spell(event_index, path)}:{start}-{end}"
    return None
