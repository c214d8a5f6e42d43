"""The fastest way each database has to insert many rows: COPY on PostgreSQL,
one `executemany` on SQLite. Callers pass rows already adapted for the database."""

import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connection

from traces.migrations._parent_same_trace import SQLITE_INSERT_TRIGGER, SQLITE_INSERT_UP

# The columns of the two tables that bulk writes fill, in the order of their rows.
BLOCK_COLUMNS = (
    "id", "trace_id", "block_type", "sub_type", "parent_block_id", "payload", "metadata",
    "raw", "extra", "call_id", "result_seq", "created_at", "updated_at",
)  # fmt: skip
# What the application adds to them (traces/order.py): a block's place in the stitched
# order and its number, a trace's counts per kind. Columns a bulk write leaves out take
# their database defaults (no place: the block reads as an orphan).
PLACE_COLUMNS = ("turn", "act", "step", "number")
TRACE_COUNT_COLUMNS = ("block_counts",)
TRACE_COLUMNS = (
    "id", "organization_id", "dataset_id", "index", "name", "metadata", "extra", "reward",
    "block_count", "created_at", "updated_at",
)  # fmt: skip


def insert_rows(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """`rows` may be an iterator: it is consumed once, never held whole."""
    if isinstance(rows, Sequence) and not rows:
        return
    qn = connection.ops.quote_name
    cols = ", ".join(qn(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and isinstance(rows, Sequence) and len(rows) == 1:
            # One row (a one-block append): an INSERT is one round trip, COPY two.
            marks = ", ".join(["%s"] * len(columns))
            cursor.execute(f"INSERT INTO {qn(table)} ({cols}) VALUES ({marks})", rows[0])
        elif connection.vendor == "postgresql":
            # COPY goes around Django's cursor: its errors are mapped here (IntegrityError...).
            with connection.wrap_database_errors:
                with cursor.cursor.copy(f"COPY {qn(table)} ({cols}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
        else:
            # sqlite3's own executemany, which takes one row at a time: Django's wrapper
            # tees the rows to peek at the first, and so holds every one of them.
            marks = ", ".join(["?"] * len(columns))
            with connection.wrap_database_errors:
                sqlite3.Cursor.executemany(
                    cursor.cursor, f"INSERT INTO {qn(table)} ({cols}) VALUES ({marks})", rows
                )


def new_uuid():
    """A new UUID as a raw insert gives it to the database (the `uuid` of a dataset, trace
    or annotation: Invariant Explorer's id): SQLite keeps its 32 hex digits."""
    value = uuid.uuid4()
    return value if connection.features.has_native_uuid_field else value.hex


# The transaction's setting the WHEN of PostgreSQL's key triggers reads (migration 0023).
BLOCKS_MADE_HERE = "traces.blocks_made_here"


@contextmanager
def blocks_made_here() -> Iterator[None]:
    """For blocks whose every trace and parent id the caller made itself, from the traces
    it writes and from blocks of the same trace (an import: traces/services/imports.py):
    the per-row checks of those keys are lifted for their insert and are back before the
    transaction ends (a rollback puts them back too). Must run inside a transaction
    (atomic).

    - SQLite: the trigger that checks the parent's trace (migration 0002) is dropped and
      made again. Fired once a row, it cost more than every index of the table together
      (an import of 157,000 blocks: 3.6 s of CPU of 6 s for the insert). SQLite runs one
      write transaction at a time and DDL is part of it: no other write can come in while
      the trigger is away. Its foreign keys' lookups: see `keys_made_here`.
    - PostgreSQL: the transaction's setting that the deferred triggers' WHEN reads
      (migration 0023), the transaction's own id, makes them skip these rows: none of
      their checks is queued for the commit (1.9 s of a 100 MB import's). Other
      transactions' rows are checked as ever, and so are this one's after it.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("blocks_made_here needs a transaction")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The transaction's own id: the triggers compare it with theirs (a value set
            # for a whole session or role lifts nothing).
            cursor.execute(
                "SELECT set_config(%s, pg_current_xact_id()::text, true)", [BLOCKS_MADE_HERE]
            )
            try:
                yield
            finally:
                setting_clear(cursor, BLOCKS_MADE_HERE)
            return
        cursor.execute(f"DROP TRIGGER IF EXISTS {SQLITE_INSERT_TRIGGER}")
        try:
            yield
        finally:  # also for a caller that catches the error in a savepoint
            cursor.execute(SQLITE_INSERT_UP)


def setting_clear(cursor: Any, setting: str) -> None:
    """Clear a transaction's setting (the end of a block that set it: here, and
    traces/search_queue.py's). After a database error the transaction is aborted
    and refuses every statement (the error raised is the first one's); its rollback, or
    the savepoint's, clears the setting then."""
    try:
        cursor.execute("SELECT set_config(%s, '', true)", [setting])
    except DatabaseError:
        pass


@contextmanager
def keys_made_here() -> Iterator[None]:
    """Around a transaction (an import: traces/services/imports.py) whose every reference
    the caller made itself: ids of rows it writes in the same transaction, or of rows it
    read under the write lock (SQLite's transactions here are IMMEDIATE: nothing else
    writes meanwhile). SQLite looks up the parent row of each foreign key of each row
    inserted (a block's trace and its parent block: 0.6-0.9 s of the 2.6 s that a 100 MB
    import's 157,502 blocks take to insert); those lookups are off for this transaction,
    for this connection only, and on again after it, however it ends. SQLite takes the
    setting only between transactions: inside an outer one (atomic), nothing changes and
    every key is checked as ever. PostgreSQL: nothing changes (its keys stay)."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA foreign_keys = ON")


def adapt_datetime(value):
    """A datetime as the database column takes it from a raw query."""
    if connection.vendor == "postgresql":
        return value
    return connection.ops.adapt_datetimefield_value(value)
