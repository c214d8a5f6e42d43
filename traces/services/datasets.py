from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from traces.errors import ValidationFailed
from traces.models import Dataset, Organization

NAME_MAX = 200


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
    return name.strip()


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


def dataset_lock_next_index(*, dataset: Dataset) -> int:
    """Lock the dataset for the current transaction; return its next free trace index."""
    Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
    top = dataset.traces.aggregate(top=Max("index"))["top"]
    return 0 if top is None else top + 1
