"""The upload page: files into a chosen or new dataset, through `traces_upload` only.

Without JavaScript the form is a plain multipart POST: success redirects to the dataset
(whose page shows what the upload did: explorer/upload_summary.py),
failure answers the page with every problem (422). With it, htmx posts the same form
(hx-encoding="multipart/form-data"; static/js/app.js shows the upload's progress): success
answers HX-Redirect to the dataset, failure the page's `result` partial, with the problems
(422) or what else was wrong (400/403/404/413/503), as explorer/views/base.py says.
"""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import OperationalError
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from explorer.access import actor
from explorer.upload_summary import upload_summary_html
from explorer.views.base import render_page, wants_partial
from traces.errors import (
    RETRY_AFTER_SECONDS,
    Forbidden,
    ImportFailed,
    NotFound,
    ValidationFailed,
    as_database_busy,
)
from traces.policy import Action, datasets_where, organizations_where
from traces.selectors.access import dataset_for
from traces.selectors.datasets import datasets_by_organization
from traces.services.uploads import traces_upload

TEMPLATE = "explorer/upload.html"
PROBLEM_COLUMNS = ("file", "line", "trace", "event", "block", "field", "rule", "message")


def _context(request, **more: Any) -> dict[str, Any]:
    organizations = list(organizations_where(actor(request), Action.WRITE))
    groups = datasets_by_organization(datasets=datasets_where(actor(request), Action.WRITE))
    chosen = more.pop("chosen", None)
    if chosen is None:
        chosen = request.GET.get("dataset", "")
    read_only = None
    if chosen and chosen not in {d.pk for _, items in groups for d in items}:
        # Visible (a viewer's, or public) but not writable: say so; unknown: ignore.
        try:
            read_only = dataset_for(actor=actor(request), dataset_id=chosen)
        except NotFound:
            pass
        chosen = ""
    return {
        "nav": "upload",
        "organizations": organizations,
        "dataset_groups": groups,
        "several_orgs": len(organizations) > 1,
        "chosen": chosen,
        "read_only": read_only,
        "new_name": "",
        "chosen_org": "",
        "problems": [],
        "problem_columns": PROBLEM_COLUMNS,
        "error": "",
        "max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        "max_bytes": settings.UPLOAD_MAX_BYTES,
        **more,
    }


def _answer(request, status: int, **more: Any):
    """The page with what went wrong, or for htmx its `result` partial."""
    return render_page(
        request, TEMPLATE, _context(request, **more), partial="result", status=status
    )


@require_http_methods(["GET", "POST"])
@login_required
def upload_page(request):
    if request.method == "GET":
        return render_page(request, TEMPLATE, _context(request))
    # More than UPLOAD_MAX_FILES files or UPLOAD_MAX_BYTES bytes never reach this view:
    # explorer/upload_limits.py answers them with `upload_refused`. static/js/app.js
    # checks both (data-max-files, data-max-bytes) before sending.
    dataset_id = request.POST.get("dataset", "").strip()
    name = request.POST.get("name", "").strip()
    organization = request.POST.get("organization", "").strip()
    files = request.FILES.getlist("files")
    allow_duplicates = request.POST.get("allow_duplicates") == "1"
    keep = {
        "chosen": dataset_id, "new_name": name, "chosen_org": organization,
        "allow_duplicates": allow_duplicates,
    }  # fmt: skip
    try:
        result = traces_upload(
            actor=actor(request),
            files=files,
            dataset_id=dataset_id,
            dataset_name=name,
            organization_slug=organization,
            allow_duplicates=allow_duplicates,
        )
    except ImportFailed as exc:
        rows = [[p.get(c) for c in PROBLEM_COLUMNS] for p in exc.problems]
        return _answer(request, 422, problems=rows, file_names=[f.name for f in files], **keep)
    except Forbidden as exc:
        return _answer(request, 403, error=_sentence(exc.message), **keep)
    except NotFound:
        error = "There is no such dataset or organization, or it is not yours."
        return _answer(request, 404, error=error, **keep)
    except ValidationFailed as exc:
        return _answer(request, 400, error=_sentence(exc.message), **keep)
    except OperationalError as exc:  # SQLite busy past its timeout: say so on this page
        busy = as_database_busy(exc)
        if busy is None:
            raise
        response = _answer(request, 503, error=_sentence(busy.message), **keep)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    dataset = result.dataset
    # What it did, on the dataset page it lands on (whether htmx or the plain form).
    messages.success(request, upload_summary_html(result), extra_tags="upload-summary")
    url = reverse("dataset", args=[dataset.pk])
    return HttpResponseClientRedirect(url) if wants_partial(request) else redirect(url)


def upload_refused(request, message: str):
    """The page (or, for htmx, its result partial) saying why the upload was refused
    before it was read: 413."""
    return _answer(request, 413, error=_sentence(message))


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else text
