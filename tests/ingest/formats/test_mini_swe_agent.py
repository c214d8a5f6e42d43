"""mini-swe-agent trajectories: the real messages of its tests/test_data/local.traj.json,
as the plain list older versions wrote (empty last user turn, refused before) and inside
the `mini-swe-agent-1` object that versions >= 1 write pretty-printed (save.py's keys)."""

import io
import json
from collections import Counter
from pathlib import Path

from tests.conftest import as_file
from traces.ingest.detect import detect
from traces.ingest.formats.mini_swe_agent import FORMAT
from traces.models import Block, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "mini_swe_agent_local.traj.json"


def wrapped() -> dict:
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "model_stats": {"instance_cost": 0.0, "api_calls": 2},
            "mini_version": "1.0.0",
            "config": {"model": {"model_name": "deepseek/deepseek-chat"}},
        },
        "messages": json.loads(REAL.read_text()),
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "local-1",
    }


def test_the_old_list_imports_as_a_chat_with_its_empty_last_turn(org):
    with REAL.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(REAL.name, handle)])
    assert (result.formats[REAL.name], result.traces, result.blocks) == ("json-array", 1, 6)
    last = Block.objects.order_by("created_at", "id").last()
    assert last.payload == {"role": "user", "content": ""}


def test_a_pretty_printed_trajectory_is_detected_as_mini_swe_agent():
    data = json.dumps(wrapped(), indent=2).encode()
    assert detect(io.BytesIO(data)) is FORMAT


def test_a_trajectory_splits_commands_and_keeps_every_other_key(org):
    data = json.dumps(wrapped(), indent=2)
    result = trace_import(organization=org, dataset_name="d", files=[as_file(data, "x.traj.json")])
    assert (result.traces, result.blocks) == (1, 8)
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    # Two commands; the last (the submission) is answered by an empty turn, not an output.
    assert counts == {"MESSAGE": 5, "TOOL_CALL": 2, "TOOL_RESULT": 1}
    calls = Block.objects.filter(sub_type="TOOL_CALL").order_by("created_at", "id")
    assert [c.payload["arguments"]["command"] for c in calls] == [
        "echo 'hello world'",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    result_block = Block.objects.get(sub_type="TOOL_RESULT")
    assert result_block.payload["output"].startswith("<returncode>0</returncode>")
    trace = Trace.objects.get()
    assert trace.name == "local-1"
    assert trace.metadata["info"] == wrapped()["info"]
    assert trace.metadata["task_id"] == "local-1"
    assert trace.metadata["exit_status"] == "Submitted"
    assert trace.dataset.metadata["model"] == "deepseek/deepseek-chat"
