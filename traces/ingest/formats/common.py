"""What the benchmark adapters share: one incremental pass over a file of runs, and
small helpers for the metadata they keep."""

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO

import ijson
import orjson
from django.conf import settings

from traces import jsontext
from traces.ingest.types import (
    PARSE_BUFFER,
    Adapter,
    DatasetMetadata,
    FormatProblem,
    Item,
    TraceDraft,
    Usage,
)

# Where a value a format keeps in metadata is too large to keep, it says so under this key.
LEFT_OUT = "left_out"


def as_object(value: Any) -> dict[str, Any]:
    """A part of a benchmark's own wrapper that should be an object, or {} where it is
    not (those files vary by version; what the adapter does not find, it leaves out)."""
    return value if isinstance(value, dict) else {}


class WholeJsonFile(Adapter):
    """A format whose file is one JSON document of one run, read whole: `read_value`
    turns the document into what the file yields."""

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        try:
            data = orjson.loads(stream.read())
        except orjson.JSONDecodeError as exc:
            yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")
            return
        yield from self.read_value(data)

    def read_value(self, data: Any) -> Iterator[Item]:
        raise NotImplementedError


def kept(values: dict[str, Any]) -> dict[str, Any]:
    """Metadata made of `values` as written, each whole (never cut, DESIGN.md "imports
    keep real logs whole"), except a value whose size (spec/004's: UTF-8 bytes of a
    string, else of its compact JSON) is over the import limit for one message
    (LIMIT_IMPORT_MESSAGE_BYTES): it is left out, and `left_out`
    says which key and how many bytes it had, so that nothing is dropped silently and a
    trace's metadata stays a size a page can read (an Inspect sample's `events`
    transcript can be many megabytes)."""
    limit = settings.LIMIT_IMPORT_MESSAGE_BYTES
    out: dict[str, Any] = {}
    left_out: dict[str, Any] = {}
    for key, value in values.items():
        try:
            size = jsontext.byte_size(value) if isinstance(value, str | dict | list) else 0
        except TypeError:  # what JSON cannot keep: the importer reports it
            size = 0
        if size > limit:
            left_out[key] = {"bytes": size, "limit_bytes": limit}
        else:
            out[key] = value
    if left_out:
        out[LEFT_OUT] = {**as_object(out.get(LEFT_OUT)), **left_out}
    return out


def iter_top_level(stream: BinaryIO, big: str | tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """One pass over a JSON object: `(key, value)` for each top-level key, except that an
    array under `big` (a key, or several) gives `(f"{key}.item", item)` for each item,
    built one at a time."""
    bigs = (big,) if isinstance(big, str) else big
    builder = ijson.ObjectBuilder()
    unit: str | None = None
    for prefix, event, value in ijson.parse(stream, use_float=True, buf_size=PARSE_BUFFER):
        if unit is None:
            if prefix == "" or (prefix in bigs and event in ("start_array", "end_array")):
                continue
            unit, builder = prefix, ijson.ObjectBuilder()
        builder.event(event, value)
        if prefix == unit and event not in ("start_map", "start_array", "map_key"):
            value, builder = builder.value, None
            yield unit, value
            unit = value = None


def total(values: Iterable[Any]) -> float | int | None:
    """The sum of the plain numbers among `values` (booleans are not numbers here), or
    None where there is none: a usage figure summed over models or turns."""
    found = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return sum(found) if found else None


def model_stats_usage(info: dict[str, Any]) -> Usage:
    """The usage figures of a SWE-agent or mini-swe-agent run: its `info.model_stats`,
    this instance's cost (`instance_cost`; SWE-agent's `total_cost` is the whole batch's)
    and tokens (SWE-agent's `tokens_sent`/`tokens_received`; mini-swe-agent counts no
    tokens, some of its forks write `input_tokens`/`output_tokens`)."""
    stats = as_object(info.get("model_stats"))
    return Usage.of(
        input_tokens=stats.get("tokens_sent", stats.get("input_tokens")),
        output_tokens=stats.get("tokens_received", stats.get("output_tokens")),
        cost_usd=stats.get("instance_cost"),
    )


def number(value: Any) -> float | int | None:
    """A reward: numbers as they are, booleans as 1/0, anything else None."""
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int | float) else None


def run_trace(
    where: dict[str, Any],
    events: list[Any],
    metadata: dict[str, Any],
    *,
    reward: float | int | None,
    task_id: Any,
    run: str,
) -> TraceDraft:
    """One run of a benchmark file as a trace named "<task id> <run>" (e.g. "7 trial 2"):
    its reward and task id, where the file has them, go in its metadata (the pages read
    `reward` and group by `task_id`)."""
    if reward is not None:
        metadata["reward"] = reward
    name = ""
    if task_id is not None:
        metadata["task_id"] = task_id
        name = f"{task_id} {run}"
    return TraceDraft(location=where, events=events, metadata=metadata, name=name)


def read_runs(
    stream: BinaryIO,
    *,
    runs_key: str,
    keep: Callable[[str, Any], None],
    facts: Callable[[], dict[str, Any]],
    trace: Callable[[Any, int], TraceDraft | FormatProblem],
) -> Iterator[Item]:
    """Each run under `runs_key` as a trace, one at a time; the other top-level keys go to
    `keep`, and `facts()` (the dataset's metadata) is yielded before the first run."""
    count = 0
    seen_runs_key = False
    try:
        for key, value in iter_top_level(stream, runs_key):
            if key != f"{runs_key}.item":
                keep(key, value)
                if key == runs_key:
                    seen_runs_key = True
                    yield FormatProblem(
                        f"`{runs_key}` must be an array, not {type(value).__name__}",
                        {"field": runs_key},
                    )
                continue
            if count == 0:
                yield DatasetMetadata(facts())
            draft, value = trace(value, count), None
            yield draft
            draft = None  # not held while the next run is parsed
            count += 1
    except ijson.JSONError as exc:
        yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")
        return
    if count == 0:
        yield DatasetMetadata(facts())
    if count == 0 and not seen_runs_key:
        yield FormatProblem(f"no {runs_key}: no trace to import", {}, rule="non_empty")


def first_to_last_seconds(items: list[Any]) -> float | None:
    """From the first item's ISO 8601 `timestamp` to the last's (OpenHands' events,
    ATIF's steps); None where fewer than one can be read or zones are mixed."""
    stamps = []
    for item in items:
        try:
            stamps.append(datetime.fromisoformat(item["timestamp"]))
        except (KeyError, TypeError, ValueError):
            continue
    try:
        return (stamps[-1] - stamps[0]).total_seconds() if stamps else None
    except TypeError:  # one timestamp with a zone, another without
        return None
