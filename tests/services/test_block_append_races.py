"""traces/services/blocks.py and deletion.py: an append of blocks and a delete of their
trace take the trace row's lock in turn, so that neither leaves blocks without a trace
nor fails at its commit (attacker review of the block keys as triggers)."""

import threading

import pytest
from django.db import connection, connections, transaction

from traces.errors import NotFound
from traces.models import Block, Trace
from traces.services.blocks import BlockInput, block_create
from traces.services.deletion import trace_delete
from traces.services.traces import trace_create

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGE = BlockInput(sub_type="MESSAGE", payload={"role": "user", "content": "hi"})


def test_an_append_to_a_trace_deleted_meanwhile_answers_not_found(org):
    trace = trace_create(organization=org, dataset=None, name="t", metadata={})
    with connection.cursor() as cursor:  # as a delete in another request would
        cursor.execute("DELETE FROM traces_search_pending WHERE trace_id = %s", [trace.pk])
        cursor.execute("DELETE FROM traces_trace WHERE id = %s", [trace.pk])
    with pytest.raises(NotFound, match=f"no trace '{trace.pk}'") as raised:
        block_create(trace=trace, block=MESSAGE)
    assert raised.value.details == {"trace_id": trace.pk}
    assert not Block.objects.exists()


@pytest.mark.postgres  # SQLite runs one write transaction at a time: no such race
def test_a_delete_waits_for_a_running_append_and_takes_its_blocks_too(org):
    trace = trace_create(organization=org, dataset=None, name="t", metadata={})
    block_create(trace=trace, block=MESSAGE)
    errors: list[BaseException] = []
    deleting = threading.Thread(target=_delete_in_thread, args=(trace, errors))
    with transaction.atomic():
        block_create(trace=trace, block=MESSAGE)  # holds the trace's lock until the commit
        deleting.start()
        deleting.join(timeout=1.0)
        assert deleting.is_alive()  # waiting for the append
    deleting.join(timeout=30)
    assert not deleting.is_alive() and errors == []
    assert not Trace.objects.filter(pk=trace.pk).exists()
    assert not Block.objects.filter(trace_id=trace.pk).exists()


def _delete_in_thread(trace: Trace, errors: list[BaseException]) -> None:
    try:
        trace_delete(trace=trace)
    except BaseException as exc:  # reported to the test's thread
        errors.append(exc)
    finally:
        connections.close_all()


@pytest.mark.postgres  # SQLite runs one write transaction at a time: no such race
def test_a_dataset_delete_holds_its_traces_so_an_append_meanwhile_finds_none(org):
    """The delete locks every trace of the dataset before it deletes their blocks: an
    append that comes while it runs waits, then finds no trace (NotFound), instead of
    adding blocks to a trace whose blocks are gone and failing the delete's commit."""
    from traces.models import Dataset
    from traces.services.deletion import _delete_traces, _hold_traces

    dataset = Dataset.objects.create(organization=org, name="d")
    trace = trace_create(organization=org, dataset=dataset, name="t", metadata={})
    block_create(trace=trace, block=MESSAGE)
    errors: list[BaseException] = []
    appending = threading.Thread(target=_append_in_thread, args=(trace, errors))
    with transaction.atomic():  # dataset_delete's steps, the append coming in between
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        _hold_traces(dataset)
        appending.start()
        appending.join(timeout=1.0)
        assert appending.is_alive()  # waiting for the delete
        _delete_traces(Trace.objects.filter(dataset_id=dataset.pk))
        Dataset.objects.filter(pk=dataset.pk).delete()
    appending.join(timeout=30)
    assert not appending.is_alive()
    assert [type(e) for e in errors] == [NotFound]
    assert not Trace.objects.filter(pk=trace.pk).exists()
    assert not Block.objects.filter(trace_id=trace.pk).exists()


def _append_in_thread(
    trace: Trace, errors: list[BaseException], block: BlockInput = MESSAGE
) -> None:
    try:
        block_create(trace=trace, block=block)
    except BaseException as exc:  # reported to the test's thread
        errors.append(exc)
    finally:
        connections.close_all()


@pytest.mark.postgres  # SQLite runs one write transaction at a time: no such race
def test_a_parent_deleted_while_an_append_waits_for_the_trace_is_refused(org):
    """One block's parent is read with the trace's lock, not before it: a writer that
    holds the lock and deletes the parent (OTel ingestion replacing a stand-in message)
    leaves the waiting append a missing parent, refused, not a block under nothing."""
    from traces.errors import ValidationFailed

    trace = trace_create(organization=org, dataset=None, name="t", metadata={})
    message = block_create(trace=trace, block=MESSAGE)
    think = BlockInput(sub_type="THINK", payload={"text": "hm"}, parent_block_id=message["id"])
    errors: list[BaseException] = []
    appending = threading.Thread(target=_append_in_thread, args=(trace, errors, think))
    with transaction.atomic():
        Trace.objects.select_for_update().filter(pk=trace.pk).first()
        appending.start()
        appending.join(timeout=1.0)
        assert appending.is_alive()  # waiting for the lock
        Block.objects.filter(pk=message["id"]).delete()
    appending.join(timeout=30)
    assert not appending.is_alive()
    assert [type(e) for e in errors] == [ValidationFailed]
    assert errors[0].details["rule"] == "parent_exists"
    assert not Block.objects.filter(trace_id=trace.pk).exists()
