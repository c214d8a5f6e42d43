"""An upload into a dataset by id whose dataset is deleted meanwhile: NotFound (404), and
no new dataset under the old name. Before, `upload_target` handed on only the dataset's
name, and the import created a new, empty-of-history dataset of that name."""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import user_in
from tests.services.test_datasets import gone
from tests.threads import run_together
from traces.errors import NotFound
from traces.models import Dataset, Trace
from traces.policy import Actor
from traces.services.datasets import dataset_create
from traces.services.deletion import dataset_delete
from traces.services.imports import ImportResult, trace_import
from traces.services.uploads import traces_upload

UPLOADERS = 6
ROUNDS = 4
LINES = [{"metadata": {"benchmark": "tau2"}}, [{"role": "user", "content": "hi"}]]
DATA = "".join(json.dumps(line) + "\n" for line in LINES).encode()


@pytest.mark.django_db
def test_an_import_into_a_dataset_deleted_while_its_files_were_read_is_404(org):
    dataset = dataset_create(organization=org, name="runs")
    stale = Dataset.objects.get(pk=dataset.pk)

    def delete_it(_bytes):  # runs while the file is read, before the import writes
        if Dataset.objects.filter(pk=dataset.pk).exists():
            dataset_delete(dataset=dataset)

    with pytest.raises(NotFound) as missing:
        trace_import(dataset=stale, files=[("t.jsonl", io.BytesIO(DATA))], progress=delete_it)
    assert missing.value.as_envelope() == gone(stale.pk)
    assert not Dataset.objects.filter(name="runs").exists()
    assert not Trace.objects.exists()


@pytest.mark.django_db
def test_an_import_into_a_deleted_dataset_is_404(org):
    dataset = dataset_create(organization=org, name="runs")
    stale = Dataset.objects.get(pk=dataset.pk)
    dataset_delete(dataset=dataset)
    with pytest.raises(NotFound) as missing:
        trace_import(dataset=stale, files=[("t.jsonl", io.BytesIO(DATA))])
    assert missing.value.as_envelope() == gone(stale.pk)
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_an_upload_by_id_writes_into_that_dataset_even_if_renamed(org):
    dataset = dataset_create(organization=org, name="runs")
    actor = Actor(user=user_in(org, "member"))
    stale = Dataset.objects.get(pk=dataset.pk)
    Dataset.objects.filter(pk=dataset.pk).update(name="renamed")
    result = trace_import(dataset=stale, files=[("t.jsonl", io.BytesIO(DATA))])
    assert result.dataset.pk == dataset.pk
    result = traces_upload(
        actor=actor, files=[SimpleUploadedFile("t.jsonl", DATA)], dataset_id=dataset.pk,
        allow_duplicates=True,
    )  # fmt: skip
    assert result.dataset.pk == dataset.pk
    assert list(Dataset.objects.values_list("name", flat=True)) == ["renamed"]
    assert Trace.objects.filter(dataset=dataset).count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_uploads_by_id_racing_a_delete_never_make_a_new_dataset(org):
    actor = Actor(user=user_in(org, "member"))
    for round_ in range(ROUNDS):
        dataset = dataset_create(organization=org, name=f"runs {round_}")
        workers = [
            lambda d=dataset: traces_upload(
                actor=actor,
                files=[SimpleUploadedFile("t.jsonl", DATA)],
                dataset_id=d.pk,
                allow_duplicates=True,
            )  # fmt: skip
            for _ in range(UPLOADERS)
        ]
        workers.insert(UPLOADERS // 2, lambda d=dataset: dataset_delete(dataset=d))
        outcomes = run_together(workers)
        assert outcomes.pop(UPLOADERS // 2) is None
        for outcome in outcomes:
            if isinstance(outcome, NotFound):
                assert outcome.http_status == 404
                assert outcome.details in ({"dataset_id": dataset.pk},)
            else:
                assert isinstance(outcome, ImportResult), outcome
                assert outcome.dataset.pk == dataset.pk
        assert not Dataset.objects.filter(name=f"runs {round_}").exists()
        assert not Trace.objects.exists()
