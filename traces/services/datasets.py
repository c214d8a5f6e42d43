from collections.abc import Callable
from typing import Any

import orjson
from django.db import IntegrityError, transaction
from django.db.models import Max

from traces.checks import check_no_nul, check_object
from traces.errors import NotFound, TraceStoreError, ValidationFailed
from traces.models import Dataset, Organization
from traces.validation import check_accuracy

NAME_MAX = 200


class DatasetNameTaken(TraceStoreError, code="DUPLICATE_NAME", http_status=409):
    """The organization has a dataset of that name already."""


def dataset_name_check(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed(
            "a dataset name must be a non-empty string", {"field": "name", "rule": "required"}
        )
    if len(name) > NAME_MAX:
        raise ValidationFailed(
            f"a dataset name has at most {NAME_MAX} characters",
            {"field": "name", "rule": "max_length"},
        )
    return check_no_nul(name.strip(), "name")


def dataset_get_or_create(
    *, organization: Organization, name: str, metadata: dict[str, Any] | None = None
) -> tuple[Dataset, bool]:
    name = dataset_name_check(name)
    try:
        return Dataset.objects.get(organization=organization, name=name), False
    except Dataset.DoesNotExist:
        pass
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                organization=organization, name=name, metadata=metadata or {}
            )
            return dataset, True
    except IntegrityError:  # a concurrent import created it first
        return Dataset.objects.get(organization=organization, name=name), False


def dataset_gone(dataset: Dataset) -> NotFound:
    """The error for a dataset deleted while it was being written to: the 404 a request
    for it would have answered (traces.policy's words)."""
    return NotFound(f"no dataset {dataset.pk!r}", {"dataset_id": dataset.pk})


def dataset_lock(*, dataset: Dataset) -> Dataset:
    """The dataset's row as it is now, locked for the current transaction; NotFound if it
    was deleted meanwhile (the deletion locks it too: traces.services.deletion)."""
    locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
    if locked is None:
        raise dataset_gone(dataset)
    return locked


def dataset_lock_next_index(*, dataset: Dataset) -> int:
    """Lock the dataset for the current transaction; return its next free trace index."""
    Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
    top = dataset.traces.aggregate(top=Max("index"))["top"]
    return 0 if top is None else top + 1


def _check_metadata(metadata: Any, field_name: str = "metadata") -> dict[str, Any]:
    check_accuracy(check_object(metadata, field_name), field_name=field_name)
    return metadata


def dataset_create(
    *,
    organization: Organization,
    name: str,
    description: str = "",
    metadata: dict[str, Any] | None = None,
    is_public: bool = False,
) -> Dataset:
    name = dataset_name_check(name)
    check_no_nul(description, "description")
    metadata = _check_metadata(metadata if metadata is not None else {})
    try:
        with transaction.atomic():
            return Dataset.objects.create(
                organization=organization,
                name=name,
                description=description,
                metadata=metadata,
                is_public=is_public,
            )
    except IntegrityError:
        raise DatasetNameTaken(
            f"a dataset named {name!r} already exists", {"field": "name", "rule": "unique"}
        ) from None


def _write_locked(dataset: Dataset, change: Callable[[Dataset], list[str]]) -> Dataset:
    """Apply `change` to the dataset's row as it is now, locked until the write, and save
    only the fields it names (and updated_at): whatever instance the caller holds, however
    old, no other field and no concurrent write is undone. The caller's instance is
    refreshed with what was written. A dataset deleted meanwhile is NotFound."""
    with transaction.atomic():
        locked = dataset_lock(dataset=dataset)
        changed = change(locked)
        locked.save(update_fields=[*changed, "updated_at"])
    for field in Dataset._meta.concrete_fields:
        setattr(dataset, field.attname, getattr(locked, field.attname))
    return dataset


def dataset_update(
    *,
    dataset: Dataset,
    name: str | None = None,
    description: str | None = None,
    metadata: dict[str, Any] | None = None,
    replace_metadata: bool = False,
    is_public: bool | None = None,
) -> Dataset:
    """Change what was given, and only that; metadata is merged (RFC 7386) into the stored
    metadata unless `replace_metadata`."""
    from traces.validation import merge_patch

    if name is not None:
        name = dataset_name_check(name)
    if description is not None:
        check_no_nul(description, "description")
    if metadata is not None:
        _check_metadata(metadata)

    def change(row: Dataset) -> list[str]:
        changed = []
        if name is not None:
            row.name = name
            changed.append("name")
        if description is not None:
            row.description = description
            changed.append("description")
        if metadata is not None:
            row.metadata = metadata if replace_metadata else merge_patch(row.metadata, metadata)
            changed.append("metadata")
        if is_public is not None:
            row.is_public = is_public
            changed.append("is_public")
        return changed

    try:
        return _write_locked(dataset, change)
    except IntegrityError:
        raise DatasetNameTaken(
            f"a dataset named {name!r} already exists", {"field": "name", "rule": "unique"}
        ) from None


def dataset_metadata_add(*, dataset: Dataset, metadata: dict[str, Any]) -> Dataset:
    """Add an import's dataset metadata (a file's first line) to the stored metadata: the
    keys it lacks only. A key the dataset has keeps its value, whoever set it (the user in
    the browser, an earlier import): an import never silently replaces what is there
    (`metadata_kept` tells the importer which keys it brought another value for)."""

    def change(row: Dataset) -> list[str]:
        stored = row.metadata if isinstance(row.metadata, dict) else {}
        added = {key: value for key, value in metadata.items() if key not in stored}
        if not added:
            return []
        row.metadata = {**stored, **added}
        return ["metadata"]

    return _write_locked(dataset, change)


def metadata_kept(*, stored: Any, brought: dict[str, Any]) -> list[str]:
    """The keys of `brought` that `dataset_metadata_add` leaves as stored: set already, to
    another value."""
    stored = stored if isinstance(stored, dict) else {}
    return [
        key for key, value in brought.items() if key in stored and not same_json(stored[key], value)
    ]


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value: of the same types (Python's `1 == True`
    and `1 == 1.0` do not count) with objects' keys in any order."""
    option = orjson.OPT_SORT_KEYS
    try:
        return orjson.dumps(a, option=option) == orjson.dumps(b, option=option)
    except (TypeError, orjson.JSONEncodeError):
        return a == b
