"""Rules the database itself holds, so that no way in and no race can break them."""

import re

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from traces.models import Block, Dataset, SearchPending, Trace


@pytest.fixture
def trace(org):
    dataset = Dataset.objects.create(organization=org, name="d")
    return Trace.objects.create(organization=org, dataset=dataset)


def make(trace, sub_type, block_type, payload, parent=None, call_id=None, seq=None):
    now = timezone.now()
    return Block.objects.create(
        trace=trace, sub_type=sub_type, block_type=block_type, payload=payload, parent=parent,
        call_id=call_id, result_seq=seq, created_at=now, updated_at=now,
    )  # fmt: skip


def refused(fn):
    with pytest.raises(IntegrityError), transaction.atomic():
        fn()


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_a_second_call_with_the_same_call_id(trace):
    message = make(trace, "MESSAGE", "MESSAGE", {"role": "user", "content": "x"})
    make(trace, "TOOL_CALL", "ACT", {}, message, "c1")
    refused(lambda: make(trace, "TOOL_CALL", "ACT", {}, message, "c1"))


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_a_second_result_with_the_same_seq(trace):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    call = make(trace, "TOOL_CALL", "ACT", {}, message, "c1")
    make(trace, "TOOL_RESULT", "OBSERVE", {}, call, "c1", 0)
    refused(lambda: make(trace, "TOOL_RESULT", "OBSERVE", {}, call, "c1", 0))
    make(trace, "TOOL_RESULT", "OBSERVE", {}, call, "c1", 1)


@pytest.mark.django_db(transaction=True)
def test_the_database_keeps_several_results_without_seq(trace):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    call = make(trace, "TOOL_CALL", "ACT", {}, message, "c1")
    for _ in range(3):
        make(trace, "TOOL_RESULT", "OBSERVE", {}, call, "c1", None)
    assert trace.blocks.filter(sub_type="TOOL_RESULT", result_seq__isnull=True).count() == 3


def test_the_database_refuses_a_block_type_that_contradicts_the_sub_type(trace):
    refused(lambda: make(trace, "MESSAGE", "ACT", {}))


def test_the_database_refuses_a_tool_call_without_a_parent(trace):
    refused(lambda: make(trace, "TOOL_CALL", "ACT", {}, None, "c1"))


