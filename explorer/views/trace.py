"""A trace's page: the stitched tree of its blocks, read as a conversation in three
lanes, MESSAGE | ACT | OBSERVE; a block's page; rewards on the trace and its blocks.

One request reads only the blocks of the rows it shows, in one range query on the
stitched order stored when they were written (traces/order.py): the first chunk on
the page, the next ones from the page's own URL (`?after=<row>`: the `chunk`
partial for htmx, the page from that row without JavaScript). Long payloads are folded
to a preview; a block's page (`/b/<block>/full`) shows it whole, and gives htmx the
block's body or raw whole. Rewards are written through the services (`trace_patch`,
`block_extra_patch`). Every fragment follows explorer/views/base.py.
"""

import re
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from explorer import trace_page as page
from explorer.access import actor, policy_errors
from explorer.dataset_page import list_state
from explorer.render.content import safe
from explorer.render.json import json_html
from explorer.render.text import visible_text
from explorer.trace_html import Deferred
from explorer.views.base import htmx_target, render_page, wants_partial
from explorer.views.labels import annotations_context, listed_annotations
from traces.errors import NotFound, ValidationFailed
from traces.models import Block, Trace
from traces.policy import Action
from traces.selectors.access import trace_for
from traces.selectors.blocks import (
    block_get,
    block_of,
    block_place,
    trace_block_hits,
    trace_outline_rows,
    turn_acts,
)
from traces.selectors.neighbours import trace_neighbours
from traces.selectors.traces import trace_passing_trial_exists
from traces.services.annotations import block_extra_patch
from traces.services.traces import trace_patch
from traces.validation import check_reward

TEMPLATE = "explorer/trace.html"
_BLOCK_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# --- Access ----------------------------------------------------------------------------


def _trace(request, trace_id: str, action: Action = Action.READ) -> Trace:
    return trace_for(actor=actor(request), trace_id=trace_id, action=action)


def _block(trace: Trace, block_id: str) -> Block:
    # Http404 itself, not the policy's NotFound: a block missing from a trace the person
    # may read is simply not there, signed in or not (explorer/access.py).
    try:
        return block_get(trace=trace, block_id=block_id)
    except NotFound:
        raise Http404("no such block") from None


# A place in a trace asked for in a URL is at most this (SQLite's integers are 64-bit:
# a larger one failed the query).
MAX_PLACE = 2**31


def _int_param(request, name: str) -> int:
    try:
        return min(max(0, int(request.GET.get(name, "0"))), MAX_PLACE)
    except ValueError:
        return 0


def _place(request, trace: Trace) -> tuple[int, int] | None:
    """(row, act) of the block the request asks to open the page at: ?focus=<block id>
    (a permalink) or ?block=<n> ("go to block n"); None for none, or an orphan's."""
    focus = request.GET.get("focus", "")
    found = None
    if _BLOCK_ID.match(focus):
        found = block_place(trace=trace, block_id=focus)
    elif _ASCII_DIGITS.fullmatch(request.GET.get("block", "").strip()):
        found = block_place(trace=trace, number=int(request.GET["block"].strip()[:12]))
    if found is None or found[0] is None:
        return None
    turn, act = found
    return turn, max(0, act - 1)


def _jump_missing(request, trace: Trace) -> str:
    """What the page says when "go to block n" asks for no block of the trace: a number
    past its last (or 0), or what is not a number (a URL made by hand); it opens at its
    first rows."""
    asked = request.GET.get("block", "").strip()
    if not asked or request.GET.get("focus"):  # focus goes first
        return ""
    total = trace.block_count
    if asked.isascii() and asked.isdigit():
        if _ASCII_DIGITS.fullmatch(asked):
            number = str(int(asked))
            if 1 <= int(number) <= total:
                return ""
        else:  # more digits than any trace has blocks
            number = f"{asked[:12]}…"
        return f"There is no block {number}: this trace has {total} (numbered from 1)."
    shown = visible_text(asked[:20]) + ("…" if len(asked) > 20 else "")
    return f"“{shown}” is not a block number: this trace has {total} blocks, numbered from 1."


