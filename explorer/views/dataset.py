"""One dataset: its metadata and accuracy, a reward histogram, rewards per task with
pass@k, and its traces (searchable, filterable, paginated); export as JSONL; make it
public or private.

Two places of the page come from its URL alone (explorer/views/base.py): the rewards per
group (`#groups`, loaded right after the page, or picked by key) and the trace list
(`#traces`, searched, filtered, paged)."""

from typing import Any

from django.contrib import messages
from django.http import HttpResponseBadRequest, HttpResponseRedirect, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from explorer import dataset_page as view_models
from explorer.access import actor, page_write, policy_errors
from explorer.views.base import clean_url, htmx_target, render_page
from traces.policy import Action, allows
from traces.selectors.access import dataset_for
from traces.selectors.annotations import label_counts, labels_of
from traces.selectors.datasets import dataset_export_disposition, dataset_traces
from traces.selectors.exports import EXPORT_FORMATS, dataset_export_lines
from traces.selectors.search import traces_being_indexed_count
from traces.selectors.stats import (
    reward_distribution,
    reward_histogram,
    reward_summary,
    usage_columns,
    usage_summary,
)
from traces.selectors.trace_filters import traces_sorted
from traces.services.datasets import dataset_update

TEMPLATE = "explorer/dataset.html"
SORT_CHOICES = tuple(
    (f"{prefix}{sort}", f"{label} {arrow}")
    for sort, label, _ in view_models.SORT_COLUMNS
    for prefix, arrow in (("", "↑"), ("-", "↓"))
)


@require_GET
@policy_errors
def dataset_page(request, dataset_id: str):
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id)
    all_traces = dataset_traces(dataset=dataset)
    filters = view_models.Filters.from_request(request)
    # The list, the rewards per group (pass@k) and the export follow the filter.
    listed, filter_errors = view_models.filtered(all_traces, filters)
    context: dict[str, Any] = {
        "nav": "datasets",
        "dataset": dataset,
        "filters": filters,
        "reward_choices": view_models.REWARD_CHOICES,
        "annotated_choices": view_models.ANNOTATED_CHOICES,
        "tool_error_choices": view_models.TOOL_ERROR_CHOICES,
        "filter_errors": filter_errors,
        "meta_inputs": [*filters.meta, ""][: view_models.META_FILTERS],
        "export_query": filters.list_query(),
        # The usage columns the dataset has figures for (the same whatever the filter).
        "usage_columns": usage_columns(traces=all_traces),
        "sort_choices": SORT_CHOICES,
        "label_choices": [label.name for label in labels_of(dataset=dataset)],
        # Said beside a search's results: they read those traces' text directly meanwhile.
        "being_indexed": traces_being_indexed_count(traces=all_traces) if filters.q else 0,
    }
    target = htmx_target(request)
    if target == "groups":
        context.update(view_models.groups_context(request, filters, all_traces, listed))
        # A key the reader picked goes in the address; the table loading itself does not.
        picked = request.htmx.trigger_name == "group"
        push_url = clean_url(request, filters.query()) if picked else None
        return render_page(request, TEMPLATE, context, partial="groups", push_url=push_url)
    if target == "traces":
        context.update(view_models.traces_context(request, listed, filters))
        page = context["page"].number
        push_url = clean_url(request, filters.query(page=page if page > 1 else ""))
        return render_page(request, TEMPLATE, context, partial="traces", push_url=push_url)
    context.update(_summary_context(request, dataset, all_traces))
    if "group" in request.GET:
        context.update(view_models.groups_context(request, filters, all_traces, listed))
    else:
        context["groups_later"] = True
    known = None if filters.active else context["summary"].traces
    context.update(view_models.traces_context(request, listed, filters, count=known))
    return render_page(request, TEMPLATE, context)


def _summary_context(request, dataset, all_traces) -> dict[str, Any]:
    """The head of the page: accuracy (computed and reported), the histogram, metadata."""
    distribution = reward_distribution(traces=all_traces)
    summary = reward_summary(traces=all_traces, distribution=distribution)
    histogram = reward_histogram(traces=all_traces, summary=summary, distribution=distribution)
    reported, reported_raw = view_models.reported_accuracy(dataset.metadata)
    computed = summary.accuracy
    return {
        "summary": summary,
        "computed_accuracy": computed,
        "reported_accuracy": reported,
        "reported_raw": reported_raw,
        "accuracy_gap": (
            abs(reported - computed) if reported is not None and computed is not None else None
        ),
        "last_update": max(filter(None, [dataset.updated_at, summary.latest])),
        "histogram": histogram,
        "chart": view_models.histogram_bars(histogram),
        "metadata_items": view_models.metadata_items(dataset.metadata),
        "metadata_hidden": view_models.metadata_hidden(dataset.metadata),
        "metadata_raw_url": reverse("api-dataset", args=[dataset.organization.slug, dataset.pk]),
        "can_upload": allows(actor(request), Action.WRITE, dataset),
        "can_manage": allows(actor(request), Action.MANAGE, dataset),
        "label_counts": label_counts(dataset=dataset),
        "usage": view_models.usage_view(usage_summary(traces=all_traces)),
    }


@require_GET
@policy_errors
def dataset_export(request, dataset_id: str):
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id)
    fmt = request.GET.get("format", "chat")
    if fmt not in EXPORT_FORMATS:
        return HttpResponseBadRequest(
            f"format must be one of {', '.join(EXPORT_FORMATS)}", content_type="text/plain"
        )
    # What the list shows: its filter and its sort (a part not understood is off, as there).
    filters = view_models.Filters.from_request(request)
    listed, _ = view_models.filtered(dataset_traces(dataset=dataset), filters)
    traces = traces_sorted(traces=listed, sort=filters.sort)
    response = StreamingHttpResponse(
        dataset_export_lines(dataset=dataset, fmt=fmt, traces=traces),
        content_type="application/x-ndjson",
    )
    response["Content-Disposition"] = dataset_export_disposition(dataset=dataset, fmt=fmt)
    return response


@page_write
def dataset_visibility(request, dataset_id: str):
    """Make a dataset public (readable by everyone, signed in or not) or private again:
    the owners' call."""
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id, action=Action.MANAGE)
    public = request.POST.get("public")
    if public not in ("0", "1"):
        return HttpResponseBadRequest("public must be 0 or 1", content_type="text/plain")
    dataset_update(dataset=dataset, is_public=public == "1")
    state = "public: anyone can read it, signed in or not" if public == "1" else "private"
    messages.success(request, f"{dataset.name} is now {state}.")
    return HttpResponseRedirect(reverse("dataset", args=[dataset.pk]))
