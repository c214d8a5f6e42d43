"""Inspect's .eval log (a zip): header, samples, scores and per-sample metadata, from real
logs written by inspect-ai 0.3.285 (Zstandard members, its default) and with deflated
members (the older default); several logs in one dataset keep each eval's metadata."""

import io
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from tests.ingest.formats.helpers import problems, read_with, traces
from traces.ingest.detect import detect
from traces.ingest.formats.inspect_eval import FORMAT
from traces.models import Block, Dataset, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOGS = ["inspect_arith_zstd.eval", "inspect_arith_deflate.eval"]


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_is_detected_from_its_content(name):
    with (REAL / name).open("rb") as handle:
        assert detect(handle) is FORMAT


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_gives_one_trace_per_sample(name):
    items = read_with(FORMAT, (REAL / name).read_bytes())
    assert problems(items) == []
    found = traces(items)
    assert [t.metadata["task_id"] for t in found] == ["arith/one", "arith/two"]
    assert [t.metadata["reward"] for t in found] == [1, 0]
    assert [t.metadata["metadata"] for t in found] == [{"level": "easy"}, {"level": "hard"}]
    short = found[0].metadata["eval"]["eval_id"][:6]
    assert [t.name for t in found] == [
        f"arith/one epoch 1 mockllm/model (eval {short})",
        f"arith/two epoch 1 mockllm/model (eval {short})",
    ]
    assert found[0].metadata["eval"]["benchmark"] == "arith"
    assert [len(t.events) for t in found] == [5, 5]


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_imports_with_exact_counts(org, name):
    with (REAL / name).open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(name, handle)])
    assert result.formats == {name: "inspect-eval"}
    assert (result.traces, result.blocks) == (2, 12)
    assert Counter(Block.objects.values_list("sub_type", flat=True)) == {
        "MESSAGE": 8, "TOOL_CALL": 2, "TOOL_RESULT": 2
    }  # fmt: skip
    assert Dataset.objects.get().metadata["model"] == "mockllm/model"
    assert sorted(Trace.objects.values_list("reward", flat=True)) == [0.0, 1.0]


def test_two_logs_in_one_dataset_keep_each_evals_metadata_and_unique_names(org):
    files = [(name, (REAL / name).open("rb")) for name in LOGS]
    result = trace_import(organization=org, dataset_name="d", files=files)
    assert result.traces == 4
    evals = {t.metadata["eval"]["eval_id"] for t in Trace.objects.all()}
    assert len(evals) == 2
    stored = list(Trace.objects.all())
    assert {t.metadata["task_id"] for t in stored} == {"arith/one", "arith/two"}
    assert len({t.name for t in stored}) == 4  # the same task and model, run twice


def test_a_zip_with_a_broken_sample_names_the_member():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("header.json", '{"eval": {"task": "t"}}')
        archive.writestr("samples/1_epoch_1.json", "{not json")
    [found] = problems(read_with(FORMAT, buffer.getvalue()))
    assert found.location == {"trace": 0, "member": "samples/1_epoch_1.json"}
    assert found.message.startswith("a broken sample")
