"""SWE-agent `.traj` files: one trace, the chat from `history`, no reward."""

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.import_bench import in_child
from tests.ingest.formats.helpers import (
    DATA,
    only_trace,
    read_real,
    sample_of,
)
from traces.ingest.formats.swe_agent import FORMAT, split_actions
from traces.ingest.types import DatasetMetadata, FormatProblem
from traces.models import Block, Trace
from traces.services.imports import trace_import

FIXTURE, read, fixture = sample_of(FORMAT)


def test_it_reads_history_as_the_events_verbatim() -> None:
    trace = only_trace(read(FIXTURE.read_bytes()))
    assert trace.location == {"trace": 0}
    assert trace.events == fixture()["history"]
    assert "\r\n" in trace.events[3]["content"]


def test_metadata_has_task_id_model_and_exit_status_but_no_reward() -> None:
    items = read(FIXTURE.read_bytes())
    trace = only_trace(items)
    assert trace.metadata["task_id"] == "SWE-agent__test-repo-i1"
    assert trace.name == "SWE-agent__test-repo-i1"
    assert trace.metadata["model"] == "gpt-4o"
    assert trace.metadata["exit_status"] == "submitted"
    assert trace.metadata["model_stats"]["api_calls"] == 2
    assert trace.metadata["submission"].startswith("\r\ndiff --git")
    assert trace.metadata["steps"] == 2
    assert trace.metadata["problem_statement"]["type"] == "github"
    assert "reward" not in trace.metadata
    assert trace.metadata["edited_files30"] == fixture()["info"]["edited_files30"]
    assert "text" not in trace.metadata["problem_statement"]
    assert [i.metadata for i in items if isinstance(i, DatasetMetadata)] == [
        {"agent": "SWE-agent", "model": "gpt-4o"}
    ]


def test_a_long_submission_is_kept_whole() -> None:
    data = fixture()
    data["info"]["submission"] = "+" * 50_000
    assert only_trace(read(data)).metadata["submission"] == "+" * 50_000


def test_replay_config_stored_as_a_json_string_is_read() -> None:
    data = fixture()
    data["replay_config"] = json.dumps(data["replay_config"])
    assert only_trace(read(data)).metadata["task_id"] == "SWE-agent__test-repo-i1"


def test_old_history_is_split_into_a_call_and_its_result() -> None:
    history = [
        {"role": "system", "content": "SETTING: ...", "agent": "primary"},
        {"agent": "primary", "content": "Here is a demonstration", "is_demo": True, "role": "user"},
        {"role": "user", "content": "ISSUE: ...", "agent": "primary"},
        {
            "role": "assistant",
            "content": "Find it.\n\n```\nfind_file x.py\n```",
            "thought": "Find it.\n\n",
            "action": "find_file x.py\n",
            "agent": "primary",
        },
        {"role": "user", "content": "Found 1 matches\nbash-$", "agent": "primary"},
    ]
    data = {
        "environment": "swe_main",
        "trajectory": [],
        "history": history,
        "info": {"exit_status": "submitted", "submission": "diff"},
    }
    trace = only_trace(read(data))
    assert trace.events[:3] == history[:3]
    call = {
        "id": "swe_action_3",
        "type": "function",
        "function": {"name": "find_file", "arguments": {"command": "find_file x.py\n"}},
    }
    assert trace.events[3] == {**history[3], "tool_calls": [call]}
    assert trace.events[4] == {
        **history[4], "role": "tool", "tool_call_id": "swe_action_3", "written_role": "user"
    }  # fmt: skip
    assert "task_id" not in trace.metadata
    assert (trace.name, trace.name_from_file, trace.unique_name) == ("", True, True)


def test_it_falls_back_to_the_last_steps_messages_when_history_is_empty() -> None:
    data = fixture()
    data["trajectory"][-1]["messages"] = data.pop("history")
    data["history"] = []
    assert only_trace(read(data)).events == data["trajectory"][-1]["messages"]


def test_it_builds_events_from_trajectory_steps_when_there_is_nothing_else() -> None:
    data = fixture()
    data["history"] = []
    events = only_trace(read(data)).events
    assert events is not None
    assert [e["role"] for e in events] == ["assistant", "tool", "assistant", "tool"]
    assert events[0]["content"] == "Let me find the file."
    assert events[0]["tool_calls"][0]["function"]["name"] == "find_file"
    assert events[1]["content"] == data["trajectory"][0]["observation"]


def test_no_history_and_no_trajectory_is_a_problem() -> None:
    items = read({"environment": "x", "trajectory": None, "history": None, "info": {}})
    assert [(type(i), i.location) for i in items] == [
        (FormatProblem, {"trace": 0, "field": "history"})
    ]


REAL = {
    "6e44b9__sweagenttestrepo-1c2844.traj": "SWE-agent__test-repo-i1",
    "demo_function_calling.traj": "marshmallow-code__marshmallow-1867",
    "pydicom__pydicom-1458.traj": None,  # older format: no instance id in the content
    "swe-agent__test-repo-i1.traj": None,
}


@pytest.mark.slow  # a real benchmark file, at its real size
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_gives_one_trace_from_history_without_reward(name: str) -> None:
    original, items = read_real(FORMAT, DATA / "swe-agent" / name)
    trace = only_trace(items)
    assert trace.events == list(split_actions(original["history"]))
    assert "reward" not in trace.metadata
    assert trace.metadata.get("task_id") == REAL[name]
    assert trace.metadata["exit_status"] == original["info"]["exit_status"] == "submitted"


REAL_FIXTURE = Path(__file__).parents[2] / "fixtures" / "real"


