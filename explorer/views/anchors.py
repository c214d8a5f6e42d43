"""Notes anchored to text on the trace page: a member selects text in a block and writes
a comment; the note is kept with the Explorer address of the selection (traces/anchors.py:
the block's event index, the line or character range in the event as stored) through
traces.services.annotations.annotation_create. An address may also be given as typed.

htmx answers a saved note with the trace's labels-and-comments card (whose data island
static/js/anchors.js reads again), a refused one with the reason (422) in the form's
error slot; a browser is redirected back, the reason as a message."""

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.urls import reverse

from explorer.access import actor, page_write
from explorer.views.base import render_page, wants_partial
from explorer.views.labels import TRACE_TEMPLATE, annotations_context
from traces.errors import TraceStoreError
from traces.policy import Action
from traces.selectors.access import trace_for
from traces.selectors.anchors import address_of_selection
from traces.services.annotations import annotation_create

ERROR_SLOT = "#anchor-error"


@page_write
def trace_anchor_add(request, trace_id: str):
    trace = trace_for(actor=actor(request), trace_id=trace_id, action=Action.WRITE)
    post = request.POST
    typed = post.get("address", "").strip()
    try:
        address = typed or address_of_selection(
            trace=trace, block_id=post.get("block", ""), quote=post.get("quote", ""),
            hint=post.get("hint", "0"),
        )  # fmt: skip
        annotation_create(
            trace=trace, comment=post.get("comment", ""), address=address, author=request.user
        )
    except TraceStoreError as exc:
        return _refused(request, trace.pk, exc.message)
    if wants_partial(request):
        context = annotations_context(request, trace)
        return render_page(request, TRACE_TEMPLATE, context, partial="annotations")
    return HttpResponseRedirect(reverse("trace", args=[trace.pk]) + "#annotations")


def _refused(request, trace_id: str, error: str):
    if wants_partial(request):
        context = {"anchor_error": error}
        response = render_page(request, TRACE_TEMPLATE, context, partial="anchor_error", status=422)
        response["HX-Retarget"] = ERROR_SLOT
        response["HX-Reswap"] = "innerHTML"
        return response
    messages.error(request, f"The note was not saved: {error}")
    return HttpResponseRedirect(reverse("trace", args=[trace_id]) + "#annotations")