@require_safe
@policy_errors
def trace_page(request, trace_id: str):
    """O(what it shows): the trace row, its counts, and the blocks of one chunk, read in
    stitched order from where the page starts (traces/order.py)."""
    trace = _trace(request, trace_id)
    counts = page.block_counts(trace)
    row_total = counts["MESSAGE"]
    start = min(_int_param(request, "after"), row_total)
    acts_from = _int_param(request, "acts") if start < row_total else 0
    # The rows go into the response's bytes after the template (trace_html.Deferred).
    deferred = Deferred()
    if wants_partial(request):  # the next chunk, asked for by the one before
        renderer = page.PageRenderer(request, trace, drawers=False)
        context = {
            "trace": trace,
            "deferred": deferred,
            "can_edit": renderer.can_edit,  # its blocks' "label this block" links
            **page.chunk_context(renderer, row_total, start, None, acts_from),
        }
        return deferred.fill(render_page(request, TEMPLATE, context, partial="chunk"))
    # A page opens at a row it has (not at an empty page after the last, or after the last
    # act of a row: URLs made by hand).
    last_row = max(0, row_total - 1)
    start = min(start, last_row)
    if _ASCII_DIGITS.fullmatch(request.GET.get("row", "").strip()):  # "go to row n", from 1
        start = min(max(0, int(request.GET["row"].strip()[:12]) - 1), last_row)
        acts_from = 0
    if acts_from and acts_from >= turn_acts(trace=trace, turn=start):
        acts_from = 0
    notes = annotations_context(request, trace, block=request.GET.get("annotate", ""))
    # The blocks' labels are taken from the annotations the page lists, if it lists all.
    renderer = page.PageRenderer(
        request, trace, drawers=False, annotations=listed_annotations(notes)
    )
    chunk = None
    place = _place(request, trace)
    if place is not None:
        chunk, start, acts_from = page.chunk_around(renderer, place)
    chunk_context = page.chunk_context(renderer, row_total, start, chunk, acts_from)
    listed = list_state(request)  # J/K walk the list the reader came from
    prev, nxt = trace_neighbours(trace=trace, filters=listed.filter, sort=listed.sort)
    reward = page.reward_summary(trace)
    context = {
        "trace": trace,
        "title": page.trace_title(trace),
        "dataset": trace.dataset,
        "prev": prev,
        "next": nxt,
        "list_suffix": listed.suffix,
        "counts": counts,
        "block_total": trace.block_count,
        "usage": page.usage_stats(trace),
        "orphan_total": counts.orphans,
        "meta_items": page.meta_items(trace.metadata),
        "extra_items": page.meta_items(trace.extra),
        "meta_hidden": page.meta_hidden(trace.metadata) + page.meta_hidden(trace.extra),
        "raw_url": reverse("api-trace", args=[trace.organization.slug, trace.pk]),
        "trace_reward": page.trace_reward(trace, renderer.can_edit),
        **reward,
        "passing_trial": reward["reward_tone"] == "bad" and trace_passing_trial_exists(trace=trace),
        "can_edit": renderer.can_edit,
        **notes,
        "start": start,
        "jump_missing": _jump_missing(request, trace),
        # The outline opens at the page of turns the page opened at (a jump to row n).
        "outline_from": start - start % page.OUTLINE_TURNS,
        "start_url": reverse("trace", args=[trace.pk]),
        "nav": "datasets",
        "deferred": deferred,
        **chunk_context,
    }
    return deferred.fill(render_page(request, TEMPLATE, context))


@require_safe
@policy_errors
def trace_outline(request, trace_id: str):
    """The outline of the whole trace, OUTLINE_TURNS turns at a time from ?after=<row>
    (one range query each), or the blocks matching ?q= (full-text search, in stitched
    order); each entry opens the trace page at its row or block."""
    trace = _trace(request, trace_id)
    row_total = page.block_counts(trace)["MESSAGE"]
    start = min(_int_param(request, "after"), row_total)
    text = request.GET.get("q", "")[:200]
    context: dict[str, Any] = {
        "trace": trace,
        "title": page.trace_title(trace),
        "dataset": trace.dataset,
        "q": text,
        "row_total": row_total,
        "outline_start": start,
        "nav": "datasets",
        "page_mode": "outline",
    }
    if text.strip():
        hits = trace_block_hits(trace=trace, text=text, limit=page.HITS + 1)
        context["hits"] = page.hits_of(hits[: page.HITS], text)
        context["more_hits"] = len(hits) > page.HITS
    else:
        rows = trace_outline_rows(trace=trace, first_turn=start, turns=page.OUTLINE_TURNS)
        context["outline"] = page.outline_rows(rows)
        end = start + page.OUTLINE_TURNS
        context["outline_next"] = end if end < row_total else None
        context["outline_prev"] = max(0, start - page.OUTLINE_TURNS) if start else None
    return render_page(request, TEMPLATE, context, partial="outline")


