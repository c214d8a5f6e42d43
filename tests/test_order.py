"""traces/order.py: the stitched order each block gets when it is written."""

from traces.order import (
    ORPHAN,
    ORPHANS,
    Place,
    TraceOrder,
    count_places,
    place_block,
    stitched_places,
)


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
    assert counts == {"MESSAGE": 1, "TOOL_CALL": 0, "THINK": 1, "TOOL_RESULT": 0, ORPHANS: 3}


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
