"""Failure labels and comments in the pages: a dataset's vocabulary (add: members; remove,
with every tag using it: owners) and the labels and comments of a trace or its blocks
(add, remove: members). Writes go through traces.services.annotations; each POST answers
htmx with the partial it changed and a browser with a redirect (explorer/views/base.py),
or, when refused, the partial with what was wrong (422) or the page with a message."""

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.safestring import mark_safe

from explorer.access import actor, page_write
from explorer.trace_anchors import anchors_context
from explorer.trace_html import block_labels_oob
from explorer.views.base import render_page, wants_partial
from traces.errors import TraceStoreError
from traces.models import Dataset, Trace
from traces.policy import Action, allows, require
from traces.selectors.access import dataset_for, trace_for
from traces.selectors.annotations import (
    ANNOTATIONS_SHOWN,
    annotation_author,
    annotation_get_in_org,
    annotations_shown,
    block_label_names,
    label_counts,
    label_get,
    vocabulary_of,
)
from traces.selectors.blocks import block_numbers
from traces.services.annotations import (
    annotation_create,
    annotation_delete,
    label_create,
    label_delete,
)

DATASET_TEMPLATE = "explorer/dataset.html"
TRACE_TEMPLATE = "explorer/trace.html"


def labels_context(request, dataset: Dataset, error: str = "", entered: str = "") -> dict:
    """The dataset page's labels card: the vocabulary with its counts, and its forms."""
    who = actor(request)
    return {
        "dataset": dataset,
        "label_counts": label_counts(dataset=dataset),
        "can_upload": allows(who, Action.WRITE, dataset),
        "can_manage": allows(who, Action.MANAGE, dataset),
        "label_error": error,
        "label_entered": entered,
    }


def annotations_context(
    request, trace: Trace, *, block: str = "", error: str = "", entered: str = ""
) -> dict:
    """The trace page's labels and comments card, and its form (for `block` if given)."""
    vocabulary = vocabulary_of(dataset=trace.dataset) if trace.dataset_id else []
    annotations = annotations_shown(trace=trace)
    can_edit = allows(actor(request), Action.WRITE, trace)
    anchors = anchors_context(trace, annotations, can_edit=can_edit)  # notes anchored to text
    block = block[:64]
    # The block the form tags, as the page numbers it ("Tag block #43"), not by its id
    # alone: in the same query as the annotations' blocks.
    asked = block if "\x00" not in block else ""  # (PostgreSQL refuses NUL)
    numbers = _number_blocks(trace, annotations, also=asked)
    for annotation in annotations:
        annotation.author_text = annotation_author(annotation)
    return {
        "trace": trace,
        "annotations": annotations,
        **anchors,
        "vocabulary": vocabulary,
        "annotate_block": block,
        "annotate_block_number": numbers.get(asked) if asked else None,
        "can_edit": can_edit,
        "annotate_error": error,
        "annotate_entered": entered,
    }


def _number_blocks(trace: Trace, annotations: list, also: str = "") -> dict[str, int | None]:
    """Each annotation on a block (or anchored to one) gets `block_number`, the block's
    number as the trace page shows it ("on block #43"), from one query; the numbers, that
    of the block `also` with them."""

    def block_of(annotation) -> str | None:
        anchor = getattr(annotation, "anchor", None)
        return anchor.place.block if anchor is not None else annotation.block_id

    ids = {b for b in (*map(block_of, annotations), also) if b}
    numbers = block_numbers(trace=trace, block_ids=ids)
    for annotation in annotations:
        annotation.block_number = numbers.get(block_of(annotation) or "")
    return numbers


def listed_annotations(notes: dict) -> list | None:
    """The annotations the labels card lists (`annotations_context`), if they are all the
    trace's: then the blocks' labels are read from them, with no query of their own."""
    listed = notes["annotations"]
    return listed if len(listed) < ANNOTATIONS_SHOWN else None


def _answer(request, template: str, partial: str, context, page_url: str, error: str = ""):
    """A POST's outcome: for htmx the changed partial (422 with the error), for a browser
    a redirect back to the page (the error as a message)."""
    if wants_partial(request):
        status = 422 if error else 200
        return render_page(request, template, context(), partial=partial, status=status)
    if error:
        messages.error(request, f"The label was not saved: {error}")
    return HttpResponseRedirect(page_url)


def _dataset_answer(request, dataset: Dataset, error: str = "", entered: str = ""):
    return _answer(
        request, DATASET_TEMPLATE, "labels",
        lambda: labels_context(request, dataset, error, entered),
        reverse("dataset", args=[dataset.pk]) + "#labels", error,
    )  # fmt: skip


@page_write
def dataset_label_add(request, dataset_id: str):
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id, action=Action.WRITE)
    name = request.POST.get("name", "")
    try:
        label_create(dataset=dataset, name=name, description=request.POST.get("description", ""))
    except TraceStoreError as exc:
        return _dataset_answer(request, dataset, exc.message, name[:100])
    return _dataset_answer(request, dataset)


@page_write
def dataset_label_remove(request, dataset_id: str, label_id: str):
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id)
    label = label_get(dataset=dataset, label_id=label_id)
    require(actor(request), Action.MANAGE, label)
    label_delete(label=label)
    return _dataset_answer(request, dataset)


def _trace_answer(
    request, trace: Trace, error: str = "", entered: str = "", block: str = "",
    tagged: str | None = None,
):  # fmt: skip
    """The labels card; with `tagged`, the id of a block whose labels changed, those
    labels too, which htmx puts on the block where the page shows it (out of band)."""

    def context() -> dict:
        found = annotations_context(request, trace, block=block, error=error, entered=entered)
        if tagged:
            labels = block_label_names(trace=trace, annotations=listed_annotations(found))
            found["labels_oob"] = mark_safe(block_labels_oob(tagged, labels.get(tagged, [])))
        return found

    return _answer(
        request, TRACE_TEMPLATE, "annotations", context,
        reverse("trace", args=[trace.pk]) + "#annotations", error,
    )  # fmt: skip


@page_write
def trace_annotate(request, trace_id: str):
    trace = trace_for(actor=actor(request), trace_id=trace_id, action=Action.WRITE)
    post = request.POST
    try:
        made = annotation_create(
            trace=trace,
            label=post.get("label", ""),
            comment=post.get("comment", ""),
            block_id=post.get("block", "").strip(),
            author=request.user,
        )
    except TraceStoreError as exc:
        return _trace_answer(
            request, trace, exc.message, post.get("comment", "")[:2000], post.get("block", "")
        )
    return _trace_answer(request, trace, tagged=made.block_id if made.label_id else None)


@page_write
def annotation_remove(request, trace_id: str, annotation_id: str):
    trace = trace_for(actor=actor(request), trace_id=trace_id, action=Action.WRITE)
    annotation = annotation_get_in_org(organization=trace.organization, annotation_id=annotation_id)
    if annotation.trace_id != trace.pk:
        return _trace_answer(request, trace)  # nothing of this trace to remove
    annotation_delete(annotation=annotation)
    return _trace_answer(
        request, trace, tagged=annotation.block_id if annotation.label_id else None
    )
