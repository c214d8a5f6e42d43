"""traces/services/blocks.py: appends through the API, one block or a batch."""

import threading

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from tests.threads import until_one_waits_for_a_lock
from traces.errors import ValidationFailed
from traces.models import Block, Trace
from traces.services.blocks import BlockInput, block_create, blocks_create_batch
from traces.services.traces import trace_create


def turns(count: int) -> list[BlockInput]:
    """`count` turns of a message and a call under it, parents named by ref."""
    blocks = []
    for n in range(count):
        blocks.append(BlockInput(
            sub_type="MESSAGE", payload={"role": "assistant", "content": f"turn {n}"},
            ref=f"m{n}",
        ))  # fmt: skip
        blocks.append(BlockInput(
            sub_type="TOOL_CALL", parent_block_id=f"m{n}",
            payload={"call_id": f"c{n}", "name": "look", "arguments": {}},
        ))  # fmt: skip
    return blocks


def queries_of_a_batch(org, count: int) -> int:
    trace = trace_create(organization=org, dataset=None, name=f"t{count}", metadata={})
    with CaptureQueriesContext(connection) as captured:
        blocks_create_batch(trace=trace, blocks=turns(count))
    return len(captured.captured_queries)


def test_a_batch_looks_up_no_acts_of_the_turns_it_makes(org):
    """The acts of a turn the batch made are known (none): a query for each turn's first
    call made a 1,000-block batch of 500 turns cost 500 queries more."""
    assert queries_of_a_batch(org, 2) == queries_of_a_batch(org, 20)
    acts = list(Block.objects.filter(sub_type="TOOL_CALL").values_list("act", flat=True))
    assert acts == [1] * 22


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_parent_written_while_the_append_waited_for_the_lock_is_found(org):
    """The one-block append reads its parent in the statement that takes the trace's
    lock; on PostgreSQL that statement sees the parent as it was when it began, not as
    the lock's holder left it (attacker review). Here the holder writes the parent and
    the append that names it starts before the holder commits: it was refused as a
    parent the trace does not have. (A holder that moves a parent, OpenTelemetry's
    placing again, left the block placed by the parent's old turn the same way.)"""
    trace = trace_create(organization=org, dataset=None, name="race", metadata={})
    parent_written, commit = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def holder() -> None:
        try:
            with transaction.atomic():
                outcome["parent"] = block_create(trace=trace, block=BlockInput(
                    sub_type="MESSAGE", payload={"role": "assistant", "content": "calling"},
                ))["id"]  # fmt: skip
                parent_written.set()
                commit.wait(30)
        finally:
            connections.close_all()

    def child() -> None:
        try:
            outcome["child"] = block_create(trace=trace, block=BlockInput(
                sub_type="TOOL_CALL", parent_block_id=outcome["parent"],
                payload={"call_id": "c1", "name": "look", "arguments": {}},
            ))  # fmt: skip
        except Exception as exc:  # the outcome the test looks at
            outcome["child"] = exc
        finally:
            connections.close_all()

    first = threading.Thread(target=holder)
    first.start()
    assert parent_written.wait(30)
    second = threading.Thread(target=child)
    second.start()
    # until the append's statement waits for the trace's lock
    assert until_one_waits_for_a_lock() == 1
    commit.set()
    first.join(30)
    second.join(30)
    assert not isinstance(outcome["child"], Exception), outcome["child"]
    assert outcome["child"]["parent_block_id"] == outcome["parent"]
    assert Trace.objects.get(pk=trace.pk).block_count == 2


def a_batch_racing_a_lock_holder(org, holder_work) -> tuple[Trace, str, object]:
    """A batch naming a stored parent, its parents read before the trace's lock while
    another transaction holds the lock and runs `holder_work(trace, parent_id)`: the
    trace, the parent's id and the batch's outcome (its blocks or the error raised)."""
    trace = trace_create(organization=org, dataset=None, name="race", metadata={})
    parent = block_create(trace=trace, block=BlockInput(
        sub_type="MESSAGE", payload={"role": "assistant", "content": "calling"},
    ))["id"]  # fmt: skip
    locked, commit = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def holder() -> None:
        try:
            with transaction.atomic():
                Trace.objects.select_for_update().get(pk=trace.pk)
                holder_work(trace, parent)
                locked.set()
                commit.wait(30)
        finally:
            connections.close_all()

    def batch() -> None:
        try:
            outcome["batch"] = blocks_create_batch(trace=trace, blocks=[BlockInput(
                sub_type="TOOL_CALL", parent_block_id=parent,
                payload={"call_id": "c1", "name": "look", "arguments": {}},
            )])  # fmt: skip
        except Exception as exc:  # the outcome the test looks at
            outcome["batch"] = exc
        finally:
            connections.close_all()

    first = threading.Thread(target=holder)
    first.start()
    assert locked.wait(30)
    second = threading.Thread(target=batch)
    second.start()
    assert until_one_waits_for_a_lock() == 1  # until the batch waits for the trace's lock
    commit.set()
    first.join(30)
    second.join(30)
    return trace, parent, outcome["batch"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_batch_places_a_block_under_where_its_parent_is_once_locked(org):
    """OpenTelemetry's placing again moves blocks under the trace's lock; a batch read
    its parents before that lock and put the block under the parent's old turn (attacker
    review)."""

    def move(trace: Trace, parent: str) -> None:
        Block.objects.filter(pk=parent).update(turn=7)

    trace, parent, outcome = a_batch_racing_a_lock_holder(org, move)
    assert not isinstance(outcome, Exception), outcome
    [call] = outcome
    assert Block.objects.get(pk=call["id"]).turn == 7


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_parent_is_deleted_meanwhile_is_refused_as_a_missing_parent(org):
    """OpenTelemetry deletes a stand-in message under the trace's lock; a batch naming it
    failed the deferred key check at the commit with a 500 (attacker review)."""

    def delete(trace: Trace, parent: str) -> None:
        Block.objects.filter(pk=parent).delete()

    trace, parent, outcome = a_batch_racing_a_lock_holder(org, delete)
    assert isinstance(outcome, ValidationFailed)
    assert outcome.details == {"index": 0, "field": "parent_block_id", "rule": "parent_exists"}
    assert Block.objects.filter(trace=trace).count() == 0
