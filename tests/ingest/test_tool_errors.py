"""Tool errors are stored on their OBSERVE block (Block.is_error) and counted per trace
(Trace.tool_errors) (issue 11 item 2, import side): checked on real files."""

import json
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA, as_file
from traces.models import Block, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[1] / "fixtures" / "real"

# file: tool errors in the whole file (each a TOOL_RESULT)
FILES = {
    SHARED_DATA / "tau2-bench" / "telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json": 1,
    SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json": 0,
    REAL / "inspect_arith_zstd.eval": 1,
    SHARED_DATA / "inspect-ai" / "log_tool_call_error.json": 11,
}


@pytest.mark.parametrize("path", sorted(FILES), ids=lambda p: p.name)
def test_each_tool_error_of_a_real_file_is_marked_and_counted(org, path):
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name="d", files=[(path.name, handle)])
    errors = Block.objects.filter(is_error=True)
    assert errors.count() == FILES[path]
    assert set(errors.values_list("sub_type", flat=True)) <= {"TOOL_RESULT"}
    assert sum(Trace.objects.values_list("tool_errors", flat=True)) == FILES[path]
    for trace in Trace.objects.all():
        assert trace.tool_errors == Block.objects.filter(trace=trace, is_error=True).count()


def test_each_inspect_error_type_is_marked_under_its_call(org):
    """Inspect's test log of its eleven tool error types keeps the outputs without the
    turns that called them (imported as it is under stand-in calls:
    tests/ingest/test_real_data.py): each is read here after a turn that makes its call."""
    path = SHARED_DATA / "inspect-ai" / "log_tool_call_error.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    log = json.loads(path.read_text())
    outputs = log["samples"][0]["messages"]
    log["samples"][0]["messages"] = [
        event
        for output in outputs
        for event in (
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": output["tool_call_id"], "function": "bash", "arguments": {}}]},
            output,
        )
    ]  # fmt: skip
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(log))])
    errors = Block.objects.filter(is_error=True).order_by("created_at", "id")
    assert [b.raw["error"]["type"] for b in errors] == [o["error"]["type"] for o in outputs]
    assert len(outputs) == Trace.objects.get().tool_errors == 11


def test_an_openai_tool_message_flagged_as_error_is_marked(org):
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    call2 = {**call, "id": "c2"}
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call, call2]},
        {"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": True},
        {"role": "tool", "tool_call_id": "c2", "content": "fine", "error": None},
    ]
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    results = Block.objects.filter(sub_type="TOOL_RESULT").order_by("created_at", "id")
    assert [(b.payload["output"], b.is_error) for b in results] == [("boom", True), ("fine", False)]
    assert Trace.objects.get().tool_errors == 1


def test_blocks_written_by_the_api_are_not_errors(org):
    trace = Trace.objects.create(organization=org)
    assert trace.tool_errors == 0
