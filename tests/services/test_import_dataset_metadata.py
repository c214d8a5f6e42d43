"""An upload's dataset metadata (a JSONL's first `{"metadata": ...}` line, an Inspect log's
eval) is added to the dataset's, never over it: a key the dataset has keeps its value
(the user may have set it), and a key the upload's files disagree on (the accuracies of
several evals) is not set at all; each is named in the result, and every trace keeps its
own file's metadata."""

import io

import orjson

from traces.models import Dataset
from traces.services.datasets import dataset_create, dataset_update
from traces.services.imports import SKIPPED_IN_DATASET, SKIPPED_IN_UPLOAD, trace_import


def jsonl(metadata: dict, question: str) -> bytes:
    lines = [{"metadata": metadata}, {"messages": [{"role": "user", "content": question}]}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def upload(org, dataset, *files: tuple[str, bytes]):
    return trace_import(dataset=dataset, files=[(name, io.BytesIO(body)) for name, body in files])


def test_a_key_the_dataset_has_keeps_its_value_and_the_result_names_it(org):
    dataset = dataset_create(organization=org, name="runs")
    dataset_update(dataset=dataset, metadata={"accuracy": 0.9, "model": "mine"})
    brought = {"accuracy": 0.5, "model": "mine", "k": 1}
    result = upload(org, dataset, ("a.jsonl", jsonl(brought, "q")))
    kept = {"accuracy": 0.9, "model": "mine", "k": 1}
    assert Dataset.objects.get(pk=dataset.pk).metadata == kept
    assert result.metadata_kept == [
        {"key": "accuracy", "file": "a.jsonl", "reason": SKIPPED_IN_DATASET}
    ]
    assert result.traces == 1


def test_keys_the_files_of_one_upload_disagree_on_are_not_set(org):
    dataset = dataset_create(organization=org, name="evals")
    result = upload(
        org,
        dataset,
        ("a.jsonl", jsonl({"accuracy": 0.75, "suite": "arith"}, "one")),
        ("b.jsonl", jsonl({"accuracy": 0.25, "suite": "arith"}, "two")),
        ("c.jsonl", jsonl({"accuracy": 0.0, "suite": "arith"}, "three")),
    )
    assert Dataset.objects.get(pk=dataset.pk).metadata == {"suite": "arith"}
    assert result.metadata_kept == [
        {"key": "accuracy", "file": "a.jsonl", "reason": SKIPPED_IN_UPLOAD},
        {"key": "accuracy", "file": "b.jsonl", "reason": SKIPPED_IN_UPLOAD},
        {"key": "accuracy", "file": "c.jsonl", "reason": SKIPPED_IN_UPLOAD},
    ]
    assert result.traces == 3


def test_files_that_agree_set_the_key_and_report_nothing(org):
    dataset = dataset_create(organization=org, name="same")
    files = [("a.jsonl", jsonl({"suite": "x"}, "one")), ("b.jsonl", jsonl({"suite": "x"}, "two"))]
    result = upload(org, dataset, *files)
    assert Dataset.objects.get(pk=dataset.pk).metadata == {"suite": "x"}
    assert result.metadata_kept == []
