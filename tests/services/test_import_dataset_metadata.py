"""An upload's dataset metadata (a JSONL's first `{"metadata": ...}` line, an Inspect log's
eval) is added to the dataset's, never over it: a key the dataset has keeps its value
(the user may have set it), and a key the upload's files disagree on (the accuracies of
several evals) is not set at all; each is named in the result, and every trace keeps its
own file's metadata."""

import io

import orjson

from traces.models import Dataset, Trace
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
    by_question = {
        t.metadata.get("accuracy"): t.name for t in Trace.objects.filter(dataset=dataset)
    }
    assert set(by_question) == {0.75, 0.25, 0.0}
    assert all("suite" not in t.metadata for t in Trace.objects.filter(dataset=dataset))


def test_a_key_only_some_files_give_goes_to_their_traces_not_the_dataset(org):
    dataset = dataset_create(organization=org, name="mixed")
    result = upload(
        org,
        dataset,
        ("a.jsonl", jsonl({"model": "m1", "k": 1}, "one")),
        ("b.jsonl", jsonl({"k": True}, "two")),  # 1 and true are not the same value
        ("c.jsonl", b'{"messages": [{"role": "user", "content": "three"}]}\n'),
    )
    assert Dataset.objects.get(pk=dataset.pk).metadata == {}
    metadata = {
        t.metadata.get("model", "-") + str(t.metadata.get("k", "-")): t.index
        for t in Trace.objects.filter(dataset=dataset)
    }
    assert metadata == {"m11": 0, "-True": 1, "--": 2}
    assert {(kept["key"], kept["file"]) for kept in result.metadata_kept} == {
        ("model", "a.jsonl"),
        ("k", "a.jsonl"),
        ("k", "b.jsonl"),
    }


def test_a_traces_own_key_wins_over_its_files(org):
    dataset = dataset_create(organization=org, name="own")
    trace = {"messages": [{"role": "user", "content": "q"}], "metadata": {"model": "mine"}}
    own = orjson.dumps({"metadata": {"model": "file"}}) + b"\n" + orjson.dumps(trace) + b"\n"
    upload(org, dataset, ("a.jsonl", own), ("b.jsonl", jsonl({"model": "other"}, "two")))
    assert sorted(t.metadata["model"] for t in Trace.objects.filter(dataset=dataset)) == [
        "mine",
        "other",
    ]


def test_files_that_agree_set_the_key_and_report_nothing(org):
    dataset = dataset_create(organization=org, name="same")
    files = [("a.jsonl", jsonl({"suite": "x"}, "one")), ("b.jsonl", jsonl({"suite": "x"}, "two"))]
    result = upload(org, dataset, *files)
    assert Dataset.objects.get(pk=dataset.pk).metadata == {"suite": "x"}
    assert result.metadata_kept == []
