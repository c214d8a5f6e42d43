"""Inspect AI eval logs: one trace per sample, attachments resolved, first score as reward."""

import json
from typing import Any

import pytest

from tests.ingest.formats.helpers import DATA, problems, read_real, sample_of, traces
from traces.ingest.formats.inspect_ai import FORMAT, resolve, score_reward, with_missing_calls
from traces.ingest.types import DatasetMetadata

FIXTURE, read, fixture = sample_of(FORMAT)


def test_it_yields_one_trace_per_sample_with_first_score_as_reward() -> None:
    found = traces(read(FIXTURE.read_bytes()))
    assert [t.location for t in found] == [{"trace": 0}, {"trace": 1}, {"trace": 2}]
    assert [t.metadata["reward"] for t in found] == [1, 0, 0.25]
    # Task ids are namespaced by the eval's task; the sample's own id is kept.
    assert [t.metadata["task_id"] for t in found] == ["images/1", "images/two", "images/3"]
    assert [t.metadata["sample_id"] for t in found] == [1, "two", 3]
    assert [t.name for t in found] == [
        "images/1 epoch 1 openai/gpt-4o (eval ZB2vu5)",
        "images/two epoch 1 openai/gpt-4o (eval ZB2vu5)",
        "images/3 epoch 2 openai/gpt-4o (eval ZB2vu5)",
    ]
    assert found[0].metadata["eval"]["model"] == "openai/gpt-4o"
    assert found[2].metadata["scores"] == {"similarity": {"value": 0.25}, "match": {"value": "C"}}


def test_it_resolves_attachments_in_content_parts_tool_arguments_and_text() -> None:
    sample = fixture()["samples"][0]
    attachments = sample["attachments"]
    events = traces(read(FIXTURE.read_bytes()))[0].events
    assert events is not None
    image_hash, cmd_hash, out_hash = attachments
    assert events[1]["content"][1] == {
        "type": "image",
        "image": attachments[image_hash],
        "detail": "auto",
    }
    assert events[1]["content"][1]["image"].startswith("data:image/png;base64,")
    assert events[2]["tool_calls"][0] == {
        "id": "call_35FT",
        "function": "bash",
        "arguments": {"cmd": "file picture.png"},
    }
    assert events[3]["content"] == attachments[out_hash]
    assert events[4]["content"] == f"[bike] (see {attachments[out_hash]})"
    assert "attachment://" not in json.dumps(events)


def test_events_are_otherwise_the_sample_messages_verbatim() -> None:
    original = fixture()["samples"]
    found = traces(read(FIXTURE.read_bytes()))
    assert [t.events for t in found[1:]] == [s["messages"] for s in original[1:]]
    first = original[0]["messages"]
    assert [set(e) for e in found[0].events or []] == [set(m) for m in first]
    assert found[0].events[0] == first[0]


def test_trace_metadata_leaves_out_messages_events_attachments_and_output() -> None:
    first = traces(read(FIXTURE.read_bytes()))[0]
    assert not {"messages", "events", "attachments", "output", "store"} & first.metadata.keys()
    assert first.metadata["target"] == ["bike", "bicycle"]
    assert first.metadata["metadata"] == {"difficulty": "easy"}
    assert first.metadata["total_time"] == 2.5
    assert first.metadata["epoch"] == 1


def test_dataset_metadata_has_task_model_and_reported_accuracy() -> None:
    items = read(FIXTURE.read_bytes())
    assert isinstance(items[0], DatasetMetadata)
    meta = items[0].metadata
    assert meta["benchmark"] == "images"
    assert meta["framework"] == "inspect-ai"
    assert meta["model"] == "openai/gpt-4o"
    assert meta["accuracy"] == 0.5
    assert meta["status"] == "success"
    assert meta["run_id"] == "Ta3ZFVTCTcjsb3AEX9FD9v"
    assert sum(isinstance(item, DatasetMetadata) for item in items) == 1


@pytest.mark.parametrize(
    ("value", "reward"),
    [
        ("C", 1),
        ("I", 0),
        ("P", 0.5),
        ("N", 0),
        (True, 1),
        (False, 0),
        (0.75, 0.75),
        (3, 3),
        ("maybe", None),
        ({"a": 1}, None),
        (None, None),
    ],
)
def test_score_values_become_numbers(value: Any, reward: Any) -> None:
    assert score_reward(value) == reward


def test_a_sample_without_scores_has_no_reward() -> None:
    data = fixture()
    del data["samples"][1]["scores"]
    assert "reward" not in traces(read(data))[1].metadata


def test_an_unknown_attachment_is_left_as_it_is() -> None:
    ref = "attachment://0123456789abcdef0123456789abcdef"
    assert resolve({"a": [ref, f"x {ref}"]}, {}) == {"a": [ref, f"x {ref}"]}


def test_a_sample_without_messages_is_a_problem_and_reading_goes_on() -> None:
    data = fixture()
    del data["samples"][0]["messages"]
    items = read(data)
    assert [p.location for p in problems(items)] == [{"trace": 0, "field": "messages"}]
    assert [t.location["trace"] for t in traces(items)] == [1, 2]


def test_samples_that_is_not_an_array_is_a_problem() -> None:
    items = read({"eval": {}, "samples": "none"})
    assert [p.location for p in problems(items)] == [{"field": "samples"}]


def test_a_log_without_samples_is_a_problem() -> None:
    assert [p.rule for p in problems(read({"eval": {}, "samples": []}))] == ["non_empty"]


REAL = {  # file: sample count, rewards
    "2025-05-12T20-27-36-04-00_browser.json": (1, [1]),
    "log_images.json": (1, [0]),
    "log_images_tc.json": (1, [0]),
    "log_tool_call_error.json": (1, [None]),  # a sample with tool errors and no scores
}


@pytest.mark.slow  # a real benchmark file, at its real size
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_gives_every_sample_with_its_first_score(name: str) -> None:
    original, items = read_real(FORMAT, DATA / "inspect-ai" / name)
    found = traces(items)
    count, rewards = REAL[name]
    assert len(found) == len(original["samples"]) == count
    letters = {"C": 1, "I": 0}
    expected = [
        letters[next(iter(s["scores"].values()))["value"]] if s.get("scores") else None
        for s in original["samples"]
    ]
    assert [t.metadata.get("reward") for t in found] == expected == rewards
    assert [t.metadata["sample_id"] for t in found] == [s["id"] for s in original["samples"]]
    task = original["eval"]["task"]
    assert [t.metadata["task_id"] for t in found] == [
        f"{task}/{s['id']}" for s in original["samples"]
    ]
    for trace, sample in zip(found, original["samples"], strict=True):
        assert "attachment://" not in json.dumps(trace.events)
        kept = [e for e in trace.events or [] if "synthesized" not in e]
        assert len(kept) == len(sample["messages"])
        if not sample.get("attachments"):
            assert kept == sample["messages"]


def test_it_gives_a_tool_output_without_its_call_a_marked_synthesized_call():
    events = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "bash_1", "function": "bash", "content": "boom"},
    ]
    out = with_missing_calls(events)
    assert out[0] == events[0] and out[2] == events[1]
    assert out[1]["role"] == "assistant" and out[1]["synthesized"]
    assert out[1]["tool_calls"] == [{"id": "bash_1", "function": "bash", "arguments": {}}]
    assert with_missing_calls(out) == out
