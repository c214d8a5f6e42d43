"""traces/selectors/datasets.py: the datasets list (its rows, its limit, "no match" told
from "no dataset"), datasets grouped by organization, a dataset's traces as its list
shows them."""

import io
import json

import pytest

from traces.models import Dataset
from traces.selectors.datasets import (
    dataset_export_disposition,
    dataset_trace_rows,
    dataset_traces,
    datasets_by_organization,
    datasets_listed,
)
from traces.services.imports import trace_import
from traces.services.organizations import organization_get_or_create


def imported(org, name: str, rewards: list[float]) -> Dataset:
    traces = [
        {"messages": [{"role": "user", "content": f"hi {name} {n}"}], "metadata": {"reward": r}}
        for n, r in enumerate(rewards)
    ]
    lines = b"".join(json.dumps(trace).encode() + b"\n" for trace in traces)
    return trace_import(
        organization=org, dataset_name=name, files=[(f"{name}.jsonl", io.BytesIO(lines))]
    ).dataset


def test_the_list_has_its_rows_with_accuracy_newest_first_and_says_when_cut(org):
    imported(org, "first", [1, 0])
    imported(org, "second", [1, 1, 0, 1])
    listing = datasets_listed(datasets=Dataset.objects.all(), text="", limit=1)
    assert [d.name for d in listing.rows] == ["second"]
    assert listing.rows[0].trace_count == 4 and listing.rows[0].accuracy == 0.75
    assert listing.truncated and listing.any_readable
    whole = datasets_listed(datasets=Dataset.objects.all(), text="", limit=10)
    assert [d.name for d in whole.rows] == ["second", "first"] and not whole.truncated


def test_no_match_is_told_from_no_dataset(org):
    imported(org, "airline", [1])
    none_match = datasets_listed(datasets=Dataset.objects.all(), text="zebra", limit=10)
    assert none_match.rows == [] and none_match.any_readable
    matching = datasets_listed(datasets=Dataset.objects.all(), text="air", limit=10)
    assert [d.name for d in matching.rows] == ["airline"]
    nothing = datasets_listed(datasets=Dataset.objects.none(), text="zebra", limit=10)
    assert nothing.rows == [] and not nothing.any_readable


def test_datasets_grouped_by_organization_slug_then_name(org):
    zeta = organization_get_or_create(slug="zeta")
    imported(zeta, "b", [1])
    imported(org, "z", [1])
    imported(org, "a", [1])
    groups = datasets_by_organization(datasets=Dataset.objects.all())
    assert [(slug, [d.name for d in items]) for slug, items in groups] == [
        ("acme", ["a", "z"]),
        ("zeta", ["b"]),
    ]


def test_a_datasets_trace_rows_carry_their_first_user_message_not_their_metadata(org):
    dataset = imported(org, "rows", [1])
    imported(org, "other", [0, 0])
    (row,) = dataset_trace_rows(traces=dataset_traces(dataset=dataset))
    assert row.first_user_payload is not None and "hi rows 0" in str(row.first_user_payload)
    assert "metadata" in row.get_deferred_fields() and "extra" in row.get_deferred_fields()


# --- The export's Content-Disposition (harden F10e) --------------------------------------


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("airline-run", 'attachment; filename="airline-run.chat.jsonl"'),
        (
            "数据集 二",
            "attachment; filename=\"dataset.chat.jsonl\"; "
            "filename*=UTF-8''%E6%95%B0%E6%8D%AE%E9%9B%86_%E4%BA%8C.chat.jsonl",
        ),
        (
            "café \"run\"",
            "attachment; filename=\"cafe__run_.chat.jsonl\"; "
            "filename*=UTF-8''caf%C3%A9__run_.chat.jsonl",
        ),
        ("\u202eevil", 'attachment; filename="_evil.chat.jsonl"'),
    ],
    ids=["ascii", "chinese", "accents and quotes", "bidi control"],
)
def test_the_export_header_has_an_ascii_name_and_the_utf8_one(org, name, header):
    dataset = Dataset.objects.create(organization=org, name=name)
    assert dataset_export_disposition(dataset=dataset, fmt="chat") == header
    header.encode("ascii")  # a header any client and server can carry
