"""The fastest way each database has to insert many rows: COPY on PostgreSQL,
one `executemany` on SQLite. Callers pass rows already adapted for the database."""

import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection

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
        if connection.vendor == "postgresql":
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


def adapt_datetime(value):
    """A datetime as the database column takes it from a raw query."""
    if connection.vendor == "postgresql":
        return value
    return connection.ops.adapt_datetimefield_value(value)
