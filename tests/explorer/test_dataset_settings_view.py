"""A dataset managed in the browser (issue 11, item 11): edit description and metadata,
rename, delete after a confirmation step; each refusal says why."""

import pytest
from django.urls import reverse

from tests.real_runs import signed_in, tau2_dataset
from traces.models import Annotation, Block, Dataset, Trace
from traces.services.annotations import annotation_create, label_create

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def runs(org):
    return tau2_dataset(org)


def test_the_form_shows_the_metadata_as_stored(org, runs):
    page = signed_in(org, "owner").get(reverse("dataset-edit", args=[runs.pk])).content.decode()
    assert 'name="name" maxlength="200" required value="telecom"' in page
    assert "{\n  &quot;benchmark&quot;: &quot;tau2-bench&quot;,\n  &quot;domain&quot;" in page


def test_an_owner_renames_and_edits_description_and_metadata(org, runs):
    response = signed_in(org, "owner").post(
        reverse("dataset-edit", args=[runs.pk]),
        {"name": "telecom gpt-4.1", "description": "5 tasks x 4 trials",
         "metadata": '{"model": "gpt-4.1", "accuracy": 0.8}'},
    )  # fmt: skip
    assert response.status_code == 302 and response["Location"] == f"/d/{runs.pk}/"
    runs.refresh_from_db()
    assert runs.name == "telecom gpt-4.1" and runs.description == "5 tasks x 4 trials"
    assert runs.metadata == {"model": "gpt-4.1", "accuracy": 0.8}


def test_a_member_edits_the_description_but_may_not_rename(org, runs):
    member = signed_in(org, "member")
    url = reverse("dataset-edit", args=[runs.pk])
    page = member.get(url).content.decode()
    assert "Only the organization's owners rename a dataset." in page
    ok = member.post(url, {"description": "notes", "metadata": '{"k": 1}'})
    assert ok.status_code == 302
    refused = member.post(url, {"name": "other", "description": "x", "metadata": ""})
    assert refused.status_code == 403
    runs.refresh_from_db()
    assert (runs.name, runs.description, runs.metadata) == ("telecom", "notes", {"k": 1})


@pytest.mark.parametrize(
    ("metadata", "why"),
    [
        ("[1, 2]", "The metadata must be a JSON object"),
        ("{not json", "The metadata is not JSON"),
        ('{"accuracy": 1e300}', "metadata.accuracy"),
    ],
)
def test_bad_metadata_answers_the_form_with_why(org, runs, metadata, why):
    before = runs.metadata
    response = signed_in(org, "owner").post(
        reverse("dataset-edit", args=[runs.pk]),
        {"name": "telecom", "description": "", "metadata": metadata},
        **HTMX,
    )
    assert response.status_code == 422 and response["X-Partial"] == "edit_form"
    assert why in response.content.decode()
    runs.refresh_from_db()
    assert runs.metadata == before


def test_a_taken_name_is_refused(org, runs):
    tau2_dataset(org, name="other")
    response = signed_in(org, "owner").post(
        reverse("dataset-edit", args=[runs.pk]), {"name": "other", "metadata": ""}
    )
    assert response.status_code == 422
    assert "a dataset named &#x27;other&#x27; already exists" in response.content.decode()


def test_delete_asks_first_then_deletes_everything(org, runs):
    owner = signed_in(org, "owner")
    label_create(dataset=runs, name="gave up")
    annotation_create(trace=runs.traces.first(), label="gave up")
    url = reverse("dataset-delete", args=[runs.pk])
    step = owner.get(url).content.decode()
    assert "Delete “telecom” and its 20 traces?" in step
    wrong = owner.post(url, {"confirm": "telecom?"})
    assert wrong.status_code == 422 and Dataset.objects.filter(pk=runs.pk).exists()
    done = owner.post(url, {"confirm": "telecom"})
    assert done.status_code == 302 and done["Location"] == "/"
    assert not Dataset.objects.exists() and not Trace.objects.exists()
    assert not Block.objects.exists() and not Annotation.objects.exists()


def test_a_member_may_not_delete(org, runs):
    member = signed_in(org, "member")
    url = reverse("dataset-delete", args=[runs.pk])
    assert member.get(url).status_code == 403
    assert member.post(url, {"confirm": "telecom"}).status_code == 403
    assert Dataset.objects.filter(pk=runs.pk).exists()
