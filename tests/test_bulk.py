"""traces/bulk.py: `parents_made_in_trace` lifts SQLite's parent check only for the
transaction of a trusted bulk write, and it is back however that transaction ends."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from tests.conftest import as_file
from traces.bulk import parents_made_in_trace
from traces.models import Block, Dataset, Trace
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = (
    b'{"messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", '
    b'"content": "", "tool_calls": [{"id": "c1", "function": {"name": "w", "arguments": '
    b'"{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "rain"}]}\n'
)


def trigger_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {name for (name,) in cursor.fetchall()}


def parent_in_other_trace(org) -> Block:
    """A block whose parent is a MESSAGE of another trace (the trigger refuses it)."""
    dataset = Dataset.objects.create(organization=org, name="two")
    now = timezone.now()
    one, two = (Trace.objects.create(organization=org, dataset=dataset, index=n) for n in (0, 1))
    message = Block.objects.create(
        trace=one, block_type="MESSAGE", sub_type="MESSAGE",
        payload={"role": "user", "content": "hi"}, created_at=now, updated_at=now,
    )  # fmt: skip
    return Block(
        trace=two, block_type="ACT", sub_type="THINK", parent=message,
        payload={"text": "hmm"}, created_at=now, updated_at=now,
    )  # fmt: skip


sqlite_only = pytest.mark.skipif(
    "connection.vendor != 'sqlite'", reason="the parent check is a trigger on SQLite only"
)


@sqlite_only
def test_an_import_puts_the_parent_trigger_back_and_it_still_refuses(org):
    before = trigger_names()
    assert "block_parent_same_trace_insert" in before
    result = trace_import(organization=org, dataset_name="d", files=[as_file(CHAT, "a.jsonl")])
    assert result.blocks == 4  # two messages, the call, its result
    assert trigger_names() == before
    call = Block.objects.get(sub_type="TOOL_CALL")
    assert Block.objects.get(sub_type="TOOL_RESULT").parent_id == call.pk
    with pytest.raises(IntegrityError, match="parent must be in the same trace"):
        parent_in_other_trace(org).save()


@sqlite_only
def test_a_rolled_back_write_leaves_the_trigger_in_place(org):
    before = trigger_names()
    with pytest.raises(RuntimeError, match="boom"), transaction.atomic():
        with parents_made_in_trace():
            assert "block_parent_same_trace_insert" not in trigger_names()
            raise RuntimeError("boom")
    assert trigger_names() == before


@sqlite_only
def test_the_trigger_is_back_before_the_transaction_ends(org):
    with transaction.atomic():
        with parents_made_in_trace():
            pass
        assert "block_parent_same_trace_insert" in trigger_names()
        with pytest.raises(IntegrityError), transaction.atomic():
            parent_in_other_trace(org).save()


@sqlite_only
def test_outside_a_transaction_it_refuses_to_lift_the_trigger():
    with pytest.raises(RuntimeError, match="needs a transaction"):
        with parents_made_in_trace():
            pass
    assert "block_parent_same_trace_insert" in trigger_names()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_migrate_puts_back_the_triggers_a_migration_forgot(org):
    """A migration that rebuilds traces_block on SQLite drops the parent triggers, and
    `makemigrations` does not know to put them back: after any migrate they are (post_migrate,
    traces/apps.py)."""
    from django.core.management import call_command

    before = trigger_names()
    parent_checks = {name for name in before if name.startswith("block_parent_same_trace")}
    assert len(parent_checks) == 2
    with connection.cursor() as cursor:  # what a forgetful table rebuild leaves
        for name in parent_checks:
            cursor.execute(f"DROP TRIGGER {name}")
    assert not trigger_names() & parent_checks
    call_command("migrate", verbosity=0)  # nothing to migrate: post_migrate still runs
    assert trigger_names() == before
    with pytest.raises(IntegrityError, match="parent must be in the same trace"):
        parent_in_other_trace(org).save()
