import re
from io import StringIO

import orjson
import pytest
from django.core.management import call_command
from django.db import connection

from benchmarks.realruns import generate_real
from tests.conftest import FIXTURES
from traces.models import Block, Dataset, Organization, Trace

RUNS = FIXTURES / "tau2_runs"

pytestmark = pytest.mark.slow  # runs a benchmark


@pytest.mark.django_db(transaction=True)
def test_import_benchmark_runs_at_a_tiny_size() -> None:
    # 1 MB: at 0.02 MB the floor's CPU time printed as 0.00 on a fast machine
    out = StringIO()
    call_command(
        "benchmark", "import", "--size-mb", "1", "--data", str(RUNS), "--long-trace-mb", "0.01",
        "--rounds", "2", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    text = out.getvalue()
    rows = {
        m["phase"]: int(m["blocks"])
        for m in re.finditer(r"^(?P<phase>import|floor)\s+[\d.]+\s+(?P<blocks>\d+)\s", text, re.M)
    }
    assert rows.keys() == {"import", "floor"}, text
    assert rows["import"] == rows["floor"] > 0
    assert re.search(r"database (sqlite|postgresql)$", text, re.M), text
    assert re.search(r"^floor: orjson parse of every line \+ .* no index, constraint", text, re.M)
    assert re.search(r"^ratio import/floor: \d+\.\d\d \(target <= 2\.0\) (PASS|FAIL)$", text, re.M)
    every = re.search(r"^every round \(import / floor seconds = ratio\): (.*)$", text, re.M)
    assert every and len(every[1].split(", ")) == 2, text
    assert re.search(r"^rounds: 2, floor then import, each phase after ", text, re.M), text
    assert re.search(r"^search finds imported text when the import returns: yes \('", text, re.M)
    phases = re.findall(r"^(?:import|floor)\s.* MB\s+(\d+\.\d\d)\s+(\d+\.\d\d)$", text, re.M)
    assert len(phases) == 2 and all(float(cpu) > 0 for cpu, _ in phases), text
    if connection.vendor == "sqlite":
        assert re.search(r"^CPU ratio import/floor: \d+\.\d\d$", text, re.M), text
    assert re.search(r"^peak memory growth: \d+ MB \(target <= \d+ MB\) (PASS|FAIL)$", text, re.M)
    assert re.search(
        r"^long trace: one trace of [\d.]+ MB \(\d+ events\) .* = [\d.]+x the trace "
        r"\(target <= 2\.0x\) (PASS|FAIL)$", text, re.M,
    ), text  # fmt: skip
    assert not Dataset.objects.exists()
    assert not Trace.objects.exists()
    assert not Block.objects.exists()
    assert not Organization.objects.exists()


def test_the_generated_runs_repeat_the_real_ones_with_fresh_call_ids(tmp_path) -> None:
    made = generate_real(tmp_path / "runs.jsonl", size_mb=0.01, data=RUNS)
    lines = [orjson.loads(line) for line in made.path.read_bytes().splitlines()]
    assert made.traces == len(lines) > 2 and made.bytes >= 10_000
    call_ids = [
        call["id"] for line in lines for event in line["messages"]
        for call in event.get("tool_calls") or ()
    ]  # fmt: skip
    assert len(call_ids) == len(set(call_ids))
    second_copy = lines[2]
    assert second_copy["messages"][1]["tool_calls"][0]["id"] == "call_a1-c1"
    assert second_copy["messages"][2]["id"] == "call_a1-c1"
    # Text that only looks like an id is kept as it was.
    assert second_copy["messages"][6]["content"] == "Done: call_a1 is closed."
    assert second_copy["metadata"]["reward"] == 1.0


def test_the_benchmark_refuses_a_folder_without_runs(tmp_path) -> None:
    with pytest.raises(ValueError, match="holds no tau2-bench simulation"):
        generate_real(tmp_path / "runs.jsonl", size_mb=1, data=tmp_path)
