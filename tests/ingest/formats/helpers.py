"""What the format adapters' tests share: fixtures, the real data folder, reading."""

import io
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest

from traces.ingest.detect import sniff
from traces.ingest.registry import FORMATS
from traces.ingest.types import Format, FormatProblem, Sniff, TraceDraft

FIXTURES = Path(__file__).parent / "fixtures"
DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def module_of(fmt: Format) -> str:
    """The module of traces/ingest/formats/ that holds `fmt` (tau2, swe_agent...)."""
    return type(fmt).__module__.rpartition(".")[2]


# Each registered format's sample file, named for its module (fixtures/tau2.json is tau2's).
# The formats read from the registry: a new one with a sample is tested with no list to edit.
OWNER: dict[str, Format] = {
    path.name: fmt for fmt in FORMATS for path in sorted(FIXTURES.glob(f"{module_of(fmt)}.*"))
}
ALL_FIXTURES = sorted(OWNER)


def sniff_of(data: bytes) -> Sniff:
    """What detection sees of `data` (a zip's member names, a JSON value's top keys)."""
    return sniff(io.BytesIO(data))


def read_with(fmt: Format, data: bytes | dict[str, Any]) -> list[Any]:
    if isinstance(data, dict):
        data = orjson.dumps(data)
    items = []
    for item in fmt.read(io.BytesIO(data)):
        if isinstance(item, TraceDraft) and not isinstance(item.events, list | None):
            # A streamed trace's events (a long JSON Lines line): read while it is current,
            # as the importer does.
            item.events = list(item.events)
        items.append(item)
    return items


def traces(items: list[Any]) -> list[TraceDraft]:
    return [item for item in items if isinstance(item, TraceDraft)]


def problems(items: list[Any]) -> list[FormatProblem]:
    return [item for item in items if isinstance(item, FormatProblem)]


def only_trace(items: list[Any]) -> TraceDraft:
    found = traces(items)
    assert len(found) == 1
    return found[0]


def sample_of(
    fmt: Format,
) -> tuple[Path, Callable[[bytes | dict[str, Any]], list[Any]], Callable[[], Any]]:
    """A format's sample file, a reader of bytes or a dict through `fmt`, and a loader of
    the sample's JSON: what every adapter's test file starts with."""
    [path] = [FIXTURES / name for name, owner in OWNER.items() if owner is fmt]
    return path, partial(read_with, fmt), lambda: json.loads(path.read_text())


def read_real(fmt: Format, path: Path) -> tuple[Any, list[Any]]:
    """A real benchmark file (skipped where the data is not there): its JSON, and what
    `fmt` reads from it, after checking that detection picks `fmt` and nothing is refused."""
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    data = path.read_bytes()
    assert fmt.detect(sniff_of(data))
    items = read_with(fmt, data)
    assert not problems(items)
    return json.loads(data), items
