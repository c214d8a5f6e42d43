"""Inspect AI eval logs: one trace per sample, attachments resolved, first score as reward."""

import json
from typing import Any

import pytest

from tests.ingest.formats.helpers import DATA, problems, read_real, sample_of, traces
from traces.ingest.formats.inspect_ai import FORMAT, NOT_IN_LOG, resolve, score_reward
from traces.ingest.types import DatasetMetadata
from traces.models import Block, Image, Trace
from traces.selectors.exports import trace_events
from traces.services.imports import trace_import

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


def test_trace_metadata_keeps_every_sample_key_but_messages_as_written() -> None:
    sample = fixture()["samples"][0]
    first = traces(read(FIXTURE.read_bytes()))[0]
    assert "messages" not in first.metadata
    for key in ("events", "attachments", "output", "store", "input", "model_usage"):
        assert first.metadata[key] == sample[key]
    assert first.metadata["target"] == ["bike", "bicycle"]
    assert first.metadata["metadata"] == {"difficulty": "easy"}
    assert first.metadata["total_time"] == 2.5
    assert first.metadata["epoch"] == 1


def test_a_sample_key_over_the_import_limit_is_left_out_and_named(settings) -> None:
    settings.LIMIT_IMPORT_MESSAGE_BYTES = 4000
    log = fixture()
    events = [{"event": "model", "output": "x" * 5000}]
    log["samples"][0]["events"] = events
    first = traces(read(log))[0]
    assert "events" not in first.metadata
    assert first.metadata["left_out"] == {
        "events": {"bytes": len(json.dumps(events, separators=(",", ":"))), "limit_bytes": 4000}
    }
    assert first.metadata["output"] == log["samples"][0]["output"]


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
        # Every event as written, with a stand-in turn before each output whose call the
        # log lost (with_missing_calls), and nothing else.
        written = [e for e in trace.events if "synthesized" not in e]
        assert len(written) == len(sample["messages"])
        if not sample.get("attachments"):
            assert written == sample["messages"]


def test_a_tool_output_without_its_call_gets_a_stand_in_call_said_to_be_missing():
    output = {"role": "tool", "tool_call_id": "bash_1", "function": "bash", "content": "boom"}
    sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "go"}, output]}
    [trace] = traces(read({"eval": {"task": "t"}, "samples": [sample]}))
    user, stand_in, kept = trace.events
    assert (user, kept) == (sample["messages"][0], output)  # as written
    assert stand_in["tool_calls"] == [{"id": "bash_1", "function": "bash"}]  # no arguments
    assert stand_in["synthesized"] == NOT_IN_LOG


def test_a_real_image_part_is_stored_as_an_image_and_exported_as_written(org) -> None:
    path = DATA / "inspect-ai" / "log_images.json"
    if not path.is_file():
        pytest.skip(f"real benchmark data not available at {path}")
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name="d", files=[(path.name, handle)])
    sample = json.loads(path.read_text())["samples"][0]
    image_part = resolve(sample["messages"][1]["content"][1], sample["attachments"])
    [image] = Image.objects.all()
    assert image.mime_type == "image/png"
    [user] = [b for b in Block.objects.filter(sub_type="MESSAGE") if b.payload["role"] == "user"]
    part = user.payload["content"][1]
    assert part["type"] == "image" and part["image"].startswith("data:image/png;base64,te-image:")
    exported = trace_events(trace=Trace.objects.get())
    assert exported[1]["content"][1] == image_part


def test_two_real_logs_of_one_task_and_model_get_unique_names(org) -> None:
    """log_images.json and log_images_tc.json: the same task, sample and model, and logs
    old enough to have no eval_id: their run ids tell them apart (issue 11 item 5)."""
    paths = [DATA / "inspect-ai" / name for name in ("log_images.json", "log_images_tc.json")]
    if not all(path.is_file() for path in paths):
        pytest.skip(f"real benchmark data not available at {paths[0].parent}")
    files = [(path.name, path.open("rb")) for path in paths]
    trace_import(organization=org, dataset_name="d", files=files)
    run_ids = [json.loads(path.read_text())["eval"]["run_id"][:6] for path in paths]
    names = [t.name for t in Trace.objects.order_by("index")]
    assert names == [f"images/1 epoch 1 openai/gpt-4o (run {run_id})" for run_id in run_ids]


def test_a_log_without_eval_nor_run_id_is_named_without_either() -> None:
    sample = {"id": 1, "epoch": 2, "messages": [{"role": "user", "content": "go"}]}
    log = {"eval": {"task": "t", "model": "m"}, "samples": [sample]}
    [trace] = traces(read(log))
    assert trace.name == "t/1 epoch 2 m"
