"""traces/addresses.py: every form of Explorer's address grammar, and what it refuses."""

import pytest

from traces.addresses import Address, AddressInvalid, address_block, address_parse, text_span


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<root>", Address(event=None)),
        ("messages[3]", Address(event=3)),
        ("messages[0].content:L0", Address(event=0, path=("content",), line=0)),
        ("messages.2.content:4-9", Address(event=2, path=("content",), chars=(4, 9))),
        (
            "messages.4.tool_calls.0.function.arguments.query:0-7",
            Address(
                event=4, path=("tool_calls", 0, "function", "arguments", "query"), chars=(0, 7)
            ),
        ),  # fmt: skip
        (
            "messages.5.content:bbox-0.1,0.2,0.4,0.5",
            Address(event=5, path=("content",), bbox=(0.1, 0.2, 0.4, 0.5)),
        ),
        ("messages[0]:L0", Address(event=0, line=0)),
        ("messages[1].tool_calls[2]", Address(event=1, path=("tool_calls", 2))),
    ],
)
def test_parses_each_form_the_contract_lists(text, expected):
    assert address_parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "", "messages", "message[0]", "messages.content", "messages[x]", "messages[0]:",
        "messages[0]:L", "messages[0]:9-4", "messages[0]:bbox-0,0,2,1", "messages[0]:Lx",
        "messages[²]", "messages[0]:L" + "9" * 20, "messages[0].[1]", None, "<root>:L0",
    ],
)  # fmt: skip
def test_refuses_what_is_not_an_address(text):
    with pytest.raises(AddressInvalid):
        address_parse(text)


EVENT = [("m", "MESSAGE"), ("t", "THINK"), ("c0", "TOOL_CALL"), ("c1", "TOOL_CALL")]


def test_a_tool_call_address_points_at_that_call_and_anything_else_at_the_message():
    assert address_block(address_parse("messages[1].tool_calls[1].function"), EVENT) == "c1"
    assert address_block(address_parse("messages[1].content:L2"), EVENT) == "m"
    assert address_block(address_parse("messages[1].tool_calls[5]"), EVENT) is None
    assert address_block(address_parse("<root>"), EVENT) is None
    assert address_block(address_parse("messages[9]"), []) is None


def test_text_span_is_the_line_or_the_range_and_none_past_the_end():
    text = "one\ntwo\nthree"
    assert text_span(text, address_parse("messages[0].content:L1")) == (4, 7)
    assert text_span(text, address_parse("messages[0].content:L2")) == (8, 13)
    assert text_span(text, address_parse("messages[0].content:L3")) is None
    assert text_span(text, address_parse("messages[0].content:2-99")) == (2, 13)
    assert text_span(text, address_parse("messages[0].content:99-100")) is None
    assert text_span(text, address_parse("messages[0].content")) == (0, 13)
    assert text_span(text, address_parse("messages[0]:bbox-0,0,1,1")) is None
