"""A long JSON Lines line is imported as it streams (traces/ingest/streamed.py, the
converter's emit in traces/services/imports.py): the same rows as a short line, the same
problems, and nothing written when any is found."""

import base64
import json

import pytest

from tests.conftest import as_file
from traces.errors import ImportFailed
from traces.ingest.formats import jsonl
from traces.jsontext import MAX_DEPTH
from traces.models import Block, Image, Trace
from traces.services.imports import trace_import

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2).decode()
IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
TRACE = {
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE]},
        {"role": "assistant", "content": None, "reasoning_content": "hm", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 300},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},  # c1 again: c1#2
        {"role": "tool", "content": "answered by order"},
        {"role": "assistant", "content": "done"},
    ],
    "metadata": {"reward": 1.0, "name": "streamed"},  # after the events
}


@pytest.fixture
def streamed_lines(monkeypatch):
    monkeypatch.setattr(jsonl, "LONG_LINE", 64)


def run(org, name: str, *traces) -> None:
    text = "".join(json.dumps(t) + "\n" for t in traces)
    return trace_import(organization=org, dataset_name=name, files=[as_file(text, "a.jsonl")])


def stored(dataset_name: str) -> list[tuple]:
    """Every block of the dataset, parents named by position, as the page would read it."""
    blocks = list(Block.objects.filter(trace__dataset__name=dataset_name).order_by("id"))
    position = {b.id: n for n, b in enumerate(blocks)}
    return [
        (b.sub_type, b.payload, b.raw, b.metadata, b.call_id, position.get(b.parent_id))
        for b in blocks
    ]


def test_a_streamed_line_stores_what_a_short_one_does(org, monkeypatch):
    run(org, "short", TRACE)
    monkeypatch.setattr(jsonl, "LONG_LINE", 64)
    result = run(org, "long", TRACE)
    assert result.blocks == 9 and result.images == 1
    assert stored("long") == stored("short")
    trace = Trace.objects.get(dataset__name="long")
    assert (trace.name, trace.reward, trace.block_count) == ("streamed", 1.0, 9)
    assert Image.objects.count() == 1


def test_a_problem_late_in_a_streamed_line_names_its_event_and_writes_nothing(org, streamed_lines):
    bad = {**TRACE, "messages": [*TRACE["messages"], {"role": "tool", "tool_call_id": "zz"}]}
    with pytest.raises(ImportFailed) as caught:
        run(org, "bad", TRACE, bad)
    [found] = caught.value.problems
    assert {k: found[k] for k in ("file", "line", "trace", "event", "field", "rule")} == {
        "file": "a.jsonl", "line": 2, "trace": 1, "event": 6, "field": "tool_call_id",
        "rule": "unknown_call_id",
    }  # fmt: skip
    assert not Trace.objects.exists() and not Block.objects.exists()


def test_a_broken_streamed_line_is_a_problem_of_its_line_and_writes_nothing(org, streamed_lines):
    text = json.dumps(TRACE) + "\n" + json.dumps(TRACE)[:-1] + "\n" + json.dumps(TRACE) + "\n"
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="broken", files=[as_file(text, "a.jsonl")])
    [found] = caught.value.problems
    assert (found["line"], found["rule"]) == (2, "json") and "parse error" in found["message"]
    assert not Trace.objects.exists() and not Block.objects.exists()


def test_a_bad_reward_after_a_streamed_trace_s_events_writes_nothing(org, streamed_lines):
    bad = {**TRACE, "metadata": {"reward": 1e300}}
    with pytest.raises(ImportFailed) as caught:
        run(org, "reward", bad)
    assert [(p["trace"], p["field"]) for p in caught.value.problems] == [(0, "metadata.reward")]
    assert not Block.objects.exists()


def run_json(org, text: str):
    return trace_import(organization=org, dataset_name="array", files=[as_file(text, "t.json")])


def test_a_chat_trace_file_streams_its_events_after_its_leading_metadata(org):
    events = [{"metadata": {"name": "led", "reward": 0.5}}, *TRACE["messages"]]
    result = run_json(org, json.dumps(events))
    trace = Trace.objects.get()
    assert (result.blocks, trace.name, trace.reward) == (9, "led", 0.5)
    run(org, "short", TRACE)
    assert stored("array") == stored("short")


def test_a_chat_trace_file_broken_after_its_first_events_writes_nothing(org):
    text = json.dumps(TRACE["messages"])[:-1] + ", {]"
    with pytest.raises(ImportFailed) as caught:
        run_json(org, text)
    [found] = caught.value.problems
    assert (found["file"], found["rule"]) == ("t.json", "json")
    assert found["message"].startswith("invalid JSON: parse error")
    assert not Trace.objects.exists() and not Block.objects.exists()


def test_an_event_nested_too_deeply_in_a_chat_trace_file_is_named(org):
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    text = '[{"role": "user", "content": "a"}, {"role": "user", "content": ' + deep + "}]"
    with pytest.raises(ImportFailed) as caught:
        run_json(org, text)
    [found] = caught.value.problems
    assert {k: found[k] for k in ("trace", "event", "field", "rule")} == {
        "trace": 0, "event": 1, "field": "event", "rule": "max_depth",
    }  # fmt: skip
    assert not Block.objects.exists()