def think_under(trace, parent) -> None:
    make(trace, "THINK", "ACT", {"text": "x"}, parent)
    # PostgreSQL checks the deferred composite key at commit.
    transaction.get_connection().check_constraints()


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_a_parent_in_another_trace(trace, org):
    other = Trace.objects.create(organization=org)
    message = make(other, "MESSAGE", "MESSAGE", {})
    refused(lambda: think_under(trace, message))
    assert not trace.blocks.exists()


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_a_parent_that_is_no_block(trace):
    refused(lambda: think_under(trace, Block(pk="tb_NOSUCHBLOCK")))
    assert not trace.blocks.exists()


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_delete_a_parent_that_keeps_children(trace):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    make(trace, "THINK", "ACT", {"text": "x"}, message)

    def orphaned():
        Block.objects.filter(pk=message.pk)._raw_delete(Block.objects.db)
        transaction.get_connection().check_constraints()

    refused(orphaned)
    assert trace.blocks.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresql_keeps_the_block_keys_in_deferred_triggers_alone():
    """Migrations 0018 and 0023: no foreign key of traces_block points at traces_block or
    traces_trace (nor is there the unique (trace_id, id) index the composite one needed);
    six deferred constraint triggers hold the rules, and the index that finds children
    stays."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'traces_block'::regclass "
            "AND (contype = 'f' AND confrelid IN ('traces_block'::regclass, "
            "'traces_trace'::regclass) OR conname = 'block_trace_id_id_unique')"
        )
        keys = cursor.fetchall()
        cursor.execute(
            "SELECT tgrelid::regclass::text, tgname, tgdeferrable, tginitdeferred "
            "FROM pg_trigger WHERE tgname LIKE 'block_parent%%' OR tgname LIKE 'block_trace%%'"
        )
        triggers = sorted(cursor.fetchall())
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'traces_block' "
            "AND indexdef LIKE '%%(parent_block_id)'"
        )
        indexes = [row[0] for row in cursor.fetchall()]
    assert keys == []
    assert triggers == [
        ("traces_block", "block_parent_same_trace_delete", True, True),
        ("traces_block", "block_parent_same_trace_insert", True, True),
        ("traces_block", "block_parent_same_trace_move", True, True),
        ("traces_block", "block_trace_exists_insert", True, True),
        ("traces_trace", "block_trace_exists_delete", True, True),
        ("traces_trace", "block_trace_exists_move", True, True),
    ]
    assert len(indexes) == 1


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresql_key_checks_find_a_block_by_its_id_alone_and_children_by_their_parent():
    """Migration 0024: a check's lookup names one key column, so that no plan its session
    keeps can walk the trace's index instead (planned before any statistics, `id = ... AND
    trace_id = ...` walked every block of the trace for each block checked)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE proname IN ("
            "'traces_block_parent_check', 'traces_block_children_check', "
            "'traces_block_trace_check')"
        )
        sources = dict(cursor.fetchall())
    assert len(sources) == 3
    for name, source in sources.items():
        lookups = re.findall(r"FROM traces_block \w+ WHERE ([^;]*?)(?:;|\s+FOR |\s+LOOP)", source)
        assert lookups, name
        for where in lookups:
            assert " AND " not in where, (name, where)


def checked(fn):
    """`fn`, then the deferred rules checked at once, as the commit would."""

    def run():
        fn()
        transaction.get_connection().check_constraints()

    return run


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_move_a_child_to_another_trace(trace, org):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    think = make(trace, "THINK", "ACT", {"text": "x"}, message)
    other = Trace.objects.create(organization=org)
    with pytest.raises(IntegrityError, match="block_parent_same_trace"), transaction.atomic():
        checked(lambda: Block.objects.filter(pk=think.pk).update(trace=other))()
    assert Block.objects.get(pk=think.pk).trace_id == trace.pk


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_give_a_child_a_parent_in_another_trace(trace, org):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    think = make(trace, "THINK", "ACT", {"text": "x"}, message)
    other = Trace.objects.create(organization=org)
    elsewhere = make(other, "MESSAGE", "MESSAGE", {})
    refused(checked(lambda: Block.objects.filter(pk=think.pk).update(parent=elsewhere)))
    assert Block.objects.get(pk=think.pk).parent_id == message.pk


@pytest.mark.postgres  # SQLite's triggers check a moved block's own parent only
@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_move_a_parent_away_from_its_children(trace, org):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    make(trace, "THINK", "ACT", {"text": "x"}, message)
    other = Trace.objects.create(organization=org)
    refused(checked(lambda: Block.objects.filter(pk=message.pk).update(trace=other)))
    assert Block.objects.get(pk=message.pk).trace_id == trace.pk


@pytest.mark.postgres  # SQLite's trigger checks each row as it is inserted
@pytest.mark.django_db(transaction=True)
def test_the_database_takes_a_child_written_before_its_parent_in_one_transaction(trace):
    """The rule is checked at the commit (deferred), as the key was."""
    now = timezone.now()
    message = Block(
        trace=trace, block_type="MESSAGE", sub_type="MESSAGE", payload={},
        created_at=now, updated_at=now,
    )  # fmt: skip
    with transaction.atomic():
        make(trace, "THINK", "ACT", {"text": "x"}, message)  # its parent not there yet
        message.save(force_insert=True)
    assert trace.blocks.count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_database_lets_a_parent_go_with_its_children(trace):
    message = make(trace, "MESSAGE", "MESSAGE", {})
    think = make(trace, "THINK", "ACT", {"text": "x"}, message)
    with transaction.atomic():  # the parent first: the children are gone by the commit
        Block.objects.filter(pk=message.pk)._raw_delete(Block.objects.db)
        Block.objects.filter(pk=think.pk)._raw_delete(Block.objects.db)
    assert not trace.blocks.exists()


def test_json_text_fields_keep_key_order_and_nul(trace):
    payload = {"z": "\u0000", "a": [1, {"y": 2, "b": 3}]}
    block = make(trace, "MESSAGE", "MESSAGE", payload)
    assert list(Block.objects.get(pk=block.pk).payload) == ["z", "a"]
    assert Block.objects.get(pk=block.pk).payload == payload


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_a_block_of_no_trace(trace):
    with pytest.raises(IntegrityError), transaction.atomic():
        now = timezone.now()
        Block.objects.create(
            trace_id="tr_NOSUCHTRACE", block_type="MESSAGE", sub_type="MESSAGE", payload={},
            created_at=now, updated_at=now,
        )  # fmt: skip
        transaction.get_connection().check_constraints()
    assert not Block.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_delete_a_trace_that_keeps_blocks(trace):
    make(trace, "MESSAGE", "MESSAGE", {})
    SearchPending.objects.filter(trace=trace).delete()  # its key would refuse first
    refused(checked(lambda: Trace.objects.filter(pk=trace.pk)._raw_delete(Trace.objects.db)))
    assert Trace.objects.filter(pk=trace.pk).exists()


@pytest.mark.postgres  # SQLite's key of a block's trace is not on its id's updates
@pytest.mark.django_db(transaction=True)
def test_the_database_refuses_to_give_a_trace_with_blocks_another_id(trace):
    make(trace, "MESSAGE", "MESSAGE", {})
    SearchPending.objects.filter(trace=trace).delete()  # its key would refuse first
    with pytest.raises(IntegrityError, match="block_trace_exists"), transaction.atomic():
        checked(lambda: Trace.objects.filter(pk=trace.pk).update(id="tr_ELSEWHERE"))()
    assert Trace.objects.filter(pk=trace.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_the_database_lets_a_trace_go_with_its_blocks(trace):
    make(trace, "MESSAGE", "MESSAGE", {})
    with transaction.atomic():  # the trace first: its blocks are gone by the commit
        Trace.objects.filter(pk=trace.pk)._raw_delete(Trace.objects.db)
        Block.objects.filter(trace_id=trace.pk)._raw_delete(Block.objects.db)
    assert not Trace.objects.filter(pk=trace.pk).exists()
