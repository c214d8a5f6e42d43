"""Queueing traces for the search worker (PostgreSQL; traces/services/search_index.py).

A trigger on traces_block queues the trace of every block inserted, one row at a time
(migration 0020), so that every way of writing blocks is covered. A bulk writer (an
import, a batch of blocks) queues its traces itself in one statement instead, inside
`search_queued_here`: the trigger then skips its rows. The statement-level trigger this
replaced read every inserted row into a transition table first, payloads included:
0.65 s of a 100 MB import's 4.5 s of COPY.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from traces.bulk import setting_clear

# The transaction's setting the trigger's WHEN reads (migration 0020).
QUEUED_HERE = "traces.search_queued_here"

# One upsert for every queued trace. The row stays locked until the writer commits
# (also when the WHERE leaves it as it is), so the worker (FOR UPDATE SKIP LOCKED) indexes
# the trace only once every block of the writer is there; queued_at moves on only for a
# row queued before this transaction began, so that repeated queueing in one transaction
# writes no new row version each time.
UPSERT = """
    INSERT INTO traces_search_pending (trace_id, queued_at) {rows}
    ON CONFLICT (trace_id) DO UPDATE SET queued_at = EXCLUDED.queued_at
    WHERE traces_search_pending.queued_at < now()
"""


@contextmanager
def search_queued_here() -> Iterator[None]:
    """Blocks inserted inside are not queued by the trigger: the caller queues their
    traces (`search_queue_traces`) in the same transaction. Must run inside one. If the
    block raises, the transaction (or savepoint) is rolled back, the setting with it."""
    if connection.vendor != "postgresql":
        yield
        return
    if not connection.in_atomic_block:
        raise RuntimeError("search_queued_here needs a transaction")
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, 'on', true)", [QUEUED_HERE])
        try:
            yield
        finally:  # also when the block raises and its caller goes on in the transaction
            setting_clear(cursor, QUEUED_HERE)


def search_queue_traces(*, trace_ids: list[str]) -> None:
    """Queue these traces for the worker, in the current transaction."""
    if connection.vendor != "postgresql" or not trace_ids:
        return
    sql = UPSERT.format(rows="SELECT unnest(%s::varchar[]), clock_timestamp()")
    with connection.cursor() as cursor:
        cursor.execute(sql, [trace_ids])


def search_queue_dataset_from(*, dataset_id: str, first_index: int) -> None:
    """Queue the traces of the dataset from `first_index` on (those an import wrote)."""
    if connection.vendor != "postgresql":
        return
    sql = UPSERT.format(
        rows="SELECT id, clock_timestamp() FROM traces_trace WHERE dataset_id = %s AND index >= %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset_id, first_index])
