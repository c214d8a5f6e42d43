"""traces/ingest/streamed.py: what one pass over a long line finds, the events it then
gives one at a time, and the paced reads (traces/ingest/lines.py's Paced)."""

import io
import json

import pytest

from traces import jsontext
from traces.ingest import streamed
from traces.ingest.lines import READ_MAX, READ_MIN, Bounded, Paced


def scan(value) -> streamed.Shape:
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    return streamed.scan(io.BytesIO(data), 0, len(data))


def events_of(value) -> list:
    data = json.dumps(value).encode()
    stream = io.BytesIO(data)
    shape = streamed.scan(stream, 0, len(data))
    return list(streamed.events(stream, 0, len(data), shape))


EVENTS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [1, {"a": None}]}]


def test_a_trace_object_keeps_every_value_but_its_events_whatever_their_order():
    value = {"name": "n", "messages": EVENTS, "metadata": {"reward": 1, "deep": {"x": [1]}}}
    shape = scan(value)
    assert shape.prefix == "messages.item"
    assert shape.shell == {"name": "n", "metadata": {"reward": 1, "deep": {"x": [1]}},
                           "messages": []}  # fmt: skip
    assert events_of(value) == EVENTS


def test_an_event_array_is_streamed_and_its_leading_metadata_kept_in_the_shell():
    value = [{"metadata": {"name": "m"}}, *EVENTS]
    shape = scan(value)
    assert (shape.prefix, shape.shell, shape.skip_first) == ("item", [value[0]], True)
    assert events_of(value) == EVENTS
    assert scan(EVENTS).shell == [] and events_of(EVENTS) == EVENTS


def test_the_depth_is_the_deepest_nesting():
    assert scan(EVENTS).depth == jsontext.depth(EVENTS) == 4
    deepest_in_metadata = {"messages": EVENTS, "metadata": {"a": [[[[]]]]}}
    assert scan(deepest_in_metadata).depth == jsontext.depth(deepest_in_metadata) == 6


@pytest.mark.parametrize(
    "value",
    [
        [{"sub_type": "MESSAGE", "payload": {}}],  # a spec/004 block array
        [{"metadata": {}}, {"sub_type": "MESSAGE"}],
        {"messages": [{"sub_type": "MESSAGE"}]},
        {"metadata": {"a": 1}},  # no events
        {"messages": "not an array"},
        "a string",
    ],
)
def test_what_is_not_a_trace_of_events_is_not_streamed(value):
    shape = scan(value)
    assert shape.prefix is None and shape.shell is None


def test_a_line_nested_deeper_than_the_limit_is_not_streamed():
    deep = "[" * jsontext.MAX_DEPTH + "]" * jsontext.MAX_DEPTH
    shape = scan(('{"messages": [{"role": "user", "content": ' + deep + "}]}").encode())
    assert shape.prefix is None and shape.depth == jsontext.MAX_DEPTH + 3


def test_a_messages_key_given_twice_is_not_streamed():
    assert scan(b'{"messages": [], "messages": [{"role": "user"}]}').prefix is None


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"messages": [{"role": "user"}', "parse error"),
        (b'{"messages": []} []', "trailing garbage"),
        (b'{"messages": [{"n": 123456789012345678901234567890}]}', "64 bits"),
        (b"   ", "premature EOF"),
    ],
)
def test_a_broken_line_is_refused_by_the_scan(data, says):
    with pytest.raises(jsontext.JsonError) as caught:
        scan(data)
    assert says in str(caught.value)


def test_an_image_hint_is_found_across_a_read_boundary():
    # The hint "data:image" straddles the first read's end.
    filler = "x" * (READ_MIN - len('{"messages": [{"role": "user", "content": "') - 4)
    text = '{"messages": [{"role": "user", "content": "' + filler + 'data:image/png"}]}'
    assert scan(text.encode()).images_possible
    assert not scan(EVENTS).images_possible


def test_reads_are_small_where_strings_are_many_and_grow_in_a_long_string():
    many = json.dumps([{"a": "b"}] * 100_000).encode()
    reads = Paced(io.BytesIO(many))
    assert [len(reads.read(READ_MAX)) for _ in range(3)] == [READ_MIN] * 3
    long = b'"' + b"s" * (20 * READ_MAX) + b'"'
    reads = Paced(io.BytesIO(long))
    sizes = [len(reads.read(READ_MAX)) for _ in range(3)]
    assert sizes == [READ_MIN, READ_MAX, READ_MAX]


def test_paced_reads_answer_ijsons_question_without_losing_bytes():
    data = json.dumps(EVENTS * 5000).encode()
    reads = Paced(Bounded(io.BytesIO(data + b"after"), len(data)))
    assert reads.read(0) == b""
    got = b"".join(iter(lambda: reads.read(READ_MAX), b""))
    assert got == data
