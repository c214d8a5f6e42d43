"""traces/ingest/events.py: chat events into block drafts (the rest is covered through
trace_import in tests/services/test_trace_import.py)."""

import time

import pytest

from traces.ingest.events import events_to_blocks
from traces.validation import Limits


def reusing_one_id(times: int, call_id: str = "call_1") -> list[dict]:
    """An agent whose every turn calls a tool with the same id, answered each time."""
    events = [{"role": "user", "content": "go"}]
    for _ in range(times):
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        events.append({"role": "assistant", "content": None, "tool_calls": [call]})
        events.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    return events


def stored_call_ids(events: list[dict]) -> list[str]:
    converted = events_to_blocks(events, location={}, limits=Limits.from_settings())
    assert converted.problems == []
    return [b.call_id for b in converted.blocks if b.sub_type == "TOOL_CALL"]


def test_a_reused_id_gets_the_next_free_suffix():
    events = reusing_one_id(3)
    # The file itself writes "call_1#3": the third use skips it.
    literal = {"id": "call_1#3", "type": "function", "function": {"name": "g", "arguments": "{}"}}
    events[3:3] = [
        {"role": "assistant", "content": None, "tool_calls": [literal]},
        {"role": "tool", "tool_call_id": "call_1#3", "content": "ok"},
    ]
    assert stored_call_ids(events) == ["call_1", "call_1#3", "call_1#2", "call_1#4"]


@pytest.mark.slow
def test_suffixing_reused_ids_costs_linear_time():
    """20,000 reuses of one id took minutes (each reuse tried every earlier suffix)."""
    events = reusing_one_id(20_000)
    started = time.perf_counter()
    ids = stored_call_ids(events)
    elapsed = time.perf_counter() - started
    assert ids[-1] == "call_1#20000" and len(set(ids)) == 20_000
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_a_user_simulators_reasoning_is_a_think_that_says_whose_it_is():
    """tau2 keeps the user simulator's reasoning with its message (raw_data): a THINK
    under the user's message, noted as the user's, never taken for the agent's."""
    events = [
        {"role": "assistant", "content": "How can I help?"},
        {
            "role": "user",
            "content": "My flight is late.",
            "raw_data": {"message": {"reasoning_content": "I play Ethan; start upset."}},
        },
        {"role": "assistant", "content": "Sorry.", "reasoning_content": "apologise first"},
    ]
    converted = events_to_blocks(events, location={}, limits=Limits.from_settings())
    assert converted.problems == []
    thinks = [b for b in converted.blocks if b.sub_type == "THINK"]
    parents = [converted.blocks[b.parent].payload["role"] for b in thinks]
    assert parents == ["user", "assistant"]
    assert thinks[0].metadata.get("thought_of") == "user"
    assert "thought_of" not in thinks[1].metadata
