"""Labels deleted while traces are being tagged with them: the label's row is locked by
both writers (traces.services.annotations), so that a tag either lands before the delete
and goes with it, or is refused as "no such label" (422). Before, either side's commit
failed on the foreign key annotation -> label: a 500 on PostgreSQL."""

import pytest

from tests.threads import run_together
from traces.errors import NotFound, ValidationFailed
from traces.models import Annotation, Label
from traces.services.annotations import annotation_create, label_create, label_delete
from traces.services.datasets import dataset_create
from traces.services.traces import trace_create

TAGGERS = 8
ROUNDS = 6


@pytest.fixture
def trace(org):
    dataset = dataset_create(organization=org, name="runs")
    return trace_create(organization=org, dataset=dataset, name="one")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_label_deleted_while_traces_are_tagged_with_it_never_fails_a_writer(trace):
    for round_ in range(ROUNDS):
        label = label_create(dataset=trace.dataset, name=f"gave up {round_}")
        workers = [
            lambda name=label.name: annotation_create(trace=trace, label=name, comment="why")
            for _ in range(TAGGERS)
        ]
        workers.insert(TAGGERS // 2, lambda label=label: label_delete(label=label))
        outcomes = run_together(workers)
        deleted = outcomes.pop(TAGGERS // 2)
        assert isinstance(deleted, int), deleted
        for outcome in outcomes:
            if isinstance(outcome, ValidationFailed):
                assert outcome.http_status == 422
                assert outcome.details["field"] == "label"
                assert "no label" in outcome.message
            else:
                assert isinstance(outcome, Annotation), outcome
        tagged = [o for o in outcomes if isinstance(o, Annotation)]
        # Every tag that landed went with its label, and was counted.
        assert deleted == len(tagged)
        assert not Label.objects.filter(pk=label.pk).exists()
        assert not Annotation.objects.filter(label_id=label.pk).exists()
        assert not Annotation.objects.filter(pk__in=[a.pk for a in tagged]).exists()


@pytest.mark.django_db
def test_tagging_with_a_label_deleted_after_it_was_read_is_422(trace):
    label = label_create(dataset=trace.dataset, name="gave up")
    stale = Label.objects.get(pk=label.pk)
    label_delete(label=label)
    with pytest.raises(ValidationFailed) as refused:
        annotation_create(trace=trace, label=stale.name)
    assert refused.value.http_status == 422
    assert refused.value.details["field"] == "label"
    assert not Annotation.objects.exists()


@pytest.mark.django_db
def test_deleting_a_label_already_deleted_is_404(trace):
    label = label_create(dataset=trace.dataset, name="gave up")
    stale = Label.objects.get(pk=label.pk)
    label_delete(label=label)
    with pytest.raises(NotFound) as missing:
        label_delete(label=stale)
    assert missing.value.as_envelope() == {
        "error": {
            "code": "NOT_FOUND",
            "http_status": 404,
            "message": f"no label {stale.pk!r}",
            "details": {"label_id": stale.pk},
        }
    }


@pytest.mark.django_db
def test_a_label_added_to_a_deleted_dataset_is_not_found_not_a_duplicate(trace):
    dataset = trace.dataset
    type(dataset).objects.filter(pk=dataset.pk).delete()
    with pytest.raises(NotFound):
        label_create(dataset=dataset, name="gave up")
    assert not Label.objects.exists()
