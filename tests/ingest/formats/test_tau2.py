"""tau2-bench simulation results: one trace per simulation, messages kept verbatim."""

import io
import json

import pytest

from tests.ingest.formats.helpers import DATA, read_real, sample_of, traces
from traces.ingest.formats.common import iter_top_level
from traces.ingest.formats.tau2 import FORMAT
from traces.ingest.types import DatasetMetadata, FormatProblem, Sniff

FIXTURE, read, fixture = sample_of(FORMAT)


def test_it_needs_simulations_and_tasks_or_info() -> None:
    assert not FORMAT.detect(Sniff(b"{}", "{", frozenset({"simulations"})))
    assert not FORMAT.detect(Sniff(b"{}", "{", frozenset({"info", "tasks"})))
    assert FORMAT.detect(Sniff(b"{}", "{", frozenset({"simulations", "tasks"})))


def test_it_yields_one_trace_per_simulation_with_reward_and_task_id() -> None:
    found = traces(read(FIXTURE.read_bytes()))
    assert [t.location for t in found] == [{"trace": 0}, {"trace": 1}, {"trace": 2}]
    assert [t.metadata.get("reward") for t in found] == [1.0, 0.0, None]
    assert [t.metadata["task_id"] for t in found] == [
        "[mobile_data_issue]airplane_mode_on",
        "[mobile_data_issue]airplane_mode_on",
        "[service_issue]line_suspended",
    ]
    assert found[1].name == "[mobile_data_issue]airplane_mode_on trial 1"


def test_a_simulation_without_reward_info_has_no_reward() -> None:
    third = traces(read(FIXTURE.read_bytes()))[2]
    assert "reward" not in third.metadata
    assert third.metadata["termination_reason"] == "too_many_errors"


def test_events_are_the_simulation_messages_verbatim() -> None:
    original = json.loads(FIXTURE.read_text())
    found = traces(read(FIXTURE.read_bytes()))
    assert [t.events for t in found] == [s["messages"] for s in original["simulations"]]


def test_trace_metadata_keeps_the_run_fields_but_not_the_messages() -> None:
    first = traces(read(FIXTURE.read_bytes()))[0]
    assert "messages" not in first.metadata
    assert first.metadata["trial"] == 0
    assert first.metadata["seed"] == 626729
    assert first.metadata["duration"] == 60.5
    assert first.metadata["agent_cost"] == 0.0123
    assert first.metadata["reward_info"]["db_check"] == {"db_match": True, "db_reward": 1.0}


def test_dataset_metadata_comes_first_with_run_facts_and_no_policy() -> None:
    items = read(FIXTURE.read_bytes())
    assert isinstance(items[0], DatasetMetadata)
    meta = items[0].metadata
    assert meta["benchmark"] == "tau2-bench"
    assert meta["model"] == "gpt-4.1"
    assert meta["user_model"] == "gpt-4o"
    assert meta["domain"] == "telecom"
    assert meta["num_trials"] == 2
    assert meta["num_tasks"] == 2
    assert "policy" not in json.dumps(meta)
    assert sum(isinstance(item, DatasetMetadata) for item in items) == 1


def test_a_simulation_without_messages_is_a_problem_and_reading_goes_on() -> None:
    data = json.loads(FIXTURE.read_text())
    del data["simulations"][1]["messages"]
    items = read(data)
    problems = [item for item in items if isinstance(item, FormatProblem)]
    assert [p.location for p in problems] == [{"trace": 1, "field": "messages"}]
    assert [t.location["trace"] for t in traces(items)] == [0, 2]


def test_simulations_that_is_not_an_array_is_a_problem() -> None:
    items = read({"info": {}, "tasks": [], "simulations": {"oops": 1}})
    problems = [item for item in items if isinstance(item, FormatProblem)]
    assert [p.location for p in problems] == [{"field": "simulations"}]
    assert traces(items) == []


def test_no_simulation_is_a_problem() -> None:
    problems = [i for i in read({"info": {}, "simulations": []}) if isinstance(i, FormatProblem)]
    assert [p.rule for p in problems] == ["non_empty"]


