"""traces/order.py: the stitched order each block gets when it is written."""

import io

import orjson
import pytest

from tests.kinds_of import block_counts
from traces.ingest.streamed import STREAM_LINE
from traces.models import Trace
from traces.order import (
    ORPHAN,
    Place,
    TraceOrder,
    count_places,
    place_block,
    stitched_places,
)
from traces.selectors.blocks import trace_blocks_placed_again
from traces.services.imports import trace_import


def test_a_chat_trace_gets_rows_acts_and_result_steps():
    blocks = [
        ("MESSAGE", None, None),  # 0 user
        ("MESSAGE", None, None),  # 1 assistant
        ("THINK", 1, None),
        ("TOOL_CALL", 1, None),
        ("TOOL_CALL", 1, None),
        ("TOOL_RESULT", 3, None),  # no seq: after the results with one
        ("TOOL_RESULT", 3, 0),
        ("TOOL_RESULT", 4, None),
        ("MESSAGE", None, None),
    ]
    assert stitched_places(blocks) == [
        Place(0), Place(1), Place(1, 1), Place(1, 2), Place(1, 3),
        Place(1, 2, 2), Place(1, 2, 1), Place(1, 3, 2), Place(2),
    ]  # fmt: skip


def test_a_block_under_a_missing_or_wrong_parent_is_an_orphan_and_so_are_its_results():
    blocks = [
        ("MESSAGE", None, None),
        ("TOOL_CALL", None, None),  # no parent
        ("TOOL_RESULT", 1, None),  # under the orphan call
        ("TOOL_RESULT", 0, None),  # under a message: the wrong sub type
        ("THINK", 0, None),
    ]
    places = stitched_places(blocks)
    assert places == [Place(0), ORPHAN, ORPHAN, ORPHAN, Place(0, 1)]
    counts = count_places([b[0] for b in blocks], places)
    assert counts == block_counts(MESSAGE=1, THINK=1, ORPHAN=3)


def test_appending_numbers_a_new_act_after_the_acts_its_turn_already_has():
    asked = []

    def stored_acts(turn: int) -> int:
        asked.append(turn)
        return 4

    order = TraceOrder(turns=7, acts_of_turn=stored_acts)

    def place(sub_type, parent_sub_type=None, parent_place=None, seq=None):
        return place_block(
            sub_type=sub_type, result_seq=seq, parent_sub_type=parent_sub_type,
            parent_place=parent_place, order=order,
        )  # fmt: skip

    assert place("MESSAGE") == Place(7)
    assert place("TOOL_CALL", "MESSAGE", Place(2)) == Place(2, 5)
    assert place("THINK", "MESSAGE", Place(2)) == Place(2, 6)
    assert place("TOOL_RESULT", "TOOL_CALL", Place(2, 1), seq=3) == Place(2, 1, 1)
    assert asked == [2]  # the stored acts of a turn are read once


# --- What the writers store ---------------------------------------------------------------


def stored_and_recomputed(trace: Trace) -> tuple[list[tuple], list[tuple]]:
    """The trace's stored (id, turn, act, step, number), and the same computed again from
    its rows in creation order, as the migration does for rows stored before the order."""
    placed = trace_blocks_placed_again(trace=trace)
    stored = [(block_id, *row) for block_id, row in zip(placed.ids, placed.stored, strict=True)]
    computed = [(block_id, *row) for block_id, row in zip(placed.ids, placed.computed, strict=True)]
    return stored, computed


def chat_events(turns: int, content: str = "x") -> list[dict]:
    events = [{"role": "user", "content": content}]
    for n in range(turns):
        calls = [
            {"id": f"c{n}_{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for k in range(2)
        ]
        events.append({"role": "assistant", "content": None, "tool_calls": calls})
        events += [{"role": "tool", "tool_call_id": f"c{n}_{k}", "content": "ok"} for k in (1, 0)]
        events.append({"role": "user", "content": content})
    return events


@pytest.mark.parametrize(
    "line_bytes", [0, STREAM_LINE], ids=["parsed whole", "streamed (a long line)"]
)
def test_an_import_stores_each_block_s_place_and_number_and_the_trace_s_counts(org, line_bytes):
    content = "y" * (line_bytes // 20 + 1)
    data = orjson.dumps({"messages": chat_events(20, content)}) + b"\n"
    assert len(data) >= line_bytes
    trace_import(organization=org, dataset_name="d", files=[("a.jsonl", io.BytesIO(data))])
    trace = Trace.objects.get(dataset__name="d")
    stored, computed = stored_and_recomputed(trace)
    assert stored == computed and len(stored) == trace.block_count == 1 + 20 * 6
    assert [place[1:4] for place in stored[1:6]] == [
        (1, 0, 0),
        (1, 1, 0),
        (1, 2, 0),
        (1, 2, 2),
        (1, 1, 2),
    ]  # the results answer the second call first
    assert trace.block_counts == block_counts(MESSAGE=41, TOOL_CALL=40, TOOL_RESULT=40)


def test_an_import_of_a_block_array_places_blocks_under_any_earlier_parent(org):
    blocks = [
        {"id": "m0", "sub_type": "MESSAGE", "payload": {"role": "user", "content": "a"}},
        {"id": "m1", "sub_type": "MESSAGE", "payload": {"role": "assistant", "content": "b"}},
        {"id": "t0", "sub_type": "THINK", "parent_block_id": "m0", "payload": {"text": "t"}},
        {"id": "c1", "sub_type": "TOOL_CALL", "parent_block_id": "m1",
         "payload": {"name": "f", "arguments": {}, "call_id": "k"}},
        {"id": "r1", "sub_type": "TOOL_RESULT", "parent_block_id": "c1",
         "payload": {"call_id": "k", "output": "o"}},
    ]  # fmt: skip
    data = orjson.dumps(blocks)
    trace_import(organization=org, dataset_name="d", files=[("b.json", io.BytesIO(data))])
    trace = Trace.objects.get(dataset__name="d")
    stored, computed = stored_and_recomputed(trace)
    assert stored == computed
    assert [place[1:4] for place in stored] == [
        (0, 0, 0),
        (1, 0, 0),
        (0, 1, 0),
        (1, 1, 0),
        (1, 1, 2),
    ]
