"""PostgreSQL's deferred key checks (migrations 0023, 0024) against two transactions at
once: a parent moved to another trace while a child is written under it. Each check
alone saw the other's write as not yet there, and both passed (attacker review)."""

import threading

import psycopg
import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.utils import timezone

from tests.threads import until_one_waits_for_a_lock
from traces.models import Block, Trace

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def block(trace, sub_type, block_type, payload, parent=None) -> Block:
    now = timezone.now()
    return Block.objects.create(
        trace=trace, sub_type=sub_type, block_type=block_type, payload=payload, parent=parent,
        created_at=now, updated_at=now,
    )  # fmt: skip


def other_session() -> psycopg.Connection:
    """A second session on the test database, outside Django."""
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"] or None,
        port=settings["PORT"] or None, password=settings["PASSWORD"] or None,
    )  # fmt: skip


@pytest.fixture
def two_traces(org):
    here = Trace.objects.create(organization=org)
    there = Trace.objects.create(organization=org)
    parent = block(here, "MESSAGE", "MESSAGE", {"role": "assistant", "content": "p"})
    return here, there, parent


def test_a_parent_moved_after_a_child_was_checked_under_it_is_refused(two_traces):
    here, there, parent = two_traces
    outcome: dict[str, object] = {}
    mover = other_session()

    def move() -> None:
        try:
            mover.execute(
                "UPDATE traces_block SET trace_id = %s WHERE id = %s", [there.pk, parent.pk]
            )
            mover.commit()  # its check waits for the child's transaction
            outcome["move"] = "committed"
        except psycopg.Error as exc:
            outcome["move"] = exc
            mover.rollback()

    with transaction.atomic():
        block(here, "THINK", "ACT", {"text": "x"}, parent)
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the child's check, now
        thread = threading.Thread(target=move)
        thread.start()
        waited = until_one_waits_for_a_lock(10)
    thread.join(30)
    mover.close()
    assert waited
    assert isinstance(outcome["move"], psycopg.errors.ForeignKeyViolation)
    assert "block_parent_same_trace" in str(outcome["move"])
    assert Block.objects.get(pk=parent.pk).trace_id == here.pk
    assert Block.objects.filter(trace=here, parent=parent).count() == 1


def test_a_child_written_under_a_parent_being_moved_is_refused(two_traces):
    here, there, parent = two_traces
    outcome: dict[str, object] = {}
    mover = other_session()
    mover.execute("UPDATE traces_block SET trace_id = %s WHERE id = %s", [there.pk, parent.pk])
    mover.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the move's check, now: no children yet

    def write_child() -> None:
        try:
            with transaction.atomic():
                block(here, "THINK", "ACT", {"text": "x"}, parent)
            outcome["child"] = "committed"
        except IntegrityError as exc:
            outcome["child"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=write_child)
    thread.start()
    waited = until_one_waits_for_a_lock(10)
    mover.commit()
    mover.close()
    thread.join(30)
    assert waited
    assert isinstance(outcome["child"], IntegrityError)
    assert "block_parent_same_trace" in str(outcome["child"])
    assert Block.objects.get(pk=parent.pk).trace_id == there.pk
    assert not Block.objects.filter(parent=parent).exists()
