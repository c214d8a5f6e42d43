"""The search worker's work (PostgreSQL): the text vectors of the blocks of the traces
written since it last ran (SearchPending, queued by triggers on traces_block, migration
0019), stored in BlockSearch under its GIN index. Built after the rows, off the import's
path; search reads a pending trace's payloads directly meanwhile (traces/selectors/search.py).
"""

from django.db import connection, transaction

from traces import kinds
from traces.models import Block, BlockSearch, SearchPending
from traces.selectors.search import pg_document_sql

SEARCH_INDEX = "block_search_document"  # migration 0019

# Traces a transaction: a batch of a big import's traces commits in about a second.
BATCH = 50


def search_index_build(*, limit: int) -> int:
    """Index up to `limit` pending traces, in one transaction; how many it took (0: the
    queue is empty, or every trace in it is locked by another worker or a writer).

    FOR UPDATE SKIP LOCKED: two workers never take the same trace, and a trace whose
    writer has not committed yet (its trigger holds the queue row) waits for a later
    batch, which reads its blocks once they are all there."""
    if connection.vendor != "postgresql":
        return 0
    pending, search, block = (
        model._meta.db_table for model in (SearchPending, BlockSearch, Block)
    )  # fmt: skip
    searched = list(kinds.searched_sub_types())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"SELECT trace_id FROM {pending} ORDER BY queued_at LIMIT %s FOR UPDATE SKIP LOCKED",
            [limit],
        )
        trace_ids = [row[0] for row in cursor.fetchall()]
        if not trace_ids:
            return 0
        # The statements below start after the rows are locked: they read every block
        # committed by then (READ COMMITTED takes a snapshot per statement).
        cursor.execute(f"DELETE FROM {search} WHERE trace_id = ANY(%s)", [trace_ids])
        cursor.execute(
            f"INSERT INTO {search} (block_id, trace_id, document) "
            f"SELECT id, trace_id, {pg_document_sql('payload')} FROM {block} "
            "WHERE trace_id = ANY(%s) AND sub_type = ANY(%s)",
            [trace_ids, searched],
        )
        cursor.execute(f"DELETE FROM {pending} WHERE trace_id = ANY(%s)", [trace_ids])
        # The GIN index's pending list into the index itself: a search would read it
        # through, and the planner, counting on that, passed the index by.
        cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [SEARCH_INDEX])
    return len(trace_ids)


def search_index_drain(*, batch: int = BATCH) -> int:
    """Index every queued trace, `batch` a transaction (what `search_worker --once` does
    while no writer adds more); how many."""
    total = 0
    while done := search_index_build(limit=batch):
        total += done
    if total:
        search_queue_emptied()
    return total


def search_queue_emptied() -> None:
    """Once the worker has emptied the queue, its statistics are made to say so (ANALYZE
    of the queue, a small table). Until autovacuum did, they still counted the traces of
    the last big import as queued, and search, planning its read of the queued traces'
    blocks from them, read every block instead of the queue's none: 2.5 s a search at a
    million blocks (benchmark ui)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {SearchPending._meta.db_table}")
