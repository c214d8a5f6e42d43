"""What the benchmark adapters share: one incremental pass over a file of runs, and
small helpers for the metadata they keep."""

from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

import ijson
import orjson

from traces.ingest.types import PARSE_BUFFER, DatasetMetadata, FormatProblem, Item, TraceDraft

BIG_STRING = 2000  # characters: longer strings are left out of metadata


def as_object(value: Any) -> dict[str, Any]:
    """A part of a benchmark's own wrapper that should be an object, or {} where it is
    not (those files vary by version; what the adapter does not find, it leaves out)."""
    return value if isinstance(value, dict) else {}


class WholeJsonFile:
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


def compact(value: Any, limit: int = BIG_STRING) -> Any:
    """`value` without the strings longer than `limit` inside its objects and arrays."""

    def small(v: Any) -> bool:
        return not (isinstance(v, str) and len(v) > limit)

    if isinstance(value, dict):
        return {k: compact(v, limit) for k, v in value.items() if small(v)}
    if isinstance(value, list):
        return [compact(v, limit) for v in value if small(v)]
    return value


def iter_top_level(stream: BinaryIO, big: str) -> Iterator[tuple[str, Any]]:
    """One pass over a JSON object: `(key, value)` for each top-level key, except that an
    array under `big` gives `(f"{big}.item", item)` for each item, built one at a time."""
    builder = ijson.ObjectBuilder()
    unit: str | None = None
    for prefix, event, value in ijson.parse(stream, use_float=True, buf_size=PARSE_BUFFER):
        if unit is None:
            if prefix == "" or (prefix == big and event in ("start_array", "end_array")):
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
