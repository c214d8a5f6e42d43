"""Uploads from the browser: where the actor may upload (traces.policy), then `trace_import`
(the one write path)."""

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from traces.checks import check_no_nul
from traces.errors import Forbidden, NotFound, ValidationFailed
from traces.models import Dataset, Organization
from traces.policy import Action, Actor, organizations_where, require
from traces.selectors.access import dataset_for
from traces.services.datasets import dataset_name_check
from traces.services.imports import ImportResult, trace_import


def upload_target(
    *, actor: Actor, dataset_id: str = "", dataset_name: str = "", organization_slug: str = ""
) -> tuple[Organization, str, Dataset | None]:
    """Where an upload goes: an existing dataset by id (given back, so that the import
    writes into it, or answers NotFound if it was deleted meanwhile, never into a new
    dataset of its old name), or a (new) name in an organization.

    Raises NotFound for a dataset or organization the actor cannot see, Forbidden where
    they may only read, ValidationFailed for a missing or bad name or organization.
    """
    if dataset_id:
        dataset = dataset_for(actor=actor, dataset_id=dataset_id, action=Action.WRITE)
        return dataset.organization, dataset.name, dataset
    name = dataset_name_check(dataset_name)
    if organization_slug:
        check_no_nul(organization_slug, "organization")
        organization = Organization.objects.filter(slug=organization_slug).first()
        if organization is None:
            raise NotFound(f"no organization {organization_slug!r}", {"org": organization_slug})
        require(actor, Action.WRITE, organization)
    else:
        found = list(organizations_where(actor, Action.WRITE)[:2])
        if not found:
            raise Forbidden(
                "you are not an owner or member of any organization",
                {"field": "organization", "rule": "permission"},
            )
        if len(found) > 1:
            raise ValidationFailed(
                "choose the organization of the new dataset",
                {"field": "organization", "rule": "required"},
            )
        organization = found[0]
    return organization, name, None


def uploaded_files(files: Iterable[Any]) -> Iterator[tuple[str, BinaryIO]]:
    """Uploaded files (Django UploadedFile objects) as `trace_import` reads them: the
    binary file under each (Python's own line splitting, no copy), one at a time, each
    closed once read, so that a request of thousands of files holds one read buffer."""
    for uploaded in files:
        try:
            yield uploaded.name, getattr(uploaded, "file", uploaded)
        finally:
            uploaded.close()


def traces_upload(
    *,
    actor: Actor,
    files: Sequence[Any],
    dataset_id: str = "",
    dataset_name: str = "",
    organization_slug: str = "",
    allow_duplicates: bool = False,
) -> ImportResult:
    """Import uploaded files (Django UploadedFile objects, streamed from their temporary
    files) into the chosen dataset. All or nothing: raises ImportFailed with every
    problem, and then nothing was written."""
    if not files:
        raise ValidationFailed("choose one or more files", {"field": "files", "rule": "required"})
    organization, name, dataset = upload_target(
        actor=actor,
        dataset_id=dataset_id,
        dataset_name=dataset_name,
        organization_slug=organization_slug,
    )
    return trace_import(
        organization=organization,
        dataset_name=name,
        dataset=dataset,
        files=uploaded_files(files),
        allow_duplicates=allow_duplicates,
    )
