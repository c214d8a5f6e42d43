"""traces/anchors.py: where an address lands in a stored event (its block, the quote it
covers, or why it does not), and the address a selection spells."""

import pytest

from traces.addresses import address_parse
from traces.anchors import Place, note_place, selection_address, value_at

EVENT = {
    "role": "assistant",
    "content": "first line\nsecond line",
    "tool_calls": [
        {"id": "c1", "function": {"name": "search", "arguments": {"query": "two Nobel Prizes"}}},
        {"id": "c2", "function": {"name": "fetch", "arguments": {"url": "https://x.org"}}},
    ],
}
BLOCKS = [("m", "MESSAGE"), ("t1", "TOOL_CALL"), ("t2", "TOOL_CALL")]


def place(address: str, event=EVENT) -> Place:
    return note_place(address_parse(address), event, BLOCKS, spelled=address)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("messages[0]", Place("m")),
        ("messages[0].content:L1", Place("m", quote="second line", hint=11 / 22)),
        ("messages[0]:L0", Place("m", quote="first line", hint=0.0)),  # legacy: the content
        ("messages.0.content:6-99", Place("m", quote="line\nsecond line", hint=6 / 22)),
        (
            "messages[0].tool_calls[1].function.arguments.url:8-13",
            Place("t2", quote="x.org", hint=8 / 13),
        ),
    ],
)
def test_an_address_lands_on_its_block_and_covers_its_text(address, expected):
    assert place(address) == expected


@pytest.mark.parametrize(
    ("address", "block", "why"),
    [
        ("messages[0].content:L2", "m", "past the end of the text (22 characters)"),
        ("messages[0].content:30-40", "m", "past the end of the text"),
        ("messages[0].content:bbox-0,0,1,1", "m", "an image region"),
        ("messages[0].nothing:L0", "m", "the event has nothing at this path"),
        ("messages[0].tool_calls[0]:L0", "t1", "the value at this path is not text"),
        ("messages[0].tool_calls[5].id", None, "event 0 shows no such block"),
    ],
)
def test_an_address_that_does_not_resolve_says_why_and_keeps_its_block(address, block, why):
    found = place(address)
    assert (found.block, found.quote) == (block, None)
    assert found.why.startswith(address + ": ") and why in found.why


def test_an_address_of_a_missing_event_lands_nowhere():
    assert place("messages[7]", event=None) == Place(
        None, why="messages[7]: the trace has no event 7"
    )


def test_value_at_walks_keys_and_indices_and_stops_at_what_is_not_there():
    assert value_at(EVENT, ("tool_calls", 0, "id")) == (True, "c1")
    assert value_at({"a": {"0": "zero"}}, ("a", 0)) == (True, "zero")
    assert value_at(EVENT, ("tool_calls", 9)) == (False, None)
    assert value_at(EVENT, ("content", "x")) == (False, None)


@pytest.mark.parametrize(
    ("sub_type", "call", "quote", "hint", "expected"),
    [
        ("MESSAGE", None, "second line", 0.0, "messages[4].content:L1"),
        ("MESSAGE", None, "line", 0.0, "messages[4].content:6-10"),
        ("MESSAGE", None, "line", 0.9, "messages[4].content:18-22"),
        ("MESSAGE", None, "line second", 0.0, "messages[4].content:6-17"),  # folded break
        ("TOOL_CALL", 0, "Nobel", 0.0, "messages[4].tool_calls[0].function.arguments.query:4-9"),
        ("TOOL_CALL", 1, "search", 0.0, None),  # the first call's name, not the second's
        ("MESSAGE", None, "Nobel", 0.0, None),  # a message block does not show the calls
        ("MESSAGE", None, "   ", 0.0, None),
    ],
)
def test_a_selection_spells_the_address_of_its_text(sub_type, call, quote, hint, expected):
    found = selection_address(
        event_index=4, event=EVENT, sub_type=sub_type, call=call, quote=quote, hint=hint
    )
    assert found == expected


def test_a_selection_skips_keys_an_address_cannot_spell():
    event = {"role": "tool", "content": [{"type": "text", "text": "ok"}], "odd.key": "ok"}
    found = selection_address(
        event_index=0, event=event, sub_type="TOOL_RESULT", call=None, quote="ok", hint=0
    )
    assert found == "messages[0].content[0].text:L0"
    assert address_parse(found).path == ("content", 0, "text")


@pytest.mark.parametrize(
    ("content", "quote", "expected"),
    [
        ("it is **really** done", "is really done", "messages[0].content:3-21"),
        ("see [the docs](https://x.org/a) now", "the docs now", "messages[0].content:5-35"),
        ("# Title\nbody", "Title body", "messages[0].content:2-12"),
        ("it is **really** done", "is not done", None),
    ],
)
def test_a_selection_across_markdown_the_page_drew_is_found_in_the_text(content, quote, expected):
    event = {"role": "assistant", "content": content}
    found = selection_address(
        event_index=0, event=event, sub_type="MESSAGE", call=None, quote=quote, hint=0
    )
    assert found == expected


def test_a_hostile_text_costs_the_markdown_match_linear_time():
    event = {"role": "user", "content": "a" + " *" * 200_000 + " b"}
    found = selection_address(
        event_index=0, event=event, sub_type="MESSAGE", call=None, quote="a c", hint=0
    )
    assert found is None