@require_safe
@policy_errors
def block_full(request, trace_id: str, block_id: str):
    trace = _trace(request, trace_id)
    block = _block(trace, block_id)
    as_text = request.GET.get("as") == "text"
    fold = request.GET.get("fold") == "1"  # back to the preview, after "Show all"
    target = htmx_target(request)
    # Its drawer (#drawer-<block>) as the trace page shows it when it opens: folded.
    drawer = target.startswith("drawer-")
    renderer = page.PageRenderer(request, trace, fold=drawer or fold, as_text=as_text)
    node = {**block_of(block), "is_error": block.is_error}
    renderer.load_image_types([node])
    view = renderer.block(node)
    if wants_partial(request):  # the block's raw (#raw-<block>), body (#body-<block>), drawer
        partial = "drawer_body" if drawer else "raw" if target.startswith("raw-") else "block_body"
        context = {"trace": trace, "b": view, "can_edit": renderer.can_edit, "unfolded": not fold}
        return render_page(request, TEMPLATE, context, partial=partial)
    context = {
        "trace": trace,
        "title": page.trace_title(trace),
        "dataset": trace.dataset,
        "b": view,
        "payload_html": safe(json_html(block.payload, renderer.unlimited())),
        "back_url": _block_anchor_url(trace, block.pk),
        "nav": "datasets",
        "page_mode": "block",
        "as_text": as_text,
    }
    return render_page(request, TEMPLATE, context)


# --- Rewards ---------------------------------------------------------------------------


class RewardInputError(ValueError):
    pass


# A number as a person types it, in ASCII digits (NaN and infinity are refused later).
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)", re.I
)
_ASCII_DIGITS = re.compile(r"[0-9]{1,12}")


def _reward_from_post(post) -> Any:
    """The reward a form asks for: 1, 0, None (clear) or the number typed."""
    action = post.get("action", "")
    if action == "up":
        return 1
    if action == "down":
        return 0
    if action == "clear":
        return None
    text = post.get("value", "").strip()
    if not text:
        raise RewardInputError("Enter a number.")
    if not _NUMBER.fullmatch(text):  # float() would take "1_0" as 10 and other scripts' digits
        raise RewardInputError(f"“{text[:40]}” is not a number.")
    try:
        number = int(text) if re.fullmatch(r"[+-]?[0-9]{1,15}", text) else float(text)
    except ValueError:
        raise RewardInputError(f"“{text[:40]}” is not a number.") from None
    try:
        check_reward(number, field_name="The reward")
    except ValidationFailed as exc:
        raise RewardInputError(f"{exc.message}.") from None
    return int(number) if float(number).is_integer() else number


def _block_anchor_url(trace: Trace, block_id: str) -> str:
    url = reverse("trace", args=[trace.pk])
    return f"{url}?{urlencode({'focus': block_id})}#{block_id}"


def _entered(request) -> str:
    """What the person typed, shown back beside the error."""
    return request.POST.get("value", "")[:40]


@require_POST
@login_required
@policy_errors
def trace_reward(request, trace_id: str):
    trace = _trace(request, trace_id, Action.WRITE)
    try:
        value = _reward_from_post(request.POST)
    except RewardInputError as exc:
        reward = page.trace_reward(trace, True, error=str(exc), entered=_entered(request))
        return _not_saved(request, trace, reward)
    trace = trace_patch(trace=trace, extra={"reward": value})
    if not wants_partial(request):
        return HttpResponseRedirect(reverse("trace", args=[trace.pk]))
    # The control, and the reward in the page's head (out of band).
    context = {
        "trace": trace,
        "reward": page.trace_reward(trace, True),
        **page.reward_summary(trace),
        "oob": True,
    }
    return render_page(request, TEMPLATE, context, partial="trace_reward_answer")


@require_POST
@login_required
@policy_errors
def block_reward(request, trace_id: str, block_id: str):
    trace = _trace(request, trace_id, Action.WRITE)
    block = _block(trace, block_id)
    renderer = page.PageRenderer(request, trace)
    try:
        value = _reward_from_post(request.POST)
    except RewardInputError as exc:
        reward = renderer.reward(block_of(block))
        reward.error, reward.entered = str(exc), _entered(request)
        return _not_saved(request, trace, reward, block.pk)
    block = block_extra_patch(block=block, patch={"reward": value})
    if not wants_partial(request):
        return HttpResponseRedirect(_block_anchor_url(trace, block.pk))
    context = {"reward": renderer.reward(block_of(block))}
    return render_page(request, TEMPLATE, context, partial="reward")


def _not_saved(request, trace: Trace, reward: page.RewardView, block_id: str | None = None):
    """A reward refused (422): for htmx the control with its error; without JavaScript a
    page that says why, with the way back."""
    context = {
        "reward": reward,
        "trace": trace,
        "title": page.trace_title(trace),
        "dataset": trace.dataset,
        "message": reward.error,
        "back_url": _block_anchor_url(trace, block_id)
        if block_id
        else reverse("trace", args=[trace.pk]),
        "nav": "datasets",
        "page_mode": "reward_error",
    }
    return render_page(request, TEMPLATE, context, partial="reward", status=422)
