"""Invariant Explorer's annotation addresses (spec invariant-explorer-api.md, 2.5): a pure
parser and resolver, no database.

    address := "<root>" | path [":" anchor]
    path    := "messages" step+          the first step selects the event
    step    := "[" INT "]" | "." INT | "." KEY
    anchor  := "L" INT                   0-based line of the string at path
             | INT "-" INT               character range [start, end)
             | "bbox-" F "," F "," F "," F   x1,y1,x2,y2 as fractions (0..1) of an image

The store keeps an address as the client sent it, byte for byte, and never refuses one
(an address may point nowhere): `address_parse` is for the readers that place a note on a
trace (the trace page's margin notes), which show a note they cannot place at the trace."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

ROOT = "<root>"
# A step is a bracketed or dotted index, or a dotted key (anything up to the next . [ :).
_STEP = re.compile(r"\[(\d+)\]|\.(\d+)(?=[.\[:]|$)|\.([^.\[\]:]+)")
_LINE = re.compile(r"L(\d+)")
_RANGE = re.compile(r"(\d+)-(\d+)")
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_BBOX = re.compile(r"bbox-" + ",".join([_NUMBER] * 4))
# Only ASCII digits (str.isdigit takes '²'); no index or offset longer than this.
_MOST_DIGITS = 9


class AddressInvalid(ValueError):
    """The text is not an address of the grammar; the message says where it breaks."""


@dataclass(frozen=True)
class Address:
    """A parsed address. `event` is None for the trace-level `<root>`; `path` the steps
    after the event index (keys as strings, indices as ints); at most one anchor."""

    event: int | None
    path: tuple[str | int, ...] = ()
    line: int | None = None
    chars: tuple[int, int] | None = None
    bbox: tuple[float, float, float, float] | None = None


def _int(text: str, what: str) -> int:
    if len(text) > _MOST_DIGITS:
        raise AddressInvalid(f"{what} {text[:20]}... is too large")
    return int(text)


def _anchor(text: str) -> dict:
    if m := _LINE.fullmatch(text):
        return {"line": _int(m[1], "line")}
    if m := _RANGE.fullmatch(text):
        start, end = _int(m[1], "range start"), _int(m[2], "range end")
        if start > end:
            raise AddressInvalid(f"range {text!r} ends before it starts")
        return {"chars": (start, end)}
    if m := _BBOX.fullmatch(text):
        box = tuple(float(m[n]) for n in range(1, 5))
        if not all(0.0 <= v <= 1.0 for v in box):
            raise AddressInvalid(f"bbox {text!r}: each value is a fraction from 0 to 1")
        return {"bbox": box}
    raise AddressInvalid(f"anchor {text!r} is none of Ln, start-end, bbox-x1,y1,x2,y2")


def address_parse(text: str) -> Address:
    """The address `text` spells; AddressInvalid if it is not one."""
    if not isinstance(text, str):
        raise AddressInvalid("an address is a string")
    if text == ROOT:
        return Address(event=None)
    if not text.isascii():
        raise AddressInvalid("an address is ASCII")
    path_text, colon, anchor_text = text.partition(":")
    if not path_text.startswith("messages"):
        raise AddressInvalid("an address starts with 'messages' or is '<root>'")
    # Matched in place, never cut: a copy of the rest at each step made an address of
    # 100,000 steps take a second.
    at, steps = len("messages"), []
    while at < len(path_text):
        m = _STEP.match(path_text, at)
        if m is None:
            raise AddressInvalid(f"cannot read the step at {path_text[at : at + 40]!r}")
        index = m[1] if m[1] is not None else m[2]
        steps.append(_int(index, "index") if index is not None else m[3])
        at = m.end()
    if not steps or not isinstance(steps[0], int):
        raise AddressInvalid("the first step after 'messages' is an event index")
    anchor = _anchor(anchor_text) if colon else {}
    return Address(event=steps[0], path=tuple(steps[1:]), **anchor)


def address_block(address: Address, event_blocks: Sequence[tuple[str, str]]) -> str | None:
    """The block an address points at, among its event's blocks as (block id, sub type) in
    the order the import wrote them (the MESSAGE, its THINKs, its TOOL_CALLs in call order;
    or the TOOL_RESULTs of a tool output): `tool_calls.j...` is the j-th TOOL_CALL, anything
    else the event's first block. None when the event has no such block."""
    if address.event is None or not event_blocks:
        return None
    if len(address.path) >= 2 and address.path[0] == "tool_calls":
        calls = [block for block, sub_type in event_blocks if sub_type == "TOOL_CALL"]
        j = address.path[1]
        return calls[j] if isinstance(j, int) and j < len(calls) else None
    return event_blocks[0][0]


def text_span(text: str, address: Address) -> tuple[int, int] | None:
    """The [start, end) of `text` an address's anchor covers: its line (without the line
    break), its character range (cut to the text), the whole text without an anchor;
    None when the line or the range is past the end, or the anchor is a bbox."""
    if address.bbox is not None:
        return None
    if address.chars is not None:
        start, end = address.chars
        return (start, min(end, len(text))) if start <= len(text) else None
    if address.line is None:
        return 0, len(text)
    start = 0
    for _ in range(address.line):
        newline = text.find("\n", start)
        if newline < 0:
            return None
        start = newline + 1
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end
