"""Which task a trace ran and which trial of it it was, read from its metadata by the keys
real formats write (tau2 and tau-bench `task_id`/`trial`, Inspect `task_id`/`epoch`,
SWE-bench `instance_id`, ...). Kept on the trace as `task` and `trial` columns, so that
the trace list can show and sort them without reading any metadata."""

from typing import Any

# The usual task keys, first found wins (also the default "group by" of the dataset page).
TASK_KEYS = (
    "task_id", "instance_id", "question_id", "task", "problem_id", "sample_id", "example_id",
)  # fmt: skip
TRIAL_KEYS = ("trial", "epoch", "attempt", "run")
# A sort key, not the value: metadata keeps the whole of it (and a PostgreSQL index
# entry has a size limit).
TASK_CHARS = 200
TRIAL_LIMIT = 2**31 - 1


def _task_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | str):
        text = str(value).replace("\x00", "")
        return text[:TASK_CHARS] if text else None
    return None


def _trial_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) < 10:
        value = int(value.strip())
    if isinstance(value, int) and -TRIAL_LIMIT <= value <= TRIAL_LIMIT:
        return value
    return None


def trace_task_trial(*, metadata: Any) -> tuple[str, int | None]:
    """The task id (as text, "" when none) and the trial number (None when none) that
    `metadata` names."""
    if not isinstance(metadata, dict):
        return "", None
    task = next((t for k in TASK_KEYS if (t := _task_text(metadata.get(k))) is not None), "")
    trial = next((n for k in TRIAL_KEYS if (n := _trial_number(metadata.get(k))) is not None), None)
    return task, trial
