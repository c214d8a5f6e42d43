"""A JSON array: one chat trace (events), one block array, or an array of traces.

Read with an incremental parser, so an array of many traces is never held whole, nor
the events of one chat trace: they are given to the importer one at a time.
"""

from collections.abc import Iterator
from itertools import chain
from typing import Any, BinaryIO

import ijson

from traces import jsontext
from traces.ingest.lines import READ_MAX, Paced
from traces.ingest.traces_in import trace_from_value
from traces.ingest.types import Adapter, FormatProblem, Item, Sniff, TraceDraft, known_formats


def _is_single_trace(first: Any) -> bool:
    return isinstance(first, dict) and "messages" not in first and "blocks" not in first


def _has_role(event: Any) -> bool:
    return isinstance(event, dict) and bool({"role", "sub_type"} & event.keys())


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


def _message(exc: Exception) -> str:
    message = str(exc)
    if "integer overflow" in message:
        message += " (an integer does not fit in 64 bits)"
    return message


def _rest(items: Iterator[Any]) -> Iterator[Any]:
    """The events after the first, as they are parsed; a parser error is a JsonError
    (a ValueError: the importer reports it as the file's invalid JSON)."""
    try:
        yield from items
    except ijson.JSONError as exc:
        raise jsontext.JsonError(_message(exc)) from None


def _single_trace(first: Any, items: Iterator[Any]) -> TraceDraft | FormatProblem:
    """One chat trace: its events are read as the importer converts them; a block array
    (spec/004) is read whole. The items are held only until one has a `role` (or
    `sub_type`): an array where none has is no chat trace (_without_roles); Invariant's
    leading metadata object has none, so the first event is read with it."""
    head = [first]
    while not _has_role(head[-1]):
        following = next(items, None)
        if following is None:
            return _without_roles(head)
        head.append(following)
    trace = trace_from_value(head, {"trace": 0})
    if isinstance(trace, TraceDraft) and trace.events is not None:
        trace.events = chain(trace.events, _rest(items))
    elif isinstance(trace, TraceDraft):
        trace.blocks.extend(items)
    return trace


class JsonArray(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        return sniff.first_char == "[" and not sniff.multiple

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        # Paced reads: ijson holds the values of a read at once (traces/ingest/lines.py).
        items = ijson.items(Paced(stream), "item", use_float=True, buf_size=READ_MAX)
        try:
            first = next(items, None)
            if first is None:
                yield FormatProblem("the array is empty: no trace to import", {}, rule="non_empty")
                return
            if _is_single_trace(first):
                trace, first = _single_trace(first, items), None
                yield trace
                return
            trace, first = trace_from_value(first, {"trace": 0}), None
            yield trace
            trace = None
            for index, value in enumerate(items, start=1):
                trace, value = trace_from_value(value, {"trace": index}), None
                yield trace
                trace = None  # not held while the next trace is parsed
        except ijson.JSONError as exc:
            yield FormatProblem(f"invalid JSON: {_message(exc)}", {}, rule="json")


FORMAT = JsonArray(
    name="json-array",
    recognised_by="a JSON array: one chat trace (events with `role`), a spec/004 block array "
    "(items with `sub_type`), or an array of traces",
)
