"""Creating, changing and deleting traces through the API."""

from typing import Any

from django.db import transaction

from traces.checks import check_no_nul, check_object
from traces.errors import ValidationFailed
from traces.models import Dataset, Organization, Trace
from traces.services.annotations import trace_reward
from traces.services.datasets import dataset_lock_next_index
from traces.trials import trace_task_trial
from traces.validation import check_rewards, merge_patch

NAME_MAX = 500


def _object(value: Any, field_name: str) -> dict[str, Any]:
    """`value` if it is a JSON object (metadata, extra, or a merge patch of one) whose
    reward, if a number, is in range."""
    check_rewards(check_object(value, field_name), field_name=field_name)
    return value


def trace_create(
    *,
    organization: Organization,
    dataset: Dataset | None,
    name: str = "",
    metadata: dict[str, Any] | None = None,
) -> Trace:
    metadata = _object(metadata if metadata is not None else {}, "metadata")
    if len(name) > NAME_MAX:
        raise ValidationFailed(
            f"name has at most {NAME_MAX} characters", {"field": "name", "rule": "max_length"}
        )
    check_no_nul(name, "name")
    task, trial = trace_task_trial(metadata=metadata)
    with transaction.atomic():
        index = dataset_lock_next_index(dataset=dataset) if dataset is not None else 0
        trace = Trace.objects.create(
            organization=organization,
            dataset=dataset,
            index=index,
            name=name,
            metadata=metadata,
            reward=trace_reward(extra={}, metadata=metadata),
            task=task,
            trial=trial,
        )
        if dataset is not None:
            dataset.save(update_fields=["updated_at"])
    return trace


def trace_patch(
    *,
    trace: Trace,
    extra: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    name: str | None = None,
) -> Trace:
    """Merge-patch `extra` and `metadata` (RFC 7386) under a row lock, so that two
    annotators patching at once both keep their change."""
    with transaction.atomic():
        locked = Trace.objects.select_for_update().get(pk=trace.pk)
        changed = ["reward", "updated_at"]
        if extra is not None:
            locked.extra = merge_patch(locked.extra, _object(extra, "extra"))
            changed.append("extra")
        if metadata is not None:
            locked.metadata = merge_patch(locked.metadata, _object(metadata, "metadata"))
            locked.task, locked.trial = trace_task_trial(metadata=locked.metadata)
            changed += ["metadata", "task", "trial"]
        if name is not None:
            if len(name) > NAME_MAX:
                raise ValidationFailed(
                    f"name has at most {NAME_MAX} characters",
                    {"field": "name", "rule": "max_length"},
                )
            locked.name = check_no_nul(name, "name")
            changed.append("name")
        locked.reward = trace_reward(extra=locked.extra, metadata=locked.metadata)
        # Only what this patch changes: the block count is kept by the block writes.
        locked.save(update_fields=changed)
    return locked
