"""The trace page's render cache (Block.rendered): written by the page that first shows
a block, read by the pages after it (explorer/trace_page.py says what it holds)."""

import contextlib
import logging

from django.db import DatabaseError, connection, transaction

from traces.models import Block, Trace

logger = logging.getLogger(__name__)

# A page writes its cache only if it gets its rows at once: a reader never waits on an
# import (SQLite's write lock) or on a block being written (a row lock). Milliseconds.
LOCK_WAIT_MS = 100


@contextlib.contextmanager
def _short_lock_wait(cursor):
    """Lock waits of at most LOCK_WAIT_MS for what runs inside (a transaction on
    PostgreSQL, whose setting it restores after; on SQLite, around the transaction)."""
    if connection.vendor == "postgresql":
        cursor.execute("SELECT current_setting('lock_timeout')")
        before = cursor.fetchone()[0]
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
        try:
            yield
        finally:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])
    elif connection.vendor == "sqlite":
        cursor.execute("PRAGMA busy_timeout")
        before = cursor.fetchone()[0]
        cursor.execute(f"PRAGMA busy_timeout = {LOCK_WAIT_MS}")
        try:
            yield
        finally:
            cursor.execute(f"PRAGMA busy_timeout = {int(before)}")
    else:
        yield


def block_renders_save(*, trace: Trace, renders: list[tuple[str, str]]) -> bool:
    """Store each (block id, rendered text) of `trace`'s blocks in Block.rendered, in one
    statement a block and one transaction; False, and nothing written, when the rows were
    not to be had at once (a concurrent write holds them: the next page fills them)."""
    if not renders:
        return True
    qn = connection.ops.quote_name
    sql = (
        f"UPDATE {qn(Block._meta.db_table)} SET {qn('rendered')} = %s "
        f"WHERE {qn('id')} = %s AND {qn('trace_id')} = %s"
    )
    params = [(text, block_id, trace.pk) for block_id, text in renders]
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":  # BEGIN takes the write lock: wait briefly
                with _short_lock_wait(cursor), transaction.atomic():
                    cursor.executemany(sql, params)
            else:  # the row locks are taken inside the transaction
                with transaction.atomic(), _short_lock_wait(cursor):
                    cursor.executemany(sql, params)
    except DatabaseError as exc:
        logger.info("render cache of trace %s not written: %s", trace.pk, exc)
        return False
    return True
