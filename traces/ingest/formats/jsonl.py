"""JSON Lines: one trace a line (an event array, a block array or a trace object);
a first line `{"metadata": {...}}` alone is the dataset's (Invariant's JSONL)."""

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from traces import jsontext
from traces.ingest import streamed
from traces.ingest.lines import Bounded, line_end
from traces.ingest.parts import Part
from traces.ingest.traces_in import trace_from_value
from traces.ingest.types import Adapter, DatasetMetadata, FormatProblem, Item, Sniff

# Lines this long are read as they stream (traces/ingest/streamed.py), never held whole:
# the Python objects of a trace of small events cost 10-30x its text.
LONG_LINE = streamed.STREAM_LINE
_LONG_LINE_BUFFER = 4 << 20  # ijson's reads in a long line (see types.PARSE_BUFFER)
images_possible = streamed.images_possible


def _parse_long_line(stream: BinaryIO, start: int) -> Any:
    """The JSON value of the line at `start`, parsed from the stream; leaves the stream
    after the line. Raises jsontext.JsonError as jsontext.loads does."""
    stream.seek(start)
    length = line_end(stream)  # None: the line runs to the end of the file
    end = stream.tell() if length is None else start + length + 1
    stream.seek(start)
    values = ijson.items(
        Bounded(stream, end - start), "", use_float=True, buf_size=_LONG_LINE_BUFFER
    )
    try:
        value = next(values)
        # On to the line's end, so that the parser refuses anything after the value
        # ("trailing garbage"), as orjson does.
        for _ in values:
            raise jsontext.JsonError("more than one JSON value on the line")
    except (ijson.JSONError, StopIteration) as exc:
        message = str(exc) or "the line holds no JSON value"
        if "integer overflow" in message:
            message += " (an integer does not fit in 64 bits)"
        raise jsontext.JsonError(message) from None
    finally:
        stream.seek(end)
    return value


def _long_line(stream: BinaryIO, start: int, line_no: int) -> Iterator[tuple[int, Any, dict]]:
    """`_lines`' one item for the line at `start`, of at least LONG_LINE bytes: a trace of
    events is given as its shell (streamed.scan) with `events` to read them one at a time;
    any other value is parsed whole."""
    stream.seek(start)
    length = line_end(stream)  # None: the line runs to the end of the file
    end = stream.tell() if length is None else start + length + 1
    try:
        shape = streamed.scan(stream, start, end - start)
    except jsontext.JsonError as exc:
        stream.seek(end)
        yield line_no, exc, {}
        return
    if shape.depth > jsontext.MAX_DOCUMENT_DEPTH:
        # Refused as a short line is, before it is parsed: ijson's parse of a value keeps
        # its path, which grows with every level (20,000 levels took 1 GB).
        stream.seek(end)
        yield line_no, jsontext.JsonTooDeep(shape.depth, jsontext.MAX_DOCUMENT_DEPTH), {}
        return
    if shape.prefix is None:
        if shape.depth > jsontext.MAX_DEPTH:
            known = {}  # the importer checks each value it stores
        else:
            known = {"depth": shape.depth, "images_possible": shape.images_possible}
        try:
            value = _parse_long_line(stream, start)
        except jsontext.JsonError as exc:
            value = exc
        yield line_no, value, known
        return
    events = streamed.events(stream, start, end - start, shape)
    known = {"depth": shape.depth, "images_possible": shape.images_possible, "events": events}
    yield line_no, shape.shell, known
    # The importer has read the events (or left them): on after the line.
    events.close()
    stream.seek(end)


def _lines(
    stream: BinaryIO, part: Part | None = None
) -> Iterator[tuple[int, Any, dict[str, Any]]]:
    """(line number, its JSON value or the JsonError saying why it has none, what is known
    of its bytes: TraceDraft's `depth` and `images_possible`), for every line that is not
    blank, from the stream's position to the end of the stream or of the `part`. A line
    is dropped once parsed, before the value is given."""
    line_no = 0 if part is None else part.first_line - 1
    end = None if part is None else part.end
    while True:
        start = stream.tell()
        if end is not None and start >= end:
            return
        line = stream.readline(LONG_LINE)
        if not line:
            return
        line_no += 1
        if len(line) == LONG_LINE and not line.endswith(b"\n"):
            line = None
            yield from _long_line(stream, start, line_no)
            continue
        if line.isspace():  # isspace(): no stripped copy
            continue
        known: dict[str, Any] = {}
        try:
            value, depth = jsontext.loads_with_depth(line)
            known = {"depth": depth, "images_possible": images_possible(line)}
        except jsontext.JsonError as exc:
            value = exc
        line = None
        yield line_no, value, known
        value = None


# The parser's place in what it parsed: the line alone, whose own number the problem gives.
_PARSER_PLACE = re.compile(r": line \d+ column \d+ \(char (\d+)\)$")


def _on_the_line(error: jsontext.JsonError) -> str:
    """The parser's message with its place as a character of the line: "line 2 column 1
    (char 8)" next to the file's "line 2500" read as another line (researcher review)."""
    message = str(error)
    found = _PARSER_PLACE.search(message)
    if found is None:
        return message
    if message.startswith("unexpected end of data"):
        return "the line ends before its JSON value does"
    return f"{message[: found.start()]}, at character {int(found.group(1)) + 1} of the line"


class JsonLines(Adapter):
    # Its lines are traces of their own: a large file is read in parts at once
    # (traces/ingest/parts.py).
    splittable = True

    def detect(self, sniff: Sniff) -> bool:
        # Detection parsed the file: more than one top-level value. One value, even a
        # one-line one, is read by its own format (json_object, json_array...).
        return sniff.multiple

    def read(self, stream: BinaryIO, part: Part | None = None) -> Iterator[Item]:
        """Every item of the file, or of the `part` of it that the stream is at the
        start of: then its lines and traces are numbered from the part's first, and
        `part.traces` counts the traces read."""
        trace_index = 0
        if part is not None:
            part.traces = 0
        # Memory: a trace is dropped once the importer is done with it, before the next
        # line is read (a 40 MB line must not be held twice).
        for line_no, value, known in _lines(stream, part):
            where = {"line": line_no}
            if isinstance(value, jsontext.JsonError):
                rule = "max_depth" if isinstance(value, jsontext.JsonTooDeep) else "json"
                yield FormatProblem(f"invalid JSON: {_on_the_line(value)}", where, rule=rule)
                continue
            if (
                isinstance(value, dict)
                and "metadata" in value
                and not ({"messages", "blocks"} & value.keys())
            ):
                if line_no != 1 or trace_index:
                    yield FormatProblem("a dataset metadata line may only be the first line", where)
                elif not isinstance(value["metadata"], dict):
                    yield FormatProblem.not_an_object("metadata", value["metadata"], where)
                else:
                    yield DatasetMetadata(value["metadata"])
                continue
            events = known.pop("events", None)
            trace = trace_from_value(value, {**where, "trace": trace_index}, **known)
            if events is not None and not isinstance(trace, FormatProblem):
                trace.events = events  # read as the importer converts them
            value = events = None
            yield trace
            trace = None
            trace_index += 1
            if part is not None:
                part.traces = trace_index


FORMAT = JsonLines(
    name="jsonl",
    recognised_by="JSON Lines: one trace a line (an event array, a block array or a trace object); "
    'a first line `{"metadata": {...}}` alone is the dataset\'s (Invariant)',
)
