"""Deleting datasets and traces with set-based statements.

Django's cascade would load the id of every block first (blocks point at blocks);
a dataset of millions of blocks would hang. The parent keys are deferred, so
blocks can go in one statement.
"""

from django.db import transaction

from traces.models import Block, Dataset, Trace


def _delete_traces(traces) -> int:
    Block.objects.filter(trace__in=traces.values("id"))._raw_delete(Block.objects.db)
    return traces._raw_delete(Trace.objects.db)


def trace_delete(*, trace: Trace) -> None:
    with transaction.atomic():
        _delete_traces(Trace.objects.filter(pk=trace.pk))


def dataset_delete(*, dataset: Dataset) -> None:
    with transaction.atomic():
        _delete_traces(Trace.objects.filter(dataset_id=dataset.pk))
        Dataset.objects.filter(pk=dataset.pk).delete()
