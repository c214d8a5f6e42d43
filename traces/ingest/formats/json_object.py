"""One JSON object that is one trace: `{"messages"|"blocks": [...], "metadata": {...}, ...}`,
on one line or pretty-printed over many (json.dump(indent=2)); or `{"metadata": {...}}`
alone, the dataset's metadata. Every other key of the object is kept in the trace's
metadata (traces_in.trace_from_value). Read with an incremental parser; a file of one
line is read as JSON Lines of one line, so that a long one streams within its trace
(traces/ingest/streamed.py) and its problems say `line` as a longer file's do.
"""

from collections.abc import Iterator
from typing import BinaryIO

import ijson

from traces.ingest.formats import jsonl
from traces.ingest.lines import line_end, more_after
from traces.ingest.traces_in import trace_from_value
from traces.ingest.types import PARSE_BUFFER, Adapter, DatasetMetadata, FormatProblem, Item, Sniff


def _one_line(stream: BinaryIO) -> bool:
    """Whether the file is one line (JSON Lines of one trace): its problems then say
    `line` as those of a longer JSON Lines file do. Leaves the stream at its start."""
    try:
        end = line_end(stream)
        if end is None:
            return True
        stream.seek(end + 1)
        return not more_after(stream)
    finally:
        stream.seek(0)


class JsonObject(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        return (
            sniff.first_char == "{"
            and not sniff.multiple
            and bool(sniff.top_keys & {"messages", "blocks", "metadata"})
        )

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        if _one_line(stream):
            yield from jsonl.FORMAT.read(stream)
            return
        where = {"trace": 0}
        try:
            value = next(ijson.items(stream, "", use_float=True, buf_size=PARSE_BUFFER))
        except (ijson.JSONError, StopIteration) as exc:
            yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")
            return
        if (
            isinstance(value, dict)
            and "metadata" in value
            and not ({"messages", "blocks"} & value.keys())
        ):
            if not isinstance(value["metadata"], dict):
                yield FormatProblem.not_an_object("metadata", value["metadata"], where)
            else:
                yield DatasetMetadata(value["metadata"])
            return
        yield trace_from_value(value, where)


FORMAT = JsonObject(
    name="trace-object",
    recognised_by="one JSON object (on one line or pretty-printed) with a `messages` or `blocks` "
    "array; other keys go to the trace's metadata",
)
