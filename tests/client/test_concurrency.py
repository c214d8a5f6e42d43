"""Concurrent writers through the client (trace_explorer_client) against the live
server, whose threads each handle their requests with their own database connection.

Run on PostgreSQL with e.g.
DATABASE_URL=postgres://postgres@127.0.0.1:5432/clienttest pytest tests/client
"""

import pytest

from tests.threads import run_together
from trace_explorer_client import Block, TraceApiError, TraceClient
from traces.models import Block as BlockRow
from traces.models import Trace as TraceRow
from traces.services.api_keys import api_key_create

# slow: threads against a live server
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# races between database connections: PostgreSQL (SQLite serializes writers)
postgres_only = pytest.mark.postgres


@pytest.fixture
def tc(live_server, org):
    key = api_key_create(organization=org, name="concurrency").secret
    with TraceClient(live_server.url, key, "acme") as client:
        yield client


def one_won_one_duplicate(outcomes, codes=("DUPLICATE_CALL_ID",)):
    won = [o for o in outcomes if isinstance(o, Block | list)]
    lost = [o for o in outcomes if isinstance(o, TraceApiError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert lost[0].code in codes and lost[0].http_status == 409, lost[0]
    return won[0], lost[0]


@postgres_only
def test_two_writers_racing_for_one_call_id_one_wins_one_gets_409(tc):
    trace = tc.create_trace(name="race")
    message = trace.log_message("assistant", None)
    for round_ in range(10):
        call_id = f"call_{round_}"
        outcomes = run_together(
            [
                lambda n=n, call_id=call_id: trace.log_act(message, call_id, f"tool_{n}", {"n": n})
                for n in range(2)
            ]
        )
        won, lost = one_won_one_duplicate(outcomes)
        assert won.payload["call_id"] == call_id
        assert lost.details["call_id"] == call_id
    calls = BlockRow.objects.filter(trace_id=trace.id, sub_type="TOOL_CALL")
    assert sorted(calls.values_list("call_id", flat=True)) == [f"call_{i}" for i in range(10)]
    assert TraceRow.objects.get(pk=trace.id).block_count == 11


def race_batches(tc, rounds=10):
    """Two buffered writers flush a batch (a call and its result) with the same call_id at
    once, `rounds` times; the losers' errors."""
    trace = tc.create_trace(name="batch race")
    message = trace.log_message("assistant", None)
    writers = [tc.trace(trace.id), tc.trace(trace.id)]  # a buffer each

    def batch(n, call_id):
        with writers[n].buffered():
            call = writers[n].log_act(message, call_id, f"tool_{n}", {})
            writers[n].log_observe(call, call_id, output=n)
        return [call]

    losers = []
    for round_ in range(rounds):
        call_id = f"batch_{round_}"
        outcomes = run_together([lambda n=n, c=call_id: batch(n, c) for n in range(2)])
        _, lost = one_won_one_duplicate(outcomes, ("DUPLICATE_CALL_ID", "DUPLICATE_RESULT_SEQ"))
        losers.append((call_id, lost))
    # all or nothing: each loser wrote neither its call nor its result
    assert BlockRow.objects.filter(trace_id=trace.id).count() == 1 + rounds * 2
    assert TraceRow.objects.get(pk=trace.id).block_count == 1 + rounds * 2
    return losers


@postgres_only
def test_two_batches_racing_for_one_call_id_one_wins_one_gets_409(tc):
    race_batches(tc)


@postgres_only
def test_a_batch_losing_the_race_names_the_conflicting_block(tc):
    for call_id, lost in race_batches(tc):
        assert lost.code == "DUPLICATE_CALL_ID"
        assert lost.details["call_id"] == call_id
        assert lost.details["index"] == 0


WRITERS = 20
MESSAGES_PER_WRITER = 5  # each: a message, then 2 x (tool call, its result) = 5 blocks


def test_twenty_writers_appending_to_one_trace_lose_nothing_and_keep_their_order(tc):
    trace = tc.create_trace(name="twenty writers")

    def write(writer):
        mine = tc.trace(trace.id)  # its own Trace object; the client is shared
        written = []
        for m in range(MESSAGES_PER_WRITER):
            message = mine.log_message("user", f"writer {writer} message {m}")
            written.append(message.id)
            for c in range(2):
                call_id = f"w{writer}_m{m}_c{c}"
                call = mine.log_act(message, call_id, "tool", {"writer": writer})
                result = mine.log_observe(call, call_id, output=f"{writer}/{m}/{c}")
                written += [call.id, result.id]
        return written

    outcomes = run_together([lambda w=w: write(w) for w in range(WRITERS)])
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    assert not failures, failures
    expected = {block_id for written in outcomes for block_id in written}
    assert len(expected) == WRITERS * MESSAGES_PER_WRITER * 5 == 500

    flat = trace.blocks()
    assert len(flat) == 500
    assert {b.id for b in flat} == expected
    position = {b.id: i for i, b in enumerate(flat)}
    for written in outcomes:
        places = [position[block_id] for block_id in written]
        assert places == sorted(places), "a writer's blocks are out of its order"
        # each message is followed by its own calls and results, nobody else's
        for m in range(MESSAGES_PER_WRITER):
            group = places[m * 5 : m * 5 + 5]
            assert group == list(range(group[0], group[0] + 5))

    tree = trace.stitched()
    assert len(tree.messages) == WRITERS * MESSAGES_PER_WRITER
    assert all(not blocks for blocks in tree.orphans.values())
    for message in tree.messages:
        assert [c.sub_type for c in message.children] == ["TOOL_CALL", "TOOL_CALL"]
        assert all(len(call.children) == 1 for call in message.children)
    assert [b.id for b in tree.walk()] == [b.id for b in flat]
    assert trace.refresh().block_count == 500