def test_invalid_json_is_a_problem_not_an_exception() -> None:
    items = read(b'{"info": {}, "simulations": [{"messages": [')
    assert isinstance(items[-1], FormatProblem) and items[-1].rule == "json"


def test_iter_top_level_builds_one_array_item_at_a_time() -> None:
    data = b'{"a": 1, "big": [{"x": [1, [2]]}, 3.5, "s"], "b": {"c": null}}'
    assert list(iter_top_level(io.BytesIO(data), "big")) == [
        ("a", 1),
        ("big.item", {"x": [1, [2]]}),
        ("big.item", 3.5),
        ("big.item", "s"),
        ("b", {"c": None}),
    ]


def test_each_trace_keeps_its_task_definition_and_the_tasks_not_run_go_to_the_dataset():
    original = json.loads(FIXTURE.read_text())
    items = read(FIXTURE.read_bytes())
    by_id = {t["id"]: t for t in original["tasks"]}
    found = traces(items)
    assert [t.metadata["task"] for t in found] == [
        by_id[s["task_id"]] for s in original["simulations"]
    ]
    ran = {s["task_id"] for s in original["simulations"]}
    not_run = [t for t in original["tasks"] if t["id"] not in ran]
    dataset = [i.metadata for i in items if isinstance(i, DatasetMetadata)]
    assert [m["tasks"] for m in dataset if "tasks" in m] == ([not_run] if not_run else [])


def test_tasks_written_after_the_simulations_are_kept_in_the_dataset_metadata():
    original = json.loads(FIXTURE.read_text())
    reordered = {k: original[k] for k in ("timestamp", "info", "simulations", "tasks")}
    items = read(json.dumps(reordered).encode())
    assert all("task" not in t.metadata for t in traces(items))
    last = items[-1]
    assert isinstance(last, DatasetMetadata) and last.metadata == {"tasks": original["tasks"]}


@pytest.mark.slow  # real tau2-bench files
@pytest.mark.parametrize(
    "name",
    [
        "tau2-bench-fork/airline_grok-3-mini.json",
        "tau2-bench/gpt-4.1_telecom_no-user_4trials_5tasks.json",
    ],
)
def test_every_task_of_a_real_file_is_kept_once_ran_or_not(name: str) -> None:
    original, items = read_real(FORMAT, DATA / name)
    in_traces = {t.metadata["task"]["id"] for t in traces(items)}
    in_dataset = [
        t["id"]
        for i in items
        if isinstance(i, DatasetMetadata)
        for t in i.metadata.get("tasks", [])
    ]
    assert in_traces == {s["task_id"] for s in original["simulations"]}
    assert sorted(in_traces | set(in_dataset)) == sorted(t["id"] for t in original["tasks"])
    assert not in_traces & set(in_dataset)


# Real tau2-bench outputs: (simulations, sum of rewards) counted by hand.
REAL = {
    "tau2-bench/gpt-4.1_telecom_no-user_4trials_5tasks.json": (20, 16.0),
    "tau2-bench/telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json": (20, 14.0),
    "tau2-bench-fork/airline_grok-3-mini.json": (14, 7.0),
    "tau2-bench-fork/airline_grok-4.json": (16, 7.0),
    "tau2-bench-fork/telecom-workflow_grok-3.json": (20, 12.0),
}


@pytest.mark.slow  # a real benchmark file, at its real size
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_gives_every_simulation_with_its_reward(name: str) -> None:
    original, items = read_real(FORMAT, DATA / name)
    found = traces(items)
    count, total = REAL[name]
    assert len(found) == len(original["simulations"]) == count
    rewards = [t.metadata["reward"] for t in found]
    assert rewards == [s["reward_info"]["reward"] for s in original["simulations"]]
    assert sum(rewards) == total
    assert [t.metadata["task_id"] for t in found] == [s["task_id"] for s in original["simulations"]]
    assert [t.events for t in found] == [s["messages"] for s in original["simulations"]]
