"""traces/selectors/prepared.py: a queryset compiled once, run again with other values,
reads what the queryset reads."""

import datetime
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Annotation, Membership, Trace
from traces.selectors.prepared import Prepared
from traces.services.annotations import annotation_create, label_create
from traces.services.imports import trace_import


def _imported(org, dataset: str, metas: list[dict]) -> list[Trace]:
    lines = b"".join(
        json.dumps({"messages": [{"role": "user", "content": f"run {n}"}], "metadata": m}).encode()
        + b"\n"
        for n, m in enumerate(metas)
    )
    result = trace_import(
        organization=org, dataset_name=dataset, files=[("t.jsonl", io.BytesIO(lines))],
        allow_duplicates=True,
    )  # fmt: skip
    return list(result.dataset.traces.order_by("index"))


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def _with_related(trace_id: str):
    return Trace.objects.select_related("dataset", "organization").filter(id=trace_id)


def test_it_reads_the_rows_and_what_they_select_with_them_as_the_queryset(org):
    traces = _imported(org, "runs", [{"task_id": "a", "reward": 0.5}, {"nested": {"x": [1]}}])
    prepared = Prepared(_with_related, str)
    for trace in traces:
        (found,) = prepared(trace.pk)
        expected = _with_related(trace.pk).get()
        assert _fields(found) == _fields(expected)
        assert _fields(found.dataset) == _fields(expected.dataset)
        assert _fields(found.organization) == _fields(expected.organization)
    # Converted as the ORM converts them: JSON decoded, dates aware.
    assert found.metadata == {"nested": {"x": [1]}}
    assert isinstance(found.created_at, datetime.datetime) and found.created_at.tzinfo


def test_it_compiles_once_and_runs_again_with_other_arguments(org):
    first, second = _imported(org, "runs", [{}, {}])
    made = []

    def make(trace_id: str):
        made.append(trace_id)
        return _with_related(trace_id)

    prepared = Prepared(make, str)
    assert [t.pk for t in prepared(first.pk)] == [first.pk]
    calls = len(made)
    with CaptureQueriesContext(connection) as queries:
        assert [t.pk for t in prepared(second.pk)] == [second.pk]
        assert prepared("tr_missing") == []
    assert len(made) == calls  # no queryset made again, nor compiled
    assert len(queries.captured_queries) == 2
    assert queries.captured_queries[0]["sql"] == queries.captured_queries[1]["sql"].replace(
        "tr_missing", second.pk
    )


def test_it_keeps_the_constants_of_the_query_beside_its_arguments(org):
    traces = _imported(org, "runs", [{"reward": 0.2}, {"reward": 0.9}, {"reward": 1}])
    passing = Prepared(
        lambda dataset_id: Trace.objects.filter(dataset_id=dataset_id, reward__gte=0.5)
        .order_by("index")
        .values_list("index", "reward"),
        str,
    )
    assert passing(traces[0].dataset_id) == [(1, 0.9), (2, 1.0)]


def test_it_reads_values_list_tuples_with_an_int_argument(org, member, viewer):
    roles = Prepared(
        lambda user_id: Membership.objects.filter(user_id=user_id).values_list(
            "organization_id", "role"
        ),
        int,
    )
    assert roles(member.pk) == [(org.pk, "member")]
    assert roles(viewer.pk) == [(org.pk, "viewer")]
    assert roles(str(viewer.pk)) == [(org.pk, "viewer")]  # as the type says
    assert roles(-1) == []


def test_it_reads_a_slice_with_several_related_and_none_of_them_null(org, member):
    (trace,) = _imported(org, "runs", [{}])
    label_create(dataset=trace.dataset, name="wrong-city")
    annotation_create(trace=trace, label="wrong-city", author=member)
    annotation_create(trace=trace, comment="no label, no author")
    shown = Prepared(
        lambda trace_id: Annotation.objects.filter(trace_id=trace_id)
        .select_related("label", "author", "api_key")
        .order_by("created_at", "id")[:1],
        str,
    )
    (first,) = shown(trace.pk)
    assert first.label.name == "wrong-city" and first.author == member
    assert first.api_key is None
    everything = Prepared(
        lambda trace_id: Annotation.objects.filter(trace_id=trace_id)
        .select_related("label", "author")
        .order_by("created_at", "id"),
        str,
    )
    second = everything(trace.pk)[1]
    assert second.label is None and second.author is None
    assert second.comment == "no label, no author"


def test_it_refuses_a_lookup_that_rewrites_its_argument(org):
    (trace,) = _imported(org, "runs", [{}])
    prepared = Prepared(lambda name: Trace.objects.filter(name__icontains=name), str)
    with pytest.raises(ValueError, match="argument 0 does not reach the SQL"):
        prepared(trace.name or "x")


def test_it_refuses_what_it_would_not_read_as_the_queryset(org):
    (trace,) = _imported(org, "runs", [{}])
    prefetching = Prepared(lambda i: Trace.objects.filter(id=i).prefetch_related("blocks"), str)
    with pytest.raises(ValueError, match="does not prefetch"):
        prefetching(trace.pk)
    values = Prepared(lambda i: Trace.objects.filter(id=i).values("id"), str)
    with pytest.raises(ValueError, match="model instances or values_list tuples"):
        values(trace.pk)


def test_it_wants_as_many_arguments_as_it_declares():
    prepared = Prepared(lambda i: Trace.objects.filter(id=i), str)
    with pytest.raises(TypeError, match="1 arguments expected, 2 given"):
        prepared("a", "b")
    with pytest.raises(TypeError, match="a str or an int"):
        Prepared(lambda i: Trace.objects.filter(reward=i), float)(0.5)
