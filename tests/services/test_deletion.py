"""traces/services/deletion.py: set-based deletes; an image goes with the last trace that
was stored with it, and only in its organization."""

import base64
import io
import json

from demo.generator import tiny_png
from traces.models import Block, Image, Trace, TraceImage
from traces.services.deletion import dataset_delete, trace_delete
from traces.services.imports import trace_import
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
    with django_assert_max_num_queries(12):
        dataset_delete(dataset=doomed[0].dataset)
    assert not (Image.objects.exists() or TraceImage.objects.exists() or Trace.objects.exists())
