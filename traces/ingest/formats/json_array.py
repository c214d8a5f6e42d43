"""A JSON array: one chat trace (events), one block array, or an array of traces.

Read with an incremental parser, so an array of many traces is never held whole.
"""

from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from traces.ingest.traces_in import trace_from_value
from traces.ingest.types import PARSE_BUFFER, FormatProblem, Item, Sniff, known_formats


def _is_single_trace(first: Any) -> bool:
    return isinstance(first, dict) and "messages" not in first and "blocks" not in first


def _without_roles(events: list[Any]) -> FormatProblem:
    """A JSON array of objects none of which has a `role`: not a chat trace. Say so once
    (not once per event), with the keys it has and the formats known."""
    keys = sorted({k for e in events[:50] if isinstance(e, dict) for k in e})[:12]
    return FormatProblem(
        f"an event list without roles: none of its {len(events)} items has `role` (their "
        f"keys: {', '.join(keys) or 'none'}), so it is no chat trace; the known formats:\n"
        + known_formats(),
        {"trace": 0},
        rule="format",
    )


class JsonArray:
    name = "json-array"
    recognised_by = (
        "a JSON array: one chat trace (events with `role`), a spec/004 block array "
        "(items with `sub_type`), or an array of traces"
    )

    def detect(self, sniff: Sniff) -> bool:
        return sniff.first_char == "[" and not sniff.multiple

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        items = ijson.items(stream, "item", use_float=True, buf_size=PARSE_BUFFER)
        try:
            first = next(items, None)
            if first is None:
                yield FormatProblem("the array is empty: no trace to import", {}, rule="non_empty")
                return
            if _is_single_trace(first):
                events = [first, *items]
                if not any(isinstance(e, dict) and {"role", "sub_type"} & e.keys() for e in events):
                    yield _without_roles(events)
                    return
                yield trace_from_value(events, {"trace": 0})
                return
            trace, first = trace_from_value(first, {"trace": 0}), None
            yield trace
            trace = None
            for index, value in enumerate(items, start=1):
                trace, value = trace_from_value(value, {"trace": index}), None
                yield trace
                trace = None  # not held while the next trace is parsed
        except ijson.JSONError as exc:
            message = str(exc)
            if "integer overflow" in message:
                message += " (an integer does not fit in 64 bits)"
            yield FormatProblem(f"invalid JSON: {message}", {}, rule="json")


FORMAT = JsonArray()
