"""Full-text search (traces/selectors/search.py) reads the GIN index on PostgreSQL: the
plan of a dataset's search starts from the index's hits, never from the dataset's traces
with their text vectors recomputed (but for the traces the search worker has not indexed
yet: tests/selectors/test_search_index.py)."""

import orjson
import pytest
from django.db import connection

from tests.conftest import as_file
from traces.models import Dataset, Trace
from traces.selectors.search import traces_matching
from traces.services.imports import trace_import
from traces.services.search_index import search_index_drain


def _import(org, words: list[str], events: int = 1):
    lines = [
        orjson.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"please {word} now {n}"} for n in range(events)
                ]
            }
        )
        for word in words
    ]
    return trace_import(
        organization=org, dataset_name="search", files=[as_file(b"\n".join(lines), "a.jsonl")]
    ).dataset


@pytest.mark.django_db
def test_search_finds_the_imported_text_as_soon_as_the_import_returns(org):
    dataset = _import(org, ["airplane", "signal", "airplane mode"])
    found = traces_matching(traces=Trace.objects.filter(dataset=dataset), text="airplane")
    assert sorted(found.values_list("index", flat=True)) == [0, 2]
    assert not traces_matching(traces=Trace.objects.filter(dataset=dataset), text="zzz").exists()


@pytest.mark.django_db
def test_a_dataset_search_reads_the_text_index(org):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no text index: its search scans")
    # The shape that made the planner walk the traces: many traces of many blocks.
    dataset = _import(org, [f"word{n}" for n in range(600)], events=30)
    search_index_drain()  # the worker (migration 0019) has run
    # Planned with the statistics the import leaves (traces.services.imports: ANALYZE of
    # the key columns, none of the text index's expression).
    traces = Trace.objects.filter(dataset=Dataset.objects.get(pk=dataset.pk))
    query = traces_matching(traces=traces, text="word7").order_by("index")[:50]
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan on block_search_document" in plan, plan
    assert list(query.values_list("index", flat=True)) == [7]
