"""traces/services/block_renders.py: the trace page's render cache is written for the
blocks of the trace it names, and never makes a page wait on another write (SQLite's
write lock, PostgreSQL's row locks)."""

import time

import psycopg
import pytest
from django.db import connection

from tests.explorer.conftest import import_traces
from tests.sqlite_lock import sqlite_only, write_lock_held_elsewhere
from traces.models import Block
from traces.services.block_renders import block_renders_save


def _two_traces(org):
    return import_traces(org, "renders", [
        [{"role": "user", "content": "first"}],
        [{"role": "user", "content": "second"}],
    ])  # fmt: skip


@pytest.mark.django_db
def test_it_writes_the_blocks_of_its_trace_only(org):
    first, second = _two_traces(org)
    mine = Block.objects.get(trace=first)
    theirs = Block.objects.get(trace=second)
    done = block_renders_save(trace=first, renders=[(mine.pk, "v1"), (theirs.pk, "v1")])
    assert done
    assert Block.objects.get(pk=mine.pk).rendered == "v1"
    assert Block.objects.get(pk=theirs.pk).rendered is None


@pytest.mark.django_db
def test_nothing_to_write_writes_nothing(org, django_assert_num_queries):
    first, _ = _two_traces(org)
    with django_assert_num_queries(0):
        assert block_renders_save(trace=first, renders=[])


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_while_another_connection_writes_it_gives_up_at_once_and_writes_nothing(org):
    first, _ = _two_traces(org)
    block = Block.objects.get(trace=first)
    with write_lock_held_elsewhere():
        started = time.monotonic()
        done = block_renders_save(trace=first, renders=[(block.pk, "v1")])
        waited = time.monotonic() - started
    assert not done
    assert waited < 1.0  # the connection's own busy timeout is 30 s
    assert Block.objects.get(pk=block.pk).rendered is None
    # ... and the connection waits as long as before for its other writes.
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == 30_000


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_while_another_transaction_holds_the_row_it_gives_up_at_once_and_writes_nothing(org):
    first, _ = _two_traces(org)
    block = Block.objects.get(trace=first)
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"] or None,
        host=settings["HOST"], port=settings["PORT"] or None,
    )  # fmt: skip
    try:
        other.execute("SELECT 1 FROM traces_block WHERE id = %s FOR UPDATE", [block.pk])
        started = time.monotonic()
        done = block_renders_save(trace=first, renders=[(block.pk, "v1")])
        waited = time.monotonic() - started
    finally:
        other.rollback()
        other.close()
    assert not done
    assert waited < 1.0
    assert Block.objects.get(pk=block.pk).rendered is None
    with connection.cursor() as cursor:  # the connection's own setting is as it was
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "0"
