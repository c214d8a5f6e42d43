"""A dataset managed in the browser: edit its description and metadata (members), rename it
(owners), and delete it after a confirmation step (owners). Writes go through
traces.services (the dataset's row locked while it is written); the policy is asked for
each part. The page is templates/explorer/dataset_settings.html."""

from typing import Any

import orjson
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from explorer.access import actor, policy_errors
from explorer.views.base import render_page
from traces import jsontext
from traces.errors import TraceStoreError
from traces.models import Dataset
from traces.policy import Action, allows, require
from traces.selectors.access import dataset_for
from traces.selectors.datasets import dataset_traces
from traces.services.datasets import dataset_update
from traces.services.deletion import dataset_delete

TEMPLATE = "explorer/dataset_settings.html"
METADATA_MAX_CHARS = 1_000_000


class FormError(ValueError):
    pass


def _metadata_from(text: str) -> dict[str, Any]:
    if len(text) > METADATA_MAX_CHARS:
        raise FormError(f"The metadata has at most {METADATA_MAX_CHARS:,} characters.")
    if not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise FormError(f"The metadata is not JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise FormError("The metadata must be a JSON object: {\"key\": value, …}.")
    return jsontext.loads(text)  # key order and every string as written


def _context(request, dataset: Dataset, **more: Any) -> dict[str, Any]:
    who = actor(request)
    metadata = dataset.metadata if isinstance(dataset.metadata, dict) else {}
    return {
        "nav": "datasets",
        "dataset": dataset,
        "can_manage": allows(who, Action.MANAGE, dataset),
        "form": {
            "name": dataset.name,
            "description": dataset.description,
            "metadata": orjson.dumps(metadata, option=orjson.OPT_INDENT_2).decode()
            if metadata
            else "",
        },
        **more,
    }


@require_http_methods(["GET", "POST"])
@login_required
@policy_errors
def dataset_edit(request, dataset_id: str):
    """GET: the form; POST: save what changed (a new name needs an owner)."""
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id, action=Action.WRITE)
    if request.method == "GET":
        return render_page(request, TEMPLATE, _context(request, dataset, mode="edit"))
    post = request.POST
    form = {
        "name": post.get("name", dataset.name),
        "description": post.get("description", ""),
        "metadata": post.get("metadata", ""),
    }
    renamed = form["name"].strip() != dataset.name
    if renamed:
        require(actor(request), Action.MANAGE, dataset)  # a refusal is the 403 page
    try:
        metadata = _metadata_from(form["metadata"])
        dataset_update(
            dataset=dataset,
            name=form["name"] if renamed else None,
            description=form["description"].replace("\r\n", "\n"),
            metadata=metadata,
            replace_metadata=True,
        )
    except (FormError, TraceStoreError) as exc:
        message = exc.message if isinstance(exc, TraceStoreError) else str(exc)
        context = _context(request, dataset, mode="edit", error=message)
        context["form"] = form
        return render_page(request, TEMPLATE, context, partial="edit_form", status=422)
    messages.success(request, f"{dataset.name} is saved.")
    return HttpResponseRedirect(reverse("dataset", args=[dataset.pk]))


@require_http_methods(["GET", "POST"])
@login_required
@policy_errors
def dataset_remove(request, dataset_id: str):
    """GET: the confirmation step (what goes, and the name to type); POST: delete."""
    dataset = dataset_for(actor=actor(request), dataset_id=dataset_id, action=Action.MANAGE)
    traces = dataset_traces(dataset=dataset).count()
    if request.method == "POST":
        if request.POST.get("confirm", "").strip() == dataset.name:
            name = dataset.name
            dataset_delete(dataset=dataset)
            messages.success(request, f"{name} is deleted, with its {traces} traces.")
            return HttpResponseRedirect(reverse("datasets"))
        context = _context(
            request, dataset, mode="delete", traces=traces,
            error="Type the dataset's name exactly to delete it.",
        )  # fmt: skip
        return render_page(request, TEMPLATE, context, partial="delete_form", status=422)
    return render_page(request, TEMPLATE, _context(request, dataset, mode="delete", traces=traces))
