"""What the format adapters' tests share: fixtures, the real data folder, reading."""

import io
from pathlib import Path
from typing import Any

import orjson

from traces.ingest.types import Format, FormatProblem, Sniff, TraceDraft

FIXTURES = Path(__file__).parent / "fixtures"
DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ALL_FIXTURES = [
    "tau2.json",
    "swe_agent.traj",
    "toolbench.json",
    "inspect_ai.json",
    "who_and_when.json",
]


def sniff_of(data: bytes) -> Sniff:
    return Sniff(
        head=data[:65536],
        first_char=data.lstrip()[:1].decode(),
        top_keys=frozenset(orjson.loads(data)),
    )


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
