"""Every real benchmark file in ../shared/data imports end to end, with its rewards."""

from collections import Counter

import pytest

from tests.conftest import SHARED_DATA
from traces.models import Block, Trace
from traces.services.imports import trace_import

# file: (traces, Counter of rewards; None for a trace without one)
EXPECTED = {
    "tau2-bench/gpt-4.1_telecom_no-user_4trials_5tasks.json": (20, {1.0: 16, 0.0: 4}),
    "tau2-bench/telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json": (20, {1.0: 14, 0.0: 6}),
    "tau2-bench-fork/airline_grok-3-mini.json": (14, {1.0: 7, 0.0: 7}),
    "tau2-bench-fork/airline_grok-4.json": (16, {1.0: 7, 0.0: 9}),
    "tau2-bench-fork/telecom-workflow_grok-3.json": (20, {1.0: 12, 0.0: 8}),
    "swe-agent/6e44b9__sweagenttestrepo-1c2844.traj": (1, {None: 1}),
    "swe-agent/demo_function_calling.traj": (1, {None: 1}),
    "swe-agent/pydicom__pydicom-1458.traj": (1, {None: 1}),
    "swe-agent/swe-agent__test-repo-i1.traj": (1, {None: 1}),
    "toolbench/13_ChatGPT_DFS_woFilter_w2.json": (1, {0.0: 1}),
    "toolbench/15_ChatGPT_DFS_woFilter_w2.json": (1, {1.0: 1}),
    "toolbench/21_ChatGPT_DFS_woFilter_w2.json": (1, {1.0: 1}),
    "inspect-ai/2025-05-12T20-27-36-04-00_browser.json": (1, {1.0: 1}),
    "inspect-ai/log_images.json": (1, {0.0: 1}),
    "inspect-ai/log_images_tc.json": (1, {0.0: 1}),
    "inspect-ai/log_tool_call_error.json": (1, {None: 1}),
    "invariant-explorer/sample_data.jsonl": (3, {None: 3}),
    "who-and-when/algorithm-generated-1.json": (1, {0.0: 1}),
    "who-and-when/hand-crafted-1.json": (1, {0.0: 1}),
}


def test_the_expectations_cover_every_data_file():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent: the real benchmark files are not here")
    found = {
        str(p.relative_to(SHARED_DATA))
        for p in SHARED_DATA.rglob("*")
        if p.is_file() and p.name not in ("LICENSE", "README.md")
    }
    assert found == set(EXPECTED)


def test_tool_outputs_whose_calls_the_log_lost_are_kept_under_calls_said_to_be_missing(org):
    """Inspect's own log of tool errors keeps eleven outputs without the assistant turns
    that called them: the run imports whole, each output under a stand-in call that the
    block's metadata (and the page) says is not in the log, with no arguments made up."""
    relative = "inspect-ai/log_tool_call_error.json"
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    with path.open("rb") as handle:
        trace_import(organization=org, dataset_name="real", files=[(relative, handle)])
    calls = Block.objects.filter(sub_type="TOOL_CALL").order_by("number")
    assert calls.count() == Block.objects.filter(sub_type="TOOL_RESULT").count() == 11
    for call in calls:
        assert call.metadata["not_in_log"].startswith("the log has this tool output")
        assert call.metadata["arguments_missing"] is True and call.payload["arguments"] == {}
        assert call.payload["name"] == "bash"
    assert Trace.objects.get().tool_errors == 11


@pytest.mark.slow  # every real benchmark file through trace_import
@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_it_imports_the_real_file(org, relative):
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    traces, rewards = EXPECTED[relative]
    with path.open("rb") as handle:
        result = trace_import(organization=org, dataset_name="real", files=[(relative, handle)])
    assert result.traces == traces
    assert Counter(Trace.objects.values_list("reward", flat=True)) == Counter(rewards)
    assert result.blocks == Block.objects.count() > 0
