"""traces/services/imports.py's memory, measured as the peak RSS growth of an import in a
forked child (traces/benchmarks/import_bench.py's `in_child`): flat with the number of
traces, and about twice the largest trace. Those are marked slow (deselect with
-m "not slow"); what the import keeps per trace is checked in the quick suite."""

import gc
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from benchmarks.import_bench import in_child
from traces.services.imports import trace_import

MB = 1_000_000


def one_long_line(path: Path, size: int) -> Path:
    """One trace of `size` bytes: an agent that read 4 KB ~5,000 times (a 41 MB line of
    this shape took 217 MB of memory to import, 5.2x its size)."""
    events = [{"role": "user", "content": "go"}]
    for n in range(size // 4160):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        events.append({"role": "assistant", "content": None, "tool_calls": [call]})
        events.append({"role": "tool", "tool_call_id": f"c{n}", "content": "x" * 4000})
    path.write_text(json.dumps({"messages": events}) + "\n")
    return path


def many_small_traces(path: Path, size: int) -> Path:
    line = json.dumps({"messages": [{"role": "user", "content": "q" * 900}]}) + "\n"
    path.write_text(line * (size // len(line)))
    return path


def peak_growth_mb(org, path: Path) -> float:
    def work() -> int:
        with path.open("rb") as stream:
            files = [(path.name, stream)]
            return trace_import(organization=org, dataset_name=path.stem, files=files).blocks

    return in_child(path.stem, work).peak_growth_mb


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_long_line_takes_about_twice_its_size(org, tmp_path):
    path = one_long_line(tmp_path / "long.jsonl", 41 * MB)
    size_mb = path.stat().st_size / MB
    assert peak_growth_mb(org, path) <= 2.5 * size_mb


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_memory_is_flat_with_the_number_of_traces(org, tmp_path):
    small = peak_growth_mb(org, many_small_traces(tmp_path / "small.jsonl", 5 * MB))
    large = peak_growth_mb(org, many_small_traces(tmp_path / "large.jsonl", 40 * MB))
    assert large <= small + 10, (small, large)


def small_events(size: int) -> list[dict]:
    """~40-byte events: the shape that costs the most Python objects per byte."""
    return [
        {"role": "user" if n % 2 else "assistant", "content": f"ok {n}"} for n in range(size // 40)
    ]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("a.jsonl", lambda events: {"messages": events}),  # one JSON Lines line
        ("a.json", lambda events: events),  # a chat trace file: a JSON array of events
    ],
)
def test_a_trace_of_many_small_events_takes_at_most_twice_its_size(org, name, document):
    data = json.dumps(document(small_events(2 * MB))).encode() + b"\n"
    tracemalloc.start()
    try:
        trace_import(organization=org, dataset_name="small", files=[(name, io.BytesIO(data))])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Before the trace was streamed: ~25x. Now about its size (reads and one event).
    assert peak <= 2 * len(data), peak / len(data)


def test_what_an_import_keeps_per_trace_is_bounded(org):
    """Issue 10: an import's memory grew with its number of traces, ~300 bytes a trace
    (each trace's content hash, for duplicates, in two sets and a list): 22 MB of peak
    growth for 1 GB of JSONL against 10 MB for 100 MB. Python's memory while the traces
    are read, after 500 traces and after 1,000 (both when the spools' batches have just
    gone to disk, and cyclic garbage collected), is the same within 20 bytes a trace; it
    was ~250."""
    data = b"".join(b'[{"role": "user", "content": "trace %d"}]\n' % n for n in range(1000))
    spooled, current = 0, {}

    def progress(_: int) -> None:
        nonlocal spooled
        spooled += 1
        if spooled in (500, 1000):
            gc.collect()
            current[spooled] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        trace_import(
            organization=org, dataset_name="many", files=[("a.jsonl", io.BytesIO(data))],
            progress=progress,
        )  # fmt: skip
    finally:
        tracemalloc.stop()
    per_trace = (current[1000] - current[500]) / 500
    assert per_trace <= 20, per_trace
