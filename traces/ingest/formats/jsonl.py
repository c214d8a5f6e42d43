"""JSON Lines: one trace a line (an event array, a block array or a trace object);
a first line `{"metadata": {...}}` alone is the dataset's (Invariant's JSONL)."""

from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from traces import jsontext
from traces.ingest.lines import Bounded, line_end
from traces.ingest.traces_in import trace_from_value
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff

# Lines longer than this are parsed as they are read (ijson), never held whole: the bytes
# of a 40 MB line plus orjson's own copy of them cost more than the trace they hold.
LONG_LINE = 4 << 20
_LONG_LINE_BUFFER = 4 << 20  # ijson's reads in a long line (see types.PARSE_BUFFER)

# An inline image (traces/ingest/images.py) starts with one of the first two; JSON can
# only write those characters otherwise as `\/` or `\u00XX`. A line holding none of the
# four holds no image, and the importer need not look for one in each value.
_IMAGE_HINTS = (b"data:image", b"base64_img", b"\\/", b"\\u00")


def images_possible(line: bytes) -> bool:
    return any(hint in line for hint in _IMAGE_HINTS)


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


def _lines(stream: BinaryIO) -> Iterator[tuple[int, Any, dict[str, Any]]]:
    """(line number, its JSON value or the JsonError saying why it has none, what is known
    of its bytes: TraceDraft's `depth` and `images_possible`), for every line that is not
    blank. A line is dropped once parsed, before the value is given."""
    line_no = 0
    while True:
        start = stream.tell()
        line = stream.readline(LONG_LINE)
        if not line:
            return
        line_no += 1
        if len(line) == LONG_LINE and not line.endswith(b"\n"):
            line = None
            try:
                yield line_no, _parse_long_line(stream, start), {}
            except jsontext.JsonError as exc:
                yield line_no, exc, {}
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


class JsonLines:
    name = "jsonl"
    recognised_by = (
        "JSON Lines: one trace a line (an event array, a block array or a trace object); "
        'a first line `{"metadata": {...}}` alone is the dataset\'s (Invariant)'
    )

    def detect(self, sniff: Sniff) -> bool:
        # Detection parsed the file: more than one top-level value. One value, even a
        # one-line one, is read by its own format (json_object, json_array...).
        return sniff.multiple

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        trace_index = 0
        # Memory: a trace is dropped once the importer is done with it, before the next
        # line is read (a 40 MB line must not be held twice).
        for line_no, value, known in _lines(stream):
            where = {"line": line_no}
            if isinstance(value, jsontext.JsonError):
                rule = "max_depth" if isinstance(value, jsontext.JsonTooDeep) else "json"
                yield FormatProblem(f"invalid JSON: {value}", where, rule=rule)
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
            trace = trace_from_value(value, {**where, "trace": trace_index}, **known)
            value = None
            yield trace
            trace = None
            trace_index += 1


FORMAT = JsonLines()
