"""OpenHands trajectories (refused before: "role must be a non-empty string"): actions as
ACT, observations as OBSERVE, messages as MESSAGE, on the real replay file of OpenHands'
own tests."""

import io
import json
from collections import Counter
from pathlib import Path

from tests.conftest import as_file
from traces.ingest.detect import detect
from traces.ingest.formats.openhands import FORMAT
from traces.models import Block, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "openhands_wrong_initial_state.json"


def test_the_real_trajectory_is_detected():
    assert detect(io.BytesIO(REAL.read_bytes())) is FORMAT


def test_the_real_trajectory_imports_with_exact_counts(org):
    with REAL.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(REAL.name, handle)])
    assert (result.traces, result.blocks) == (1, 12)
    counts = Counter(Block.objects.values_list("sub_type", flat=True))
    assert counts == {"MESSAGE": 5, "TOOL_CALL": 4, "TOOL_RESULT": 3}
    calls = Block.objects.filter(sub_type="TOOL_CALL").order_by("created_at", "id")
    assert [(c.payload["name"], c.call_id) for c in calls] == [
        ("str_replace_editor", "toolu_01USom24cuiyvAembLhEryrn"),
        ("execute_bash", "toolu_01PuY3mXrE6fm3j52GscR4rj"),
        ("str_replace_editor", "toolu_01DodVjoeVmEY3gU5ALbqmGj"),
        ("finish", "toolu_01G98EmHEC8HgktRjJBYXqEa"),
    ]
    assert calls[1].payload["arguments"] == {
        "command": "mv /workspace/game_2048.py /workspace/2048.py", "is_input": "false"
    }  # fmt: skip
    first = Block.objects.order_by("created_at", "id").first()
    assert first.payload == {"role": "user", "content": "Please rename game_2048.py to 2048.py"}
    assert Trace.objects.get().name == "Please rename game_2048.py to 2048.py"
    original = json.loads(REAL.read_text())
    assert first.raw["openhands"] == original[0]


def test_an_error_observation_is_a_tool_error_and_a_state_change_a_message(org):
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "run it"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "false"}},
        {"id": 2, "source": "agent", "observation": "error", "cause": 1, "content": "boom"},
        {"id": 3, "source": "environment", "observation": "agent_state_changed", "content": ""},
    ]
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    result = Block.objects.get(sub_type="TOOL_RESULT")
    assert (result.call_id, result.payload["output"], result.is_error) == ("oh_1", "boom", True)
    last = Block.objects.order_by("created_at", "id").last()
    assert last.payload == {"role": "environment", "content": ""}
    assert Trace.objects.get().tool_errors == 1
