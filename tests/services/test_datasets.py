"""Writes to a dataset deleted meanwhile (a rename, an update, an import's metadata): the
domain's NotFound, a 404 in the envelope, where `_write_locked`'s locked read raised
Dataset.DoesNotExist, a 500."""

import pytest

from tests.threads import run_together
from traces.errors import NotFound
from traces.models import Dataset
from traces.services.datasets import dataset_create, dataset_metadata_add, dataset_update
from traces.services.deletion import dataset_delete

WRITERS = 8
ROUNDS = 4


def gone(dataset_id: str) -> dict:
    return {
        "error": {
            "code": "NOT_FOUND",
            "http_status": 404,
            "message": f"no dataset {dataset_id!r}",
            "details": {"dataset_id": dataset_id},
        }
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    "write",
    [
        lambda d: dataset_update(dataset=d, name="renamed"),
        lambda d: dataset_update(dataset=d, metadata={"k": 1}, is_public=True),
        lambda d: dataset_metadata_add(dataset=d, metadata={"k": 1}),
    ],
    ids=["rename", "update", "metadata_add"],
)
def test_a_write_to_a_dataset_deleted_after_it_was_read_is_404(org, write):
    dataset = dataset_create(organization=org, name="runs")
    stale = Dataset.objects.get(pk=dataset.pk)
    dataset_delete(dataset=dataset)
    with pytest.raises(NotFound) as missing:
        write(stale)
    assert missing.value.as_envelope() == gone(stale.pk)
    assert not Dataset.objects.exists()


def writer(dataset, i, name):
    """A rename, or a metadata merge, of the dataset as read."""
    if i % 2:
        return lambda: dataset_update(dataset=dataset, name=name)
    return lambda: dataset_update(dataset=dataset, metadata={f"k{i}": i})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_renames_and_updates_racing_a_delete_are_written_or_404(org):
    for round_ in range(ROUNDS):
        dataset = dataset_create(organization=org, name=f"runs {round_}")
        stale = [Dataset.objects.get(pk=dataset.pk) for _ in range(WRITERS)]
        workers = [writer(stale[i], i, f"renamed {round_}.{i}") for i in range(WRITERS)]
        workers.insert(WRITERS // 2, lambda d=dataset: dataset_delete(dataset=d))
        outcomes = run_together(workers)
        assert outcomes.pop(WRITERS // 2) is None
        for outcome in outcomes:
            if isinstance(outcome, NotFound):
                assert outcome.as_envelope() == gone(dataset.pk)
            else:
                assert isinstance(outcome, Dataset), outcome
        assert not Dataset.objects.filter(pk=dataset.pk).exists()
