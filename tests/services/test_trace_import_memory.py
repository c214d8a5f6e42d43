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
from traces.services import imports
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
    """Traces of one short message each, every one different: a duplicate is listed in
    the import's result (`skipped`), which grows with them."""
    line = json.dumps({"messages": [{"role": "user", "content": "q" * 900 + "%08d"}]}) + "\n"
    with path.open("w") as out:
        for n in range(size // len(line)):
            out.write(line % n)
    return path


def peak_growth_mb(org, path: Path) -> float:
    """Of the importing process and of those that read parts of the file beside it."""

    def work() -> tuple[int, int]:
        with path.open("rb") as stream:
            files = [(path.name, stream)]
            result = trace_import(organization=org, dataset_name=path.stem, files=files)
            return result.blocks, result.part_peak_growth

    return in_child(path.stem, work).peak_growth_mb


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_long_line_takes_about_twice_its_size(org, tmp_path):
    path = one_long_line(tmp_path / "long.jsonl", 41 * MB)
    size_mb = path.stat().st_size / MB
    assert peak_growth_mb(org, path) <= 2.5 * size_mb


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_memory_is_flat_with_the_number_of_traces(org, tmp_path, settings, monkeypatch):
    # Both read in two parts at once, so that only the size differs.
    settings.IMPORT_WORKERS = 2
    monkeypatch.setattr(imports, "PART_MIN_BYTES", 1 * MB)
    small = peak_growth_mb(org, many_small_traces(tmp_path / "small.jsonl", 5 * MB))
    large = peak_growth_mb(org, many_small_traces(tmp_path / "large.jsonl", 40 * MB))
    assert large <= small + 10, (small, large)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_memory_of_a_file_read_in_parts_is_counted(org, tmp_path, settings):
    settings.IMPORT_WORKERS = 2
    path = many_small_traces(tmp_path / "parts.jsonl", 20 * MB)
    with path.open("rb") as stream:
        result = trace_import(organization=org, dataset_name="parts", files=[("p", stream)])
    assert result.part_peak_growth > 0


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
