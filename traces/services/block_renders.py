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


# Per database: how to read the connection's lock wait, set it to LOCK_WAIT_MS, and set
# it back to what was read. PostgreSQL's is set for the transaction it runs in (LOCAL).
_LOCK_WAIT_SQL = {
    "postgresql": (
        "SELECT current_setting('lock_timeout')",
        f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'",
        lambda before: ("SELECT set_config('lock_timeout', %s, true)", [before]),
    ),
    "sqlite": (
        "PRAGMA busy_timeout",
        f"PRAGMA busy_timeout = {LOCK_WAIT_MS}",
        lambda before: (f"PRAGMA busy_timeout = {int(before)}", []),
    ),
}


@contextlib.contextmanager
def _short_lock_wait(cursor):
    """Lock waits of at most LOCK_WAIT_MS for what runs inside (a transaction on
    PostgreSQL; on SQLite, around the transaction, whose BEGIN takes the write lock)."""
    found = _LOCK_WAIT_SQL.get(connection.vendor)
    if found is None:
        yield
        return
    read, shorten, restore = found
    cursor.execute(read)
    before = cursor.fetchone()[0]
    cursor.execute(shorten)
    try:
        yield
    finally:
        cursor.execute(*restore(before))


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
