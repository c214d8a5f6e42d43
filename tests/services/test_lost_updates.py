"""Updates cannot be lost: a dataset update writes only the fields it asks to change, on
the row as it is when it writes (locked), however stale the instance it was given; the
same for the admin's form and for a trace's `extra`.

Before, `dataset_update` saved every field of the instance it was handed: 200 writers
each merging their own metadata key kept 134 of them, and an update read before a
"make private" made the dataset public again.
"""

import io
import json
import re
from html import unescape

import pytest
from django.urls import reverse

from tests.conftest import user_in
from tests.threads import run_together
from traces.models import Dataset, Trace
from traces.services.annotations import trace_extra_update
from traces.services.datasets import dataset_create, dataset_update
from traces.services.imports import trace_import
from traces.services.traces import trace_create, trace_patch

WRITERS = 40


@pytest.fixture
def public_dataset(org):
    return dataset_create(organization=org, name="shared", metadata={"base": 0}, is_public=True)


def stale_copies(dataset, n):
    return [Dataset.objects.get(pk=dataset.pk) for _ in range(n)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_metadata_merges_are_all_kept(public_dataset):
    stale = stale_copies(public_dataset, WRITERS)
    outcomes = run_together(
        [
            lambda i=i: dataset_update(dataset=stale[i], metadata={f"k{i}": i})
            for i in range(WRITERS)
        ]
    )
    assert all(isinstance(o, Dataset) for o in outcomes), outcomes
    stored = Dataset.objects.get(pk=public_dataset.pk).metadata
    assert stored == {"base": 0, **{f"k{i}": i for i in range(WRITERS)}}


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_undo_a_make_private_they_did_not_ask_for(public_dataset):
    stale = stale_copies(public_dataset, WRITERS)  # all read while public
    workers = [
        lambda i=i: dataset_update(dataset=stale[i], metadata={f"k{i}": i}, name=None)
        for i in range(WRITERS - 1)
    ]
    workers.append(lambda: dataset_update(dataset=stale[-1], is_public=False))
    outcomes = run_together(workers)
    assert all(isinstance(o, Dataset) for o in outcomes), outcomes
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert stored.is_public is False
    assert len(stored.metadata) == WRITERS  # base + one key a metadata writer


@pytest.mark.django_db
def test_a_stale_rename_keeps_a_later_make_private_and_metadata(public_dataset):
    stale = Dataset.objects.get(pk=public_dataset.pk)
    dataset_update(dataset=public_dataset, is_public=False, metadata={"later": 1})
    renamed = dataset_update(dataset=stale, name="renamed")
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert (stored.name, stored.is_public, stored.metadata) == (
        "renamed", False, {"base": 0, "later": 1}
    )  # fmt: skip
    # The instance given back (and the caller's) shows the row as written.
    assert (renamed.name, renamed.is_public, renamed.metadata) == (
        "renamed", False, {"base": 0, "later": 1}
    )  # fmt: skip
    assert (stale.is_public, stale.metadata) == (False, {"base": 0, "later": 1})


@pytest.mark.django_db
def test_a_stale_visibility_toggle_keeps_metadata_merged_since(public_dataset, client):
    user = user_in(public_dataset.organization, "owner", "owner")
    client.force_login(user)
    dataset_update(dataset=Dataset.objects.get(pk=public_dataset.pk), metadata={"new": 1})
    response = client.post(reverse("dataset-visibility", args=[public_dataset.pk]), {"public": 0})
    assert response.status_code == 302
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert (stored.is_public, stored.metadata) == (False, {"base": 0, "new": 1})


@pytest.mark.django_db
def test_an_import_writes_only_the_metadata_it_brings(public_dataset):
    """The import read the dataset before its long transaction; what changed meanwhile
    (here: made private from within the import's own transaction, as a concurrent writer
    would have) is kept, and the file's dataset metadata is added to what is there."""

    def meanwhile(_bytes):
        Dataset.objects.filter(pk=public_dataset.pk).update(
            is_public=False, metadata={"base": 0, "set-meanwhile": 1}
        )

    lines = [{"metadata": {"benchmark": "tau2"}}, [{"role": "user", "content": "hi"}]]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    trace_import(
        organization=public_dataset.organization,
        dataset_name="shared",
        files=[("m.jsonl", io.BytesIO(data))],
        progress=meanwhile,
    )
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert stored.is_public is False
    assert stored.metadata == {"base": 0, "set-meanwhile": 1, "benchmark": "tau2"}


@pytest.mark.django_db(transaction=True)
def test_imports_and_updates_at_once_keep_every_write(public_dataset):
    org = public_dataset.organization
    stale = stale_copies(public_dataset, WRITERS)

    def importer(i):
        # Distinct runs: identical ones would be skipped as duplicates.
        lines = [{"metadata": {f"import{i}": i}}, [{"role": "user", "content": f"hi {i}"}]]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return trace_import(
            organization=org, dataset_name="shared", files=[("f.jsonl", io.BytesIO(data))]
        )

    workers = []
    for i in range(WRITERS):
        if i % 4 == 0:
            workers.append(lambda i=i: importer(i))
        else:
            workers.append(lambda i=i: dataset_update(dataset=stale[i], metadata={f"k{i}": i}))
    workers[1] = lambda: dataset_update(dataset=stale[1], is_public=False)
    outcomes = run_together(workers)
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    stored = Dataset.objects.get(pk=public_dataset.pk)
    expected = {"base": 0}
    for i in range(WRITERS):
        if i % 4 == 0:
            expected[f"import{i}"] = i
        elif i != 1:
            expected[f"k{i}"] = i
    assert stored.metadata == expected
    assert stored.is_public is False
    assert stored.traces.count() == len(range(0, WRITERS, 4))


def form_values(html: str) -> dict[str, str]:
    """The values a browser would post back from the admin's change form."""
    values = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        kind = re.search(r'type="([^"]+)"', tag)
        if not name or (kind and kind.group(1) in ("submit", "file")):
            continue
        if kind and kind.group(1) == "checkbox":
            if "checked" in tag:
                values[name.group(1)] = "on"
            continue
        values[name.group(1)] = unescape(value.group(1)) if value else ""
    for name, text in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', html, re.S):
        values[name] = unescape(text).lstrip("\n")
    return values


@pytest.mark.django_db
def test_the_admin_form_writes_only_what_its_user_changed(public_dataset, admin_client):
    url = reverse("admin:traces_dataset_change", args=[public_dataset.pk])
    shown = form_values(admin_client.get(url).content.decode())
    # Meanwhile, someone makes it private and adds metadata.
    dataset_update(dataset=public_dataset, is_public=False, metadata={"meanwhile": 1})
    response = admin_client.post(url, {**shown, "description": "edited"})
    assert response.status_code == 302, response.content[-3000:]
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert (stored.description, stored.is_public, stored.metadata) == (
        "edited", False, {"base": 0, "meanwhile": 1}
    )  # fmt: skip
    # What the user does change is written, metadata as the form's whole value.
    shown = form_values(admin_client.get(url).content.decode())
    admin_client.post(url, {**shown, "metadata": '{"only": 1}', "is_public": "on"})
    stored = Dataset.objects.get(pk=public_dataset.pk)
    assert (stored.is_public, stored.metadata) == (True, {"only": 1})


@pytest.mark.django_db
def test_replacing_extra_takes_the_reward_from_the_metadata_as_stored_now(org):
    trace = trace_create(organization=org, dataset=None, metadata={"reward": 0})
    stale = Trace.objects.get(pk=trace.pk)
    trace_patch(trace=trace, metadata={"reward": 1})
    trace_extra_update(trace=stale, extra={"note": "looked at it"})
    stored = Trace.objects.get(pk=trace.pk)
    assert (stored.reward, stored.extra, stored.metadata) == (
        1.0, {"note": "looked at it"}, {"reward": 1}
    )  # fmt: skip


@pytest.mark.django_db
def test_the_admin_says_a_new_name_is_taken(public_dataset, admin_client):
    dataset_create(organization=public_dataset.organization, name="taken")
    url = reverse("admin:traces_dataset_change", args=[public_dataset.pk])
    shown = form_values(admin_client.get(url).content.decode())
    response = admin_client.post(url, {**shown, "name": "taken"})
    assert response.status_code == 200
    assert "This organization already has a dataset &#x27;taken&#x27;." in response.content.decode()
    assert Dataset.objects.get(pk=public_dataset.pk).name == "shared"
