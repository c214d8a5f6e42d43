"""Harbor's ATIF trajectories (traces/ingest/formats/atif.py). The sample,
fixtures/atif.json, is built from the ATIF RFC's schema (harbor's
docs/rfcs/0001-trajectory-format.md, v1.4: its fields, its example's shape and the
hello.txt task of its real-world examples), as no run written by Harbor itself was at
hand: a system, a user and three agent steps, two parallel calls with results by
`source_call_id`, one result without it, reasoning, per-step metrics, final metrics."""

import json
from collections import Counter

from tests.conftest import as_file
from tests.ingest.formats.helpers import only_trace, problems, sample_of
from traces.ingest.formats.atif import FORMAT
from traces.models import Block, Trace
from traces.services.imports import trace_import

SAMPLE, read, load = sample_of(FORMAT)


def test_steps_become_a_chat_with_calls_answered_by_source_call_id():
    draft = only_trace(read(SAMPLE.read_bytes()))
    roles = [e["role"] for e in draft.events]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]  # noqa: E501
    turn = draft.events[2]
    assert turn["reasoning_content"] == "One command writes it; a second checks the content."
    assert [c["id"] for c in turn["tool_calls"]] == ["call_write_1", "call_cat_2"]
    assert turn["metrics"]["prompt_tokens"] == 1100  # the step's own fields stay in its event
    assert draft.events[4] == {
        "role": "tool",
        "tool_call_id": "call_cat_2",
        "content": "Hello, world!\n",
    }  # noqa: E501
    assert draft.events[6] == {"role": "tool", "content": "14 hello.txt\n"}  # by order


def test_metadata_usage_and_name():
    draft = only_trace(read(SAMPLE.read_bytes()))
    assert draft.name == "7f3c2a9e-hello-file-run-1"
    assert draft.metadata["final_metrics"]["total_steps"] == 5
    assert draft.metadata["extra"] == {"task": "hello-world"}
    assert "steps" not in draft.metadata
    usage = draft.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (2310, 188, 0.0121)
    assert usage.duration_seconds == 9.0


def test_an_import_stores_the_lanes(org):
    result = trace_import(
        organization=org,
        dataset_name="harbor",
        files=[as_file(SAMPLE.read_text(), "trajectory.json")],
    )  # noqa: E501
    assert result.formats["trajectory.json"] == "atif"
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    assert counts == {"MESSAGE": 5, "THINK": 1, "TOOL_CALL": 3, "TOOL_RESULT": 3}
    wc = Block.objects.get(sub_type="TOOL_RESULT", call_id="call_wc_3")
    assert wc.parent.payload["name"] == "bash"
    trace = Trace.objects.get()
    assert trace.dataset.metadata["agent"] == "terminus-2"
    assert trace.input_tokens == 2310


def test_a_step_without_calls_whose_observation_has_no_call_is_an_observation_message():
    data = load()
    data["steps"] = [
        {
            "step_id": 1,
            "source": "system",
            "message": "reset",
            "observation": {"results": [{"content": "env ready"}]},
        }
    ]  # noqa: E501
    draft = only_trace(read(data))
    assert draft.events[1] == {"role": "observation", "content": "env ready"}


def test_multimodal_message_parts_are_kept_as_chat_parts():
    data = load()
    data["steps"] = [{"step_id": 1, "source": "user", "message": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"media_type": "image/png", "data": "iVBORw0KGgo="}},
    ]}]  # fmt: skip
    [event] = only_trace(read(data)).events
    assert event["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }  # noqa: E501


def test_steps_that_are_not_an_array_are_refused():
    data = load()
    data["steps"] = {"1": "x"}
    [problem] = problems(read(json.dumps(data).encode()))
    assert "steps" in problem.message
