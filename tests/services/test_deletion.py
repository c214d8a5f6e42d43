"""traces/services/deletion.py: set-based deletes; an image goes with the last trace that
was stored with it, and only in its organization."""

import base64
import hashlib
import io
import json
import threading

import pytest
from django.db import connection

from demo.generator import tiny_png
from traces.models import Block, Image, Trace, TraceImage
from traces.services import deletion
from traces.services.deletion import dataset_delete, trace_delete
from traces.services.imports import _Spool, trace_import
from traces.services.organizations import organization_get_or_create


def png_url(n: int) -> str:
    return "data:image/png;base64," + base64.b64encode(tiny_png(8 + n, 8)).decode()


def import_with_images(org, dataset: str, *traces: list[int]) -> list[Trace]:
    """One trace per list of image numbers, each showing those images."""
    lines = []
    for n, images in enumerate(traces):
        content = [{"type": "image_url", "image_url": {"url": png_url(n)}} for n in images]
        # A name apiece: two traces of the same content would be one trace and a duplicate.
        event = {"role": "user", "content": content or "no image"}
        lines.append(json.dumps({"messages": [event], "name": f"trace {n}"}))
    data = ("\n".join(lines) + "\n").encode()
    result = trace_import(
        organization=org, dataset_name=dataset, files=[("t.jsonl", io.BytesIO(data))]
    )
    return list(result.dataset.traces.order_by("index"))


def test_deleting_a_trace_deletes_the_images_only_it_used(org):
    first, second = import_with_images(org, "runs", [1, 2], [2])
    assert (Image.objects.count(), TraceImage.objects.count()) == (2, 3)
    trace_delete(trace=first)
    assert list(Image.objects.values_list("sha256", flat=True)) == [
        TraceImage.objects.get(trace=second).image.sha256
    ]
    assert TraceImage.objects.count() == 1
    trace_delete(trace=second)
    assert (Image.objects.count(), TraceImage.objects.count()) == (0, 0)


def test_an_image_shared_by_two_traces_survives_deleting_one(org):
    first, second = import_with_images(org, "runs", [1], [1])
    trace_delete(trace=first)
    assert Image.objects.count() == 1
    assert TraceImage.objects.get().trace_id == second.pk
    trace_delete(trace=second)
    assert not Image.objects.exists()


def test_an_image_used_in_another_dataset_survives_deleting_a_dataset(org):
    [kept] = import_with_images(org, "kept", [1])
    doomed = import_with_images(org, "doomed", [1, 2], [2, 3], [])
    dataset_delete(dataset=doomed[0].dataset)
    assert Image.objects.count() == 1
    assert TraceImage.objects.get().trace_id == kept.pk
    assert Trace.objects.get() == kept and Block.objects.filter(trace=kept).count() == 1


def test_deleting_a_dataset_leaves_another_organizations_copy(org):
    rival = organization_get_or_create(slug="rival")
    [theirs] = import_with_images(rival, "theirs", [1])
    doomed = import_with_images(org, "doomed", [1])
    dataset_delete(dataset=doomed[0].dataset)
    assert Image.objects.get().organization == rival
    assert TraceImage.objects.get().trace_id == theirs.pk


def test_a_dataset_is_deleted_in_a_constant_number_of_statements(
    org, django_assert_max_num_queries
):
    doomed = import_with_images(org, "doomed", *[[n % 7] for n in range(60)])
    # labels, OTel spans and Explorer's events: 3 more; the search worker's queue: 1 more;
    # the lock of the traces (PostgreSQL), so that no append comes in between: 1 more
    with django_assert_max_num_queries(17):
        dataset_delete(dataset=doomed[0].dataset)
    assert not (Image.objects.exists() or TraceImage.objects.exists() or Trace.objects.exists())


# --- An upload racing a delete of the last trace showing the same image (harden F5) -----

needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite runs one write transaction at a time: an import and a delete cannot race",
)


def delete_in_a_thread(trace: Trace, wait: float) -> tuple[threading.Thread, list]:
    """Start deleting `trace` on a connection of its own; wait up to `wait` seconds for it
    (it blocks, as it should, while an import holds the image it would delete)."""
    outcome: list = []

    def work():
        try:
            trace_delete(trace=trace)
            outcome.append("deleted")
        except BaseException as exc:
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=wait)
    return thread, outcome


@pytest.mark.postgres
@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_delete_during_an_upload_of_the_same_image_keeps_the_image_for_the_upload(
    org, monkeypatch
):
    """The delete comes after the upload found the image (it already existed) and before
    the upload's commit: it used to delete the image under the upload, whose commit then
    failed on the link's foreign key (IntegrityError: a 500)."""
    (first,) = import_with_images(org, "old", [1])
    found_image = _Spool._write_images
    deleting: list = []

    def write_images_then_let_the_delete_run(self, organization_id):
        ids = found_image(self, organization_id)
        deleting.append(delete_in_a_thread(first, wait=1.0))
        return ids

    monkeypatch.setattr(_Spool, "_write_images", write_images_then_let_the_delete_run)
    (second,) = import_with_images(org, "new", [1])
    thread, outcome = deleting[0]
    thread.join(timeout=30)
    assert outcome == ["deleted"]
    assert not Trace.objects.filter(pk=first.pk).exists()
    link = TraceImage.objects.get(trace=second)
    assert link.image.sha256 == hashlib.sha256(tiny_png(9, 8)).hexdigest()
    assert Image.objects.count() == 1


@pytest.mark.postgres
@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_an_upload_during_a_delete_of_the_same_image_stores_the_image_again(org, monkeypatch):
    """The other order: the delete has taken the image when the upload meets it; the
    upload waits for the delete's commit, then stores the image anew (no deadlock, no
    link to a deleted image)."""
    (first,) = import_with_images(org, "old", [1])
    delete_images = deletion._delete_images_only_they_use
    uploading: list = []

    def delete_images_then_let_the_upload_run(traces):
        delete_images(traces)
        thread = threading.Thread(target=upload)
        thread.start()
        thread.join(timeout=1.0)
        uploading.append(thread)

    def upload():
        try:
            uploading.append(import_with_images(org, "new", [1])[0])
        except BaseException as exc:
            uploading.append(exc)
        finally:
            connection.close()

    monkeypatch.setattr(
        deletion, "_delete_images_only_they_use", delete_images_then_let_the_upload_run
    )
    trace_delete(trace=first)
    uploading[0].join(timeout=30)
    (second,) = [o for o in uploading if not isinstance(o, threading.Thread)]
    assert isinstance(second, Trace), second
    assert TraceImage.objects.get(trace=second).image.sha256 == hashlib.sha256(
        tiny_png(9, 8)
    ).hexdigest()
    assert Image.objects.count() == 1
