"""traces/trials.py: the task and trial a trace's metadata names."""

import pytest

from traces.trials import TASK_CHARS, trace_task_trial


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"task_id": "7", "trial": 2}, ("7", 2)),  # tau2, tau-bench
        ({"task_id": "arith/3", "sample_id": 3, "epoch": 4}, ("arith/3", 4)),  # Inspect
        ({"instance_id": "django__django-1"}, ("django__django-1", None)),  # SWE-bench
        ({"task_id": 12, "trial": "3"}, ("12", 3)),
        ({"task_id": None, "instance_id": "x"}, ("x", None)),
        ({"task_id": {"not": "a scalar"}, "trial": True}, ("", None)),
        ({"trial": 1.5}, ("", None)),
        ({"trial": 10**20}, ("", None)),
        ({"task_id": "a\x00b"}, ("ab", None)),
        ([1, 2], ("", None)),
        ({}, ("", None)),
    ],
)
def test_task_and_trial_from_the_keys_real_formats_write(metadata, expected):
    assert trace_task_trial(metadata=metadata) == expected


def test_a_long_task_id_is_cut_for_the_sort_column_only():
    task, _ = trace_task_trial(metadata={"task_id": "t" * 5000})
    assert len(task) == TASK_CHARS
