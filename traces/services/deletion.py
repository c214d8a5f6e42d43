"""Deleting datasets and traces with set-based statements.

Django's cascade would load the id of every block first (blocks point at blocks);
a dataset of millions of blocks would hang. The parent keys are deferred, so
blocks can go in one statement; their labels and comments go first. An image goes
with the last trace linked to it.
"""

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet

from traces.models import (
    Annotation,
    Block,
    Dataset,
    Image,
    OtelSpan,
    SearchPending,
    Trace,
    TraceEvent,
    TraceImage,
)


def _delete_images_only_they_use(traces: QuerySet[Trace]) -> None:
    """The images linked to `traces` and to no other trace. Runs before the links go, and
    asks for links to *other* traces, so that it needs no list of ids in Python.

    The images are locked first (FOR UPDATE, in ascending id order, as imports hold
    them): an import that is linking one of them holds it until its commit, so the
    delete waits, and the statement that follows (a new snapshot) sees the import's
    link and keeps the image. Without the lock, an upload racing the delete linked a
    deleted image and failed at its commit (harden F5)."""
    doomed = traces.values("id")
    linked = Image.objects.filter(
        pk__in=TraceImage.objects.filter(trace__in=doomed).values("image_id")
    )
    if connection.vendor == "postgresql":
        list(linked.order_by("pk").select_for_update().values_list("pk", flat=True))
    used_elsewhere = TraceImage.objects.filter(image=OuterRef("pk")).exclude(trace__in=doomed)
    linked.exclude(Exists(used_elsewhere))._raw_delete(Image.objects.db)


def _delete_traces(traces: QuerySet[Trace]) -> int:
    # The search worker's queue rows first (the database's cascade would take them last):
    # a worker indexing one of these traces holds its row, and this waits for its commit
    # before deleting any block the worker's new rows point at (the other order deadlocks).
    # Their search rows go with their blocks (ON DELETE CASCADE, migration 0019).
    SearchPending.objects.filter(trace__in=traces.values("id"))._raw_delete(
        SearchPending.objects.db
    )
    _delete_images_only_they_use(traces)
    TraceImage.objects.filter(trace__in=traces.values("id"))._raw_delete(TraceImage.objects.db)
    Annotation.objects.filter(trace__in=traces.values("id"))._raw_delete(Annotation.objects.db)
    TraceEvent.objects.filter(trace__in=traces.values("id"))._raw_delete(TraceEvent.objects.db)
    Block.objects.filter(trace__in=traces.values("id"))._raw_delete(Block.objects.db)
    OtelSpan.objects.filter(trace__in=traces.values("id"))._raw_delete(OtelSpan.objects.db)
    return traces._raw_delete(Trace.objects.db)


def trace_delete(*, trace: Trace) -> None:
    """The trace and everything in it. Its row is locked first, as an append of blocks
    locks it (traces.services.blocks): a running append ends before the deletion reads
    the blocks to delete (else its blocks, committed in between, were left without their
    trace and the delete failed at its commit), and one that starts later finds no trace."""
    with transaction.atomic():
        Trace.objects.select_for_update().filter(pk=trace.pk).first()
        _delete_traces(Trace.objects.filter(pk=trace.pk))


def dataset_delete(*, dataset: Dataset) -> None:
    """The dataset and everything in it. Its row is locked first, as an import into it
    locks it (traces.services.datasets.dataset_lock_next_index): a running import ends
    before the deletion starts, and one that starts later finds no dataset."""
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        _hold_traces(dataset)
        _delete_traces(Trace.objects.filter(dataset_id=dataset.pk))
        Dataset.objects.filter(pk=dataset.pk).delete()


def _hold_traces(dataset: Dataset) -> None:
    """Lock the dataset's traces, as an append of blocks locks its trace: appends that
    are running end first (their blocks are then deleted too), later ones find no trace
    (NotFound). Without it, an append that took its trace's lock after the blocks were
    deleted kept blocks of a deleted trace, and the delete failed at its commit. One
    query, whatever the number of traces (a count, not the rows, comes back). SQLite runs
    one write transaction at a time: nothing to hold."""
    if connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(Trace._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE dataset_id = %s FOR UPDATE) held",
            [dataset.pk],
        )
