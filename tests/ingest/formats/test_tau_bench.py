"""tau-bench v1 results (a JSON array of runs), misdetected as one chat trace before
(issue 11 item 5): one trace per run, reward and task id, a crashed run kept."""

import io
import json
from pathlib import Path

from tests.conftest import as_file
from traces.ingest.detect import detect
from traces.ingest.formats.tau_bench import FORMAT
from traces.models import Block, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "tau_bench_v1_crashed_run.json"

# The shape tau_bench/run.py writes for a run that got through (its `traj` is the agent's
# OpenAI messages): a lookup, a parallel pair of calls, the answer.
CALL = {"type": "function", "function": {"name": "find_user_id_by_zip", "arguments": "{}"}}
RUN = {
    "task_id": 7,
    "reward": 1.0,
    "info": {"task": {"user_id": "yusuf_rossi_9620"}, "reward_info": {"reward": 1.0}},
    "traj": [
        {"role": "system", "content": "# Retail agent policy"},
        {"role": "user", "content": "I want to return an item."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**CALL, "id": "call_a"}, {**CALL, "id": "call_b"}],
        },
        {"role": "tool", "tool_call_id": "call_a", "name": "find_user_id_by_zip", "content": "u1"},
        {"role": "tool", "tool_call_id": "call_b", "name": "find_user_id_by_zip", "content": "u2"},
        {"role": "assistant", "content": "Done."},
    ],
    "trial": 2,
}


def test_the_real_results_list_is_detected_as_tau_bench_not_as_a_chat():
    assert detect(io.BytesIO(REAL.read_bytes())) is FORMAT


def test_a_real_crashed_run_is_kept_with_its_error_and_reward(org):
    with REAL.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(REAL.name, handle)])
    assert (result.traces, result.blocks) == (1, 0)
    trace = Trace.objects.get()
    assert (trace.name, trace.reward, trace.block_count) == ("0 trial 0", 0.0, 0)
    assert trace.metadata["info"]["error"] == "EOF when reading a line"
    assert trace.metadata["task_id"] == 0 and trace.metadata["trial"] == 0


def test_each_run_is_a_trace_with_its_reward_and_task(org):
    crashed = json.loads(REAL.read_text())[0]
    data = json.dumps([RUN, crashed], indent=2)
    result = trace_import(organization=org, dataset_name="d", files=[as_file(data)])
    assert (result.traces, result.blocks) == (2, 8)
    assert result.formats == {"upload.json": "tau-bench"}
    traces = list(Trace.objects.order_by("index"))
    assert [(t.name, t.reward) for t in traces] == [("7 trial 2", 1.0), ("0 trial 0", 0.0)]
    assert traces[0].metadata["info"] == RUN["info"]
    assert Block.objects.filter(sub_type="TOOL_RESULT").count() == 2
