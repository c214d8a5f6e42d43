import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import FIXTURES
from traces.models import Dataset, Trace


@pytest.mark.django_db
def test_it_imports_files_and_prints_a_summary(tmp_path):
    out = StringIO()
    call_command(
        "import_traces", str(FIXTURES / "spec000_full_trace.json"),
        str(FIXTURES / "spec004_example_trace.json"), "--dataset", "mine", "--org", "acme",
        stdout=out,
    )  # fmt: skip
    assert out.getvalue().startswith("Imported 2 traces, 9 blocks, 0 images into dataset 'mine'")
    assert Dataset.objects.get().organization.slug == "acme"


@pytest.mark.django_db
def test_it_fails_with_the_problem_list_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = json.dumps([{"role": "user", "content": "fine"}])
    wrong = json.dumps([{"role": "tool", "tool_call_id": "x", "content": "?"}])
    bad.write_text(f"{good}\n{wrong}\n")
    err = StringIO()
    with pytest.raises(CommandError, match="1 problem found; nothing was written"):
        call_command("import_traces", str(bad), "--dataset", "mine", stderr=err)
    assert f"{bad}, line 2, trace 1, event 0, field tool_call_id:" in err.getvalue()
    assert "[VALIDATION/unknown_call_id]" in err.getvalue()
    assert not Trace.objects.exists() and not Dataset.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_path_that_is_not_a_file(tmp_path):
    with pytest.raises(CommandError, match="not a file"):
        call_command("import_traces", str(tmp_path / "missing.json"), "--dataset", "x")


@pytest.mark.django_db
def test_without_org_it_says_which_organization_it_used():
    out = StringIO()
    call_command(
        "import_traces", str(FIXTURES / "spec000_full_trace.json"), "--dataset", "mine",
        stdout=out,
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "No --org given: importing into organization 'default' (give --org <slug> to choose one)."
    )
    assert "into dataset 'mine' (ds_" in lines[1] and "of organization 'default' in" in lines[1]
    assert Dataset.objects.get().organization.slug == "default"


def test_its_progress_says_when_every_byte_is_read_and_the_write_runs():
    from tqdm import tqdm

    from traces.management.commands.import_traces import progress_of

    bar = tqdm(total=100, file=StringIO())
    advance = progress_of(bar)
    advance(60)
    assert bar.desc == ""
    advance(40)
    assert bar.n == 100 and bar.desc == "read; writing"
    bar.close()


@pytest.mark.django_db
def test_it_starts_no_thread_of_its_own(tmp_path):
    """tqdm starts a monitor thread for every bar, even one not shown; beside it, the
    import's part readers would not stage their rows with SQLite (traces/forked.py
    `alone`: attacker review)."""
    import threading

    call_command(
        "import_traces", str(FIXTURES / "spec000_full_trace.json"), "--dataset", "mine",
        "--org", "acme", "--no-progress", stdout=StringIO(),
    )  # fmt: skip
    started = [t for t in threading.enumerate() if type(t).__module__.startswith("tqdm")]
    assert started == []
