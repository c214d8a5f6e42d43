"""Who&When failure logs: one trace, `history` as events, failure labels in metadata."""

import json

import pytest

from tests.conftest import as_file
from tests.ingest.formats.helpers import (
    DATA,
    only_trace,
    read_real,
    sample_of,
)
from traces.ingest.failure import failure_comment
from traces.ingest.formats.who_and_when import FORMAT
from traces.ingest.types import DatasetMetadata, FormatProblem, Sniff
from traces.models import Annotation, Block, Label, Trace
from traces.selectors.exports import dataset_export_lines
from traces.selectors.trace_filters import TraceFilter, traces_filtered
from traces.services.imports import trace_import

FIXTURE, read, fixture = sample_of(FORMAT)


# An algorithm-generated (CaptainAgent) log: user/assistant roles, the agent in `name`.
ALGORITHM_GENERATED = {
    "is_correct": False,
    "question": "How many clients will receive the sunset awning design?",
    "question_ID": "4d51c4bf-4b0e-4f3d-897b-3f6687a7d9f2",
    "level": "2",
    "ground_truth": "8",
    "history": [
        {"content": "You are given a task.", "role": "assistant", "name": "Excel_Expert"},
        {
            "content": "exitcode: 0 (execution succeeded)\nCode output: 4\n",
            "name": "Computer_terminal",
            "role": "user",
        },
    ],
    "mistake_agent": "Excel_Expert",
    "mistake_step": "0",
    "mistake_reason": "The code failed to handle edge cases.",
    "system_prompt": {"Excel_Expert": "## Your role\n" + "x" * 3000, "Computer_terminal": "..."},
}


def test_it_does_not_claim_a_file_with_a_trajectory() -> None:
    keys = frozenset({"history", "question", "trajectory"})
    assert not FORMAT.detect(Sniff(b"{}", "{", keys))


def test_history_is_the_events_verbatim_with_free_text_roles() -> None:
    trace = only_trace(read(FIXTURE.read_bytes()))
    assert trace.location == {"trace": 0}
    assert trace.events == json.loads(FIXTURE.read_text())["history"]
    assert "Orchestrator (-> WebSurfer)" in {e["role"] for e in trace.events or []}


def test_metadata_has_the_failure_labels_task_id_and_a_zero_reward() -> None:
    items = read(FIXTURE.read_bytes())
    meta = only_trace(items).metadata
    assert meta["task_id"] == meta["question_ID"]
    assert meta["mistake_agent"] == "WebSurfer"
    assert meta["mistake_step"] == "3"
    assert meta["ground_truth"] == "Renzo Gracie Jiu-Jitsu Wall Street"
    assert meta["is_corrected"] is False
    assert meta["reward"] == 0  # an annotated failure
    assert "history" not in meta
    assert [i.metadata for i in items if isinstance(i, DatasetMetadata)] == [
        {"benchmark": "Who&When"}
    ]


def test_is_correct_is_the_reward_and_system_prompts_are_kept_with_agent_names() -> None:
    meta = only_trace(read(ALGORITHM_GENERATED)).metadata
    assert meta["reward"] == 0
    assert meta["agents"] == ["Excel_Expert", "Computer_terminal"]
    assert meta["system_prompt"] == ALGORITHM_GENERATED["system_prompt"]
    assert only_trace(read({**ALGORITHM_GENERATED, "is_correct": True})).metadata["reward"] == 1


def test_a_log_without_outcome_or_label_has_no_reward() -> None:
    log = {"question": "q", "history": [{"role": "human", "content": "q"}]}
    assert "reward" not in only_trace(read(log)).metadata


def test_a_long_question_is_kept_whole() -> None:
    question = "why? " * 500
    assert (
        only_trace(read({**ALGORITHM_GENERATED, "question": question})).metadata["question"]
        == question
    )


def test_a_log_without_history_is_a_problem() -> None:
    items = read({"question": "q", "history": "none", "mistake_agent": "A"})
    assert [(type(i), i.location) for i in items] == [
        (FormatProblem, {"trace": 0, "field": "history"})
    ]


REAL = {  # file: (question_ID, messages)
    "algorithm-generated-1.json": ("4d51c4bf-4b0e-4f3d-897b-3f6687a7d9f2", 6),
    "hand-crafted-1.json": ("6e3be83d1949fa52cba03fb1ce4b5b3bf7e37a83fd7d67694b10b2e439d90cf8", 29),
}


@pytest.mark.slow  # a real benchmark file, at its real size
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_gives_one_failed_run_with_its_labels(name: str) -> None:
    original, items = read_real(FORMAT, DATA / "who-and-when" / name)
    trace = only_trace(items)
    task_id, length = REAL[name]
    assert trace.events == original["history"]
    assert len(trace.events) == length
    assert trace.metadata["task_id"] == original["question_ID"] == task_id
    assert trace.metadata["reward"] == 0
    assert trace.metadata["mistake_agent"] == original["mistake_agent"]


def test_the_mistake_step_marks_its_block_and_the_failure_names_it(org) -> None:
    """hand-crafted-1: mistake_step "12" (0-based) is the 13th turn, by WebSurfer."""
    path = DATA / "who-and-when" / "hand-crafted-1.json"
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    original = json.loads(path.read_bytes())
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name="d", files=[(path.name, handle)])
    trace = Trace.objects.get()
    failure = trace.metadata["failure"]
    assert {k: failure[k] for k in ("agent", "step")} == {"agent": "WebSurfer", "step": 12}
    assert failure["reason"] == original["mistake_reason"]
    block = Block.objects.get(id=failure["block"])
    assert block.metadata["event_index"] == 12 and block.metadata["failure"] is True
    assert block.raw == original["history"][12]
    assert Block.objects.filter(metadata__contains='"failure"').count() == 1


