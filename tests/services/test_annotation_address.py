"""annotation_create with an Explorer address (traces/services/annotations.py): kept as
given, its block found through the trace's stored events, refused only when it is no
address of the grammar (saying where it breaks), kept when it points nowhere."""

import pytest

from tests.explorer.anchored import explorer_trace
from traces.errors import ValidationFailed
from traces.models import Block, TraceEvent
from traces.services.annotations import annotation_create


@pytest.fixture
def trace(org):
    return explorer_trace(org, real=False)


def test_an_address_is_kept_and_gives_the_block_its_event_shows(trace):
    note = annotation_create(
        trace=trace, comment="c", address="messages.2.content:0-4",
        extra_metadata={"source": "guardrails-error", "nested": {"a": [1]}},
    )  # fmt: skip
    event = TraceEvent.objects.get(trace=trace, position=2)
    assert note.block == Block.objects.get(trace=trace, number=event.first_block)
    note.refresh_from_db()
    assert note.address == "messages.2.content:0-4"
    assert note.extra_metadata == {"source": "guardrails-error", "nested": {"a": [1]}}


def test_an_address_that_points_nowhere_is_kept_on_the_trace(trace):
    note = annotation_create(trace=trace, comment="c", address="messages[40].content:L9")
    assert (note.address, note.block_id) == ("messages[40].content:L9", None)


def test_a_given_block_wins_over_the_address(trace):
    block = Block.objects.filter(trace=trace).order_by("number").last()
    note = annotation_create(trace=trace, comment="c", address="messages[0]", block_id=block.pk)
    assert note.block_id == block.pk


@pytest.mark.parametrize(
    ("address", "message"),
    [
        (
            "messages[1].content:4",
            "address 'messages[1].content:4': anchor '4' is none of Ln, start-end, "
            "bbox-x1,y1,x2,y2",
        ),
        ("messages", "address 'messages': the first step after 'messages' is an event index"),
        ("messages[1]é", "address 'messages[1]é': an address is ASCII"),
        (["messages[1]"], "address: a string of at most 1000 characters"),
        ("messages[1]" + "x" * 1000, "address: a string of at most 1000 characters"),
        ("messages[1]\x00", "address: a string of at most 1000 characters"),
    ],
)
def test_a_bad_address_is_refused_saying_where_it_breaks(trace, address, message):
    with pytest.raises(ValidationFailed) as refused:
        annotation_create(trace=trace, comment="c", address=address)
    assert refused.value.message == message
    assert refused.value.details["field"] == "address"
    assert not trace.annotations.filter(comment="c").exists()


def test_extra_metadata_nested_too_deep_is_refused(trace):
    deep: dict = {}
    for _ in range(200):
        deep = {"a": deep}
    with pytest.raises(ValidationFailed):
        annotation_create(trace=trace, comment="c", address="messages[0]", extra_metadata=deep)
