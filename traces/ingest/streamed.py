"""A long JSON Lines line read as it streams, never held whole (traces/ingest/formats/jsonl.py).

A trace parsed whole costs 10-30x its JSON text in Python objects when its events are
small (a dict, its keys and strings for every 40 bytes), so a line of at least
`STREAM_LINE` bytes is read from the file twice, with ijson (yajl2_c):

1. `scan`: one pass over the line's tokens that keeps nothing of the event array. It
   checks the JSON (so that a broken line is one problem and nothing of it is
   converted), measures how deeply it nests and whether it may hold an inline image,
   finds where its events are, and builds every other value of the trace (metadata,
   name...) as the "shell": the trace with its event array left empty.
2. `events`: the events, one at a time (ijson's C `items`), for the importer to convert
   and spool each before the next is parsed.

Memory is then one event plus what the conversion keeps (traces/ingest/events.py), not
the trace. A spec/004 block array, a line nested deeper than MAX_DEPTH and anything
but an event array (or a trace object holding one) is not streamed: `scan` says so and
the caller parses the line whole, as before.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import ijson
from ijson.common import ObjectBuilder

from traces import jsontext
from traces.ingest.lines import READ_MAX, Bounded, Paced

# Lines this long or longer are streamed. Below it a line is parsed whole with orjson
# (3-4x faster than the two passes here): its objects cost at most ~30x of 1 MB.
STREAM_LINE = 1 << 20

# An inline image (traces/ingest/images.py) starts with one of the first two; JSON can
# only write those characters otherwise as `\/` or `\u00XX`. A line holding none of the
# four holds no image, and the importer need not look for one in each value.
IMAGE_HINTS = (b"data:image", b"base64_img", b"\\/", b"\\u00")
_HINT_OVERLAP = max(len(h) for h in IMAGE_HINTS) - 1
_OPEN = frozenset(("start_map", "start_array"))
_CLOSE = frozenset(("end_map", "end_array"))


# The two escaped hints in one pass: alone, `\\/` took as long as the other three.
_ESCAPED_HINTS = re.compile(rb"\\/|\\u00")


def images_possible(data: bytes) -> bool:
    return (
        IMAGE_HINTS[0] in data or IMAGE_HINTS[1] in data or _ESCAPED_HINTS.search(data) is not None
    )


class _HintedReader(Paced):
    """`Paced`, noting whether an image hint is in what it read."""

    def __init__(self, source: Bounded) -> None:
        super().__init__(source)
        self.images_possible = False
        self._tail = b""

    def read(self, n: int = -1) -> bytes:
        data = super().read(n)
        if not self.images_possible and data:
            self.images_possible = images_possible(self._tail + data)
            self._tail = data[-_HINT_OVERLAP:]
        return data


@dataclass
class Shape:
    """What `scan` found. `prefix` is None when the line is not streamed; then `shell` is
    None too and the caller parses the line whole."""

    depth: int
    images_possible: bool
    shell: Any = None
    prefix: str | None = None  # ijson's prefix of the events: "messages.item" or "item"
    skip_first: bool = False  # the array's first item is the trace's {"metadata": ...}


def _json_error(exc: Exception) -> jsontext.JsonError:
    message = str(exc) or "the line holds no JSON value"
    if "integer overflow" in message:
        message += " (an integer does not fit in 64 bits)"
    return jsontext.JsonError(message)


def scan(stream: BinaryIO, start: int, size: int) -> Shape:
    """The shape of the `size` bytes at `start` (see the module). Raises jsontext.JsonError
    when they are not one JSON value. Moves the stream."""
    stream.seek(start)
    reader = _HintedReader(Bounded(stream, size))
    depth = deepest = 0
    top: str | None = None
    key: str | None = None  # the top object's key whose value comes next
    built: dict[str, Any] = {}  # the top object's other values; "0": the array's first item
    builder: ObjectBuilder | None = None
    building: tuple[str, int] | None = None  # (where it goes, the depth it started at)
    array_depth: int | None = None  # the depth of the event array's items
    item = -1  # the event array's current item
    item_keys: tuple[set[str], set[str]] = (set(), set())  # keys of its first two items
    events_found = 0
    try:
        for event, value in ijson.basic_parse(reader, use_float=True, buf_size=READ_MAX):
            if top is None:
                top = event
            elif array_depth is not None and depth == array_depth and event not in _CLOSE:
                item += 1
                if top == "start_array" and item == 0:
                    builder, building = ObjectBuilder(), ("0", depth)
            elif depth == 1 and top == "start_map":
                if event == "map_key":
                    key = value
                elif key == "messages" and event == "start_array":
                    events_found += 1
                    array_depth = 2
                elif event not in _CLOSE:
                    builder, building = ObjectBuilder(), (key, depth)
            if (
                event == "map_key"
                and array_depth is not None
                and depth == array_depth + 1
                and item in (0, 1)
            ):
                item_keys[item].add(value)
            if builder is not None:
                builder.event(event, value)
            if event in _OPEN:
                depth += 1
                if depth > deepest:
                    deepest = depth
                if top == "start_array" and depth == 1:
                    array_depth = 1
            elif event in _CLOSE:
                depth -= 1
                if array_depth is not None and depth < array_depth:
                    array_depth = None  # the event array is done
            if building is not None and depth == building[1]:
                built[building[0]] = builder.value
                builder = building = None
    except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
        raise _json_error(exc) from None
    shape = Shape(depth=deepest, images_possible=reader.images_possible)
    if deepest > jsontext.MAX_DEPTH:
        return shape
    if top == "start_map" and events_found == 1 and "messages" not in built:
        first_keys = item_keys[0]
        shape.shell, shape.prefix = {**built, "messages": []}, "messages.item"
    elif top == "start_array":
        first = built.get("0")
        shape.prefix = "item"
        if isinstance(first, dict) and set(first) == {"metadata"}:
            shape.shell, shape.skip_first, first_keys = [first], True, item_keys[1]
        else:
            shape.shell, first_keys = [], item_keys[0]
    else:
        return shape
    if "sub_type" in first_keys:  # a spec/004 block array
        shape.shell = shape.prefix = None
    return shape


def events(stream: BinaryIO, start: int, size: int, shape: Shape) -> Iterator[Any]:
    """The events of a line `scan` found streamable, one at a time. Moves the stream."""
    stream.seek(start)
    reader = Paced(Bounded(stream, size))
    found = ijson.items(reader, shape.prefix, use_float=True, buf_size=READ_MAX)
    if shape.skip_first:
        next(found, None)
    yield from found
