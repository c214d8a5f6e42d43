"""traces/bulk.py: `blocks_made_here` lifts the parent check (SQLite's trigger,
PostgreSQL's deferred one) only for the rows of a trusted bulk write, and it is back
however that write ends."""

import orjson
import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from benchmarks.realruns import DEFAULT_DATA
from tests.conftest import as_file
from tests.services.test_deletion import png_url
from traces.bulk import blocks_made_here, keys_made_here
from traces.models import Annotation, Block, Dataset, Trace, TraceImage
from traces.search_queue import search_queued_here
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


postgres_only = pytest.mark.postgres

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
        with blocks_made_here():
            assert "block_parent_same_trace_insert" not in trigger_names()
            raise RuntimeError("boom")
    assert trigger_names() == before


@sqlite_only
def test_the_trigger_is_back_before_the_transaction_ends(org):
    with transaction.atomic():
        with blocks_made_here():
            pass
        assert "block_parent_same_trace_insert" in trigger_names()
        with pytest.raises(IntegrityError), transaction.atomic():
            parent_in_other_trace(org).save()


@sqlite_only
def test_outside_a_transaction_it_refuses_to_lift_the_trigger():
    with pytest.raises(RuntimeError, match="needs a transaction"):
        with blocks_made_here():
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


@postgres_only
def test_on_postgresql_an_import_leaves_the_parent_check_on_for_later_rows(org):
    result = trace_import(organization=org, dataset_name="d", files=[as_file(CHAT, "a.jsonl")])
    assert result.blocks == 4
    with pytest.raises(IntegrityError, match="parent must be in the same trace"):
        with transaction.atomic():
            parent_in_other_trace(org).save()
    assert not Block.objects.filter(trace__dataset__name="two").exclude(sub_type="MESSAGE")


@postgres_only
def test_on_postgresql_only_the_rows_inside_are_not_checked(org):
    """Inside, a row is taken as the caller made it (even a wrong one: the caller's
    promise); the same transaction's rows after it are checked at its commit."""
    with transaction.atomic():
        with blocks_made_here():
            trusted = parent_in_other_trace(org)
            trusted.save()
        transaction.get_connection().check_constraints()  # nothing queued for it
        assert Block.objects.filter(pk=trusted.pk).exists()
        with pytest.raises(IntegrityError, match="parent must be in the same trace"):
            with transaction.atomic():
                Block.objects.create(
                    trace=trusted.trace, block_type="ACT", sub_type="THINK",
                    parent=trusted.parent, payload={}, created_at=trusted.created_at,
                    updated_at=trusted.created_at,
                )  # fmt: skip
                transaction.get_connection().check_constraints()


@postgres_only
def test_on_postgresql_a_rolled_back_write_leaves_the_check_on(org):
    with transaction.atomic():
        with pytest.raises(RuntimeError, match="boom"), transaction.atomic():
            with blocks_made_here():
                raise RuntimeError("boom")
        with pytest.raises(IntegrityError, match="parent must be in the same trace"):
            with transaction.atomic():
                parent_in_other_trace(org).save()
                transaction.get_connection().check_constraints()


@postgres_only
def test_on_postgresql_outside_a_transaction_it_refuses_to_lift_the_check():
    with pytest.raises(RuntimeError, match="needs a transaction"):
        with blocks_made_here():
            pass


def foreign_keys_on() -> bool:
    with connection.cursor() as cursor:
        return bool(cursor.execute("PRAGMA foreign_keys").fetchone()[0])


def dangling_keys() -> list:
    with connection.cursor() as cursor:
        return cursor.execute("PRAGMA foreign_key_check").fetchall()


@sqlite_only
def test_keys_made_here_turns_the_lookups_off_for_its_transaction_only(org):
    assert foreign_keys_on()
    with keys_made_here():
        assert not foreign_keys_on()
        with transaction.atomic():
            assert not foreign_keys_on()
    assert foreign_keys_on()
    with pytest.raises(IntegrityError):  # the keys are checked again after it
        with transaction.atomic():
            Trace.objects.create(organization=org, dataset_id="ds_NOSUCHDATASET")


@sqlite_only
def test_keys_made_here_puts_the_lookups_back_after_a_failed_transaction():
    with pytest.raises(RuntimeError, match="boom"), keys_made_here(), transaction.atomic():
        raise RuntimeError("boom")
    assert foreign_keys_on()


@sqlite_only
def test_inside_a_transaction_keys_made_here_changes_nothing():
    with transaction.atomic(), keys_made_here():
        assert foreign_keys_on()


@sqlite_only
def test_an_import_without_the_lookups_leaves_no_key_dangling(org):
    """Every row an import writes (traces, blocks, notes, images and their links) points
    at rows that are there, as the keys would have made sure."""
    sample = (DEFAULT_DATA / "invariant-explorer" / "sample_data.jsonl").read_bytes()
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": png_url(1)}}]}
    pictured = orjson.dumps({"messages": [image, {"role": "assistant", "content": "a cat"}]})
    files = [
        as_file(CHAT, "a.jsonl"), as_file(sample, "sample.jsonl"),
        as_file(pictured + b"\n", "image.jsonl"),
    ]  # fmt: skip
    result = trace_import(organization=org, dataset_name="d", files=files)
    assert result.blocks > 4 and result.images >= 1 and foreign_keys_on()
    assert Annotation.objects.filter(block__isnull=False).exists()
    assert TraceImage.objects.exists()
    assert dangling_keys() == []


@postgres_only
def test_on_postgresql_the_trace_check_is_lifted_inside_and_back_after(org):
    now = timezone.now()

    def orphan() -> Block:
        return Block.objects.create(
            trace_id="tr_NOSUCHTRACE", block_type="MESSAGE", sub_type="MESSAGE",
            payload={}, created_at=now, updated_at=now,
        )  # fmt: skip

    # Its trace is not queued for search (whose queue has a key of its own).
    with pytest.raises(IntegrityError, match="block_trace_exists"), transaction.atomic():
        with search_queued_here():
            with blocks_made_here():
                orphan()
            transaction.get_connection().check_constraints()  # nothing queued for it
            orphan()
    assert not Block.objects.exists()


@postgres_only
def test_on_postgresql_a_value_set_for_the_session_lifts_nothing(org):
    """Only the transaction whose id the setting holds is trusted: not a session's SET
    (nor a role's or database's default, a pooler's leftover)."""
    with connection.cursor() as cursor:
        cursor.execute("SET traces.blocks_made_here = 'on'")
    try:
        with pytest.raises(IntegrityError, match="parent must be in the same trace"):
            with transaction.atomic():
                parent_in_other_trace(org).save()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET traces.blocks_made_here")


@postgres_only
def test_on_postgresql_the_lift_ends_with_its_block_even_when_it_raises(org):
    with transaction.atomic():
        with pytest.raises(RuntimeError, match="boom"), blocks_made_here():
            raise RuntimeError("boom")  # caught in the same transaction, no savepoint
        with pytest.raises(IntegrityError, match="parent must be in the same trace"):
            with transaction.atomic():
                parent_in_other_trace(org).save()
                transaction.get_connection().check_constraints()


@postgres_only
def test_on_postgresql_search_queued_here_ends_with_its_block_even_when_it_raises(org):
    """The same end as the key checks' lift (traces.bulk.setting_clear): a block that
    raises, caught in the same transaction, leaves the trigger queueing again."""
    with transaction.atomic():
        with pytest.raises(RuntimeError, match="boom"), search_queued_here():
            raise RuntimeError("boom")
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('traces.search_queued_here', true)")
            assert cursor.fetchone()[0] != "on"
