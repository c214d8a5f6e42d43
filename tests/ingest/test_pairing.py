"""An output without an id answers the earliest unanswered call of the most recent turn
that made calls (DESIGN.md; issue 11 item 1), in every importer: checked on parallel
calls and on every file of ../shared/data."""

import json

import pytest

from tests.conftest import SHARED_DATA, as_file
from tests.ingest.test_real_data import EXPECTED
from traces.errors import ImportFailed
from traces.ingest.events import events_to_blocks
from traces.models import Block, Trace
from traces.services.imports import trace_import
from traces.validation import Limits


def call(name: str, call_id: str | None = None) -> dict:
    found = {"type": "function", "function": {"name": name, "arguments": "{}"}}
    return found if call_id is None else {**found, "id": call_id}


def answered(events: list[dict]) -> list[tuple[str, str]]:
    """(tool name, output) for each result, in order."""
    converted = events_to_blocks(events, location={}, limits=Limits.from_settings())
    assert converted.problems == []
    blocks = converted.blocks
    return [
        (blocks[b.parent].payload["name"], b.payload["output"])
        for b in blocks
        if b.sub_type == "TOOL_RESULT"
    ]


def test_parallel_calls_without_ids_are_answered_in_order():
    events = [
        {"role": "user", "content": "weather in two towns"},
        {"role": "assistant", "content": None, "tool_calls": [call("zurich"), call("bern")]},
        {"role": "tool", "content": "8C"},
        {"role": "tool", "content": "9C"},
    ]
    assert answered(events) == [("zurich", "8C"), ("bern", "9C")]


def test_a_call_of_an_earlier_turn_without_output_stays_unanswered():
    """The Invariant sample's third trace: the screenshot answers `screenshot`."""
    events = [
        {"role": "user", "content": "What is the mission of Invariant Labs?"},
        {"role": "assistant", "content": "visit", "tool_calls": [call("visit_website")]},
        {"role": "assistant", "content": "read", "tool_calls": [call("screenshot")]},
        {"role": "tool", "content": "the page"},
    ]
    assert answered(events) == [("screenshot", "the page")]


def test_a_legacy_function_output_picks_its_call_by_name_within_the_turn():
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
        {"role": "function", "name": "b", "content": "from b"},
        {"role": "function", "name": "a", "content": "from a"},
    ]
    assert answered(events) == [("b", "from b"), ("a", "from a")]


def test_an_output_after_every_call_of_the_turn_is_answered_is_refused(org):
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "1", "tool_calls": [call("old")]},
        {"role": "assistant", "content": "2", "tool_calls": [call("new")]},
        {"role": "tool", "content": "new's"},
        {"role": "tool", "content": "whose?"},
    ]
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    [found] = caught.value.problems
    assert (found["event"], found["rule"], found["field"]) == (4, "unanswered_output", "role")
    assert found["message"].startswith("tool output without a call id, and every call")


def _has_no_link(event: dict) -> bool:
    return not any(event.get(k) for k in ("tool_call_id", "tool_call_ids", "id"))


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_every_output_without_an_id_in_shared_data_answers_the_latest_turn(org, relative):
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name="real", files=[(relative, handle)])
    checked = 0
    for trace in Trace.objects.all():
        blocks = list(Block.objects.filter(trace=trace).order_by("created_at", "id"))
        by_id = {b.id: b for b in blocks}
        latest_turn = None
        for b in blocks:
            if b.sub_type == "TOOL_CALL":
                latest_turn = b.parent_id
            if b.sub_type == "TOOL_RESULT" and isinstance(b.raw, dict) and _has_no_link(b.raw):
                assert by_id[b.parent_id].parent_id == latest_turn, (trace.name, b.metadata)
                checked += 1
    if relative.startswith("invariant-explorer"):
        assert checked == 1  # the screenshot


@pytest.mark.parametrize(
    "link", [lambda n: {"tool_call_id": n}, lambda n: {"tool_call_ids": [n]}], ids=["id", "ids"]
)
def test_an_output_naming_a_call_id_that_is_a_number_answers_that_call(org, link):
    """Ids that are numbers are stored as their text: the output of call 2 answers call 2,
    not the earliest unanswered call of the turn."""
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": 1, "function": {"name": "a", "arguments": {}}},
            {"id": 2, "function": {"name": "b", "arguments": {}}},
        ]},
        {"role": "tool", **link(2), "content": "from b"},
        {"role": "tool", **link(1), "content": "from a"},
    ]  # fmt: skip
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    results = Block.objects.filter(sub_type="TOOL_RESULT").select_related("parent")
    assert {(r.payload["output"], r.parent.payload["name"]) for r in results} == {
        ("from b", "b"),
        ("from a", "a"),
    }


def test_an_output_naming_an_unknown_call_id_is_refused_with_its_place(org):
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "function": {"name": "a", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": 7, "content": "lost"},
    ]  # fmt: skip
    with pytest.raises(ImportFailed) as refused:
        trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    [found] = refused.value.problems
    assert (found["event"], found["rule"], found["field"]) == (2, "unknown_call_id", "tool_call_id")
    assert "'7'" in found["message"]
    assert not Block.objects.exists()