def test_a_history_only_demonstration_imports_with_exact_counts(org) -> None:
    """SWE-agent's own trajectories/demonstrations/function_calling_simple.traj: `history`
    is its only key (it was refused before)."""
    path = REAL_FIXTURE / "swe_agent_function_calling_simple.traj"
    with path.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(path.name, handle)])
    assert result.formats == {path.name: "swe-agent"}
    assert (result.traces, result.blocks) == (1, 17)
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    assert counts == {"MESSAGE": 7, "TOOL_CALL": 5, "TOOL_RESULT": 5}
    calls = Block.objects.filter(sub_type="TOOL_CALL").order_by("created_at", "id")
    names = [b.payload["name"] for b in calls]
    assert names == ["find_file", "open", "edit", "bash", "submit"]


def test_an_old_trajectory_and_history_splits_actions_into_act_and_observe(org) -> None:
    path = DATA / "swe-agent" / "swe-agent__test-repo-i1.traj"
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    with path.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(path.name, handle)])
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    # Five commands; the last (`submit`) has no output in the history.
    assert counts == {"MESSAGE": 8, "TOOL_CALL": 5, "TOOL_RESULT": 4}
    assert result.blocks == 17


def import_files(org, *paths_or_data: tuple[str, bytes], **options):
    files = [(name, io.BytesIO(data)) for name, data in paths_or_data]
    return trace_import(organization=org, dataset_name="d", files=files, **options)


def test_a_run_without_instance_id_is_named_by_its_file(org) -> None:
    path = DATA / "swe-agent" / "pydicom__pydicom-1458.traj"
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    import_files(org, ("runs/pydicom__pydicom-1458.traj", path.read_bytes()))
    assert Trace.objects.get().name == "pydicom__pydicom-1458"


def test_runs_of_one_instance_get_unique_names_and_a_run_again_is_still_a_duplicate(org) -> None:
    first = FIXTURE.read_bytes()
    other_model = fixture()
    other_model["info"]["model_stats"]["api_calls"] = 7
    second = json.dumps(other_model).encode()
    result = import_files(org, ("a.traj", first), ("b.traj", second))
    assert result.traces == 2
    # a third run (another upload), and the first file again: skipped, not renamed
    third = {**fixture(), "environment": "other"}
    result = import_files(org, ("c.traj", json.dumps(third).encode()), ("a.traj", first))
    assert (result.traces, [s["file"] for s in result.skipped]) == (1, ["a.traj"])
    assert list(Trace.objects.order_by("index").values_list("name", flat=True)) == [
        "SWE-agent__test-repo-i1",
        "SWE-agent__test-repo-i1 (2)",
        "SWE-agent__test-repo-i1 (3)",
    ]


def test_trajectory_steps_are_kept_without_the_chat_the_blocks_hold() -> None:
    data = fixture()
    data["trajectory"][0]["execution_time"] = 1.25
    steps = only_trace(read(data)).metadata["trajectory_steps"]
    assert steps[0]["execution_time"] == 1.25
    assert len(steps) == len(data["trajectory"])
    assert not {"thought", "action", "observation", "response", "query", "messages"} & set(steps[0])


def big_traj(path: Path, steps: int) -> Path:
    """An old-style run of `steps` commands, each step's `query` the whole chat so far (as
    SWE-agent writes it): the file grows as the square of the steps, ~40 MB at 80."""
    history = [{"role": "system", "content": "SETTING"}, {"role": "user", "content": "ISSUE"}]
    trajectory = []
    for n in range(steps):
        said = {"role": "assistant", "content": f"step {n}", "action": f"cat f{n}.py"}
        seen = {"role": "user", "content": "x" * 12_000}
        history += [said, seen]
        trajectory.append(
            {"action": said["action"], "observation": seen["content"], "thought": said["content"],
             "response": said["content"], "state": "{}", "query": list(history)}
        )  # fmt: skip
    doc = {"environment": "swe_main", "trajectory": trajectory, "history": history,
           "info": {"exit_status": "submitted"}}  # fmt: skip
    path.write_text(json.dumps(doc, indent=2))
    return path


@pytest.mark.slow  # a 40 MB file imported in a forked child
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor == "postgresql",
    reason="a forked child's PostgreSQL connection is closed under it late in the full suite "
    "(tests/services/test_trace_import_memory.py): measured on SQLite",
)
def test_a_large_pretty_printed_traj_is_streamed_not_read_whole(org, tmp_path) -> None:
    path = big_traj(tmp_path / "big.traj", 80)
    size_mb = path.stat().st_size / 1e6
    assert size_mb > 35

    def work() -> int:
        with path.open("rb") as stream:
            return trace_import(
                organization=org, dataset_name="big", files=[(path.name, stream)]
            ).blocks

    measured = in_child("big-traj", work)
    # read whole, the parsed document alone costs several times the file
    assert measured.peak_growth_mb < 0.5 * size_mb, measured


@pytest.mark.parametrize(
    "file_name, name",
    [
        ("pydicom__pydicom-1458.traj", "pydicom__pydicom-1458"),
        ("runs\\gpt-4o\\sympy__sympy-20590.traj.json", "sympy__sympy-20590"),
        ("run.v2.traj", "run.v2"),
        (".traj", ".traj"),
    ],
)
def test_the_name_from_a_file_keeps_all_but_folders_and_json_extensions(org, file_name, name):
    data = fixture()
    del data["replay_config"]
    import_files(org, (file_name, json.dumps(data).encode()))
    assert Trace.objects.get().name == name


def test_every_other_top_level_key_is_kept_as_written() -> None:
    data = {**fixture(), "replay_config": json.dumps(fixture()["replay_config"]), "extra": [1]}
    metadata = only_trace(read(data)).metadata
    assert (metadata["replay_config"], metadata["extra"]) == (data["replay_config"], [1])
    assert metadata["environment"] == data["environment"]
