"""ToolBench answers: one trace, the longest `train_messages` chat, `win` as reward."""

import json
from collections import Counter
from typing import Any

import pytest

from tests.conftest import as_file
from tests.ingest.formats.helpers import (
    DATA,
    only_trace,
    read_real,
    sample_of,
)
from traces.ingest.formats.toolbench import FORMAT
from traces.ingest.types import DatasetMetadata, FormatProblem, TraceDraft
from traces.models import Block, Trace
from traces.services.imports import trace_import

FIXTURE, read, fixture = sample_of(FORMAT)


def test_it_takes_the_longest_train_messages_prefix() -> None:
    trace = only_trace(read(FIXTURE.read_bytes()))
    chats = fixture()["answer_generation"]["train_messages"]
    assert trace.events == chats[2]
    # Not a strict extension of the previous chat: its "diversity" user turn is gone.
    assert chats[1][:5] != chats[2][:5]


def test_of_equally_long_chats_it_takes_the_latest() -> None:
    data = fixture()
    first, second = data["answer_generation"]["train_messages"][2], [{"role": "user"}] * 8
    data["answer_generation"]["train_messages"] = [first, second]
    assert only_trace(read(data)).events == second


def test_win_is_the_reward() -> None:
    assert only_trace(read(FIXTURE.read_bytes())).metadata["reward"] == 1
    data = fixture()
    data["win"] = False
    trace = only_trace(read(data))
    assert trace.metadata["reward"] == 0 and trace.metadata["win"] is False


def test_metadata_keeps_every_value_but_the_chats() -> None:
    items = read(FIXTURE.read_bytes())
    trace = only_trace(items)
    assert trace.metadata["query"] == "What is the weather in Paris and in Rome?"
    assert trace.metadata["finish_type"] == "give_answer"
    assert trace.metadata["query_count"] == 3
    assert trace.metadata["train_messages_count"] == 3
    assert trace.metadata["tools"] == ["current_for_weatherapi", "Finish"]
    assert trace.metadata["forward_args"]["tree_beam_size"] == 2
    original = fixture()
    assert "train_messages" not in trace.metadata
    for key in ("tree", "compare_candidates", "win"):
        assert trace.metadata[key] == original[key]
    for key in ("function", "chain", "final_answer"):
        assert trace.metadata[key] == original["answer_generation"][key]
    assert "task_id" not in trace.metadata  # the query id is only in the file name
    assert trace.name == "What is the weather in Paris and in Rome?"
    assert [i.metadata for i in items if isinstance(i, DatasetMetadata)] == [
        {"benchmark": "ToolBench"}
    ]


@pytest.mark.parametrize("train_messages", [[], [[]], None, [{"role": "user"}]])
def test_no_usable_train_messages_is_a_problem(train_messages: Any) -> None:
    data = fixture()
    data["answer_generation"]["train_messages"] = train_messages
    items = read(data)
    problems = [item for item in items if isinstance(item, FormatProblem)]
    assert [p.location for p in problems] == [
        {"trace": 0, "field": "answer_generation.train_messages"}
    ]
    assert not [item for item in items if isinstance(item, TraceDraft)]


# Real ToolBench answers: (win as reward, messages in the longest chat).
REAL = {
    "13_ChatGPT_DFS_woFilter_w2.json": (0, 12),
    "15_ChatGPT_DFS_woFilter_w2.json": (1, 11),
    "21_ChatGPT_DFS_woFilter_w2.json": (1, 9),
}


@pytest.mark.slow  # a real benchmark file, at its real size
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_gives_the_longest_chat_and_win(name: str) -> None:
    original, items = read_real(FORMAT, DATA / "toolbench" / name)
    trace = only_trace(items)
    reward, length = REAL[name]
    assert trace.metadata["reward"] == int(original["win"]) == reward
    longest = max(original["answer_generation"]["train_messages"], key=len)
    assert trace.events == longest
    assert len(trace.events) == length


def test_a_failed_run_without_train_messages_is_read_from_its_tree(org) -> None:
    """A failed run (`valid_data: false`) has only its search tree: before, it was refused.
    The real run 13 (win: false) with its `train_messages` taken out, as ToolBench writes
    the answers of runs that failed."""
    path = DATA / "toolbench" / "13_ChatGPT_DFS_woFilter_w2.json"
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    data = json.loads(path.read_bytes())
    del data["answer_generation"]["train_messages"]
    data["answer_generation"]["valid_data"] = False
    result = trace_import(
        organization=org, dataset_name="d", files=[as_file(json.dumps(data), "13.json")]
    )
    assert (result.traces, result.blocks) == (1, 253)
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    assert counts == {"MESSAGE": 121, "TOOL_CALL": 66, "TOOL_RESULT": 66}
    trace = Trace.objects.get()
    assert trace.reward == 0.0 and trace.metadata["valid_data"] is False
    first = Block.objects.filter(sub_type="TOOL_CALL").order_by("created_at", "id").first()
    assert first.payload["name"] == "search_basic_free_for_streaming_availability"