def test_a_step_outside_the_history_keeps_the_failure_without_a_block(org) -> None:
    log = {
        "question": "q",
        "history": [{"role": "user", "content": "q"}],
        "mistake_agent": "A",
        "mistake_step": "7",
    }
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(log))])
    assert Trace.objects.get().metadata["failure"] == {"agent": "A", "step": 7}


def import_real(org, name: str, dataset_name: str = "d") -> dict:
    path = DATA / "who-and-when" / name
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name=dataset_name, files=[(path.name, handle)])
    return json.loads(path.read_bytes())


def test_the_failure_is_tagged_mistake_on_its_block_with_agent_and_reason(org) -> None:
    original = import_real(org, "hand-crafted-1.json")
    trace = Trace.objects.get()
    [label] = Label.objects.filter(dataset=trace.dataset)
    assert label.name == "mistake" and "mistake_agent" in label.description
    [tag] = Annotation.objects.all()
    assert (tag.trace_id, tag.block_id, tag.label_id) == (
        trace.id, trace.metadata["failure"]["block"], label.id
    )  # fmt: skip
    assert tag.comment == f"WebSurfer: {original['mistake_reason']}"


def test_the_dataset_page_filter_search_and_export_find_the_failure(org) -> None:
    import_real(org, "hand-crafted-1.json")
    import_real(org, "algorithm-generated-1.json")
    tagged = Trace.objects.get(metadata__contains='"WebSurfer"')
    dataset = tagged.dataset
    assert Label.objects.filter(dataset=dataset).count() == 1  # one vocabulary word, reused
    every = Trace.objects.filter(dataset=dataset)
    labelled = traces_filtered(traces=every, filters=TraceFilter(label="mistake"))
    assert labelled.count() == 2
    found = traces_filtered(traces=every, filters=TraceFilter(text="irrelevant website"))
    assert list(found) == [tagged]
    lines = [json.loads(line) for line in dataset_export_lines(dataset=dataset)]
    [exported] = [
        line for line in lines[1:] if line["metadata"].get("mistake_agent") == "WebSurfer"
    ]
    [note] = exported["annotations"]
    assert note["label"] == "mistake" and note["block_id"] == tagged.metadata["failure"]["block"]


def test_a_dataset_label_named_mistake_is_used_and_a_skipped_duplicate_adds_no_tag(org) -> None:
    import_real(org, "algorithm-generated-1.json")
    dataset = Trace.objects.get().dataset
    import_real(org, "algorithm-generated-1.json")  # the same log again: skipped
    assert Trace.objects.count() == 1
    assert Annotation.objects.count() == 1
    assert Label.objects.filter(dataset=dataset).count() == 1


def test_a_failure_step_outside_the_history_tags_the_trace(org) -> None:
    log = {"question": "q", "history": [{"role": "user", "content": "q"}],
           "mistake_agent": "A", "mistake_step": "7", "mistake_reason": "r"}  # fmt: skip
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(log))])
    [tag] = Annotation.objects.all()
    assert (tag.block_id, tag.label.name, tag.comment) == (None, "mistake", "A: r")


def test_a_reason_longer_than_a_comment_is_named_not_cut() -> None:
    comment = failure_comment({"agent": "A", "reason": "x" * 50}, most=20)
    assert comment == "A: the reason (50 characters) is in the trace's metadata, failure.reason"
    assert failure_comment({"reason": "why"}, most=20) == "why"


def test_a_question_names_the_trace_uncut_on_one_line(org) -> None:
    question = "Which street addresses\nare even? " + "word " * 60
    log = {**ALGORITHM_GENERATED, "question": question}
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(log))])
    assert Trace.objects.get().name == " ".join(question.split())
    assert len(" ".join(question.split())) > 300


@pytest.mark.parametrize("fmt", ["chat", "blocks"])
def test_an_export_imported_again_has_one_failure_tag_a_trace(org, fmt) -> None:
    """The export brings the failure's tag among its notes and the failure in its
    metadata: the tag is made once (the researcher's review found two after a chat
    round trip)."""
    import_real(org, "hand-crafted-1.json")
    import_real(org, "algorithm-generated-1.json")
    first = Trace.objects.first().dataset
    exported = b"".join(dataset_export_lines(dataset=first, fmt=fmt))
    trace_import(organization=org, dataset_name="again", files=[as_file(exported, "e.jsonl")])
    again = Trace.objects.filter(dataset__name="again")
    assert again.count() == 2
    for trace in again:
        assert trace.annotations.filter(label__name="mistake").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_failure_naming_a_block_the_import_did_not_make_tags_the_trace(org) -> None:
    """A chat line's metadata may name a failure's block by an id of another database (or
    a made-up one): its tag goes on the trace, never on a block that is not there."""
    from django.db import connection

    failure = {"agent": "A", "reason": "r", "block": "tb_NOSUCHBLOCK"}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    line = {"messages": messages, "metadata": {"failure": failure}}
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(line))])
    [tag] = Annotation.objects.all()
    assert (tag.block_id, tag.label.name, tag.comment) == (None, "mistake", "A: r")
    if connection.vendor == "sqlite":  # its import checks no keys
        with connection.cursor() as cursor:
            assert cursor.execute("PRAGMA foreign_key_check").fetchall() == []
