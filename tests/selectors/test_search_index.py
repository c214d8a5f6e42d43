"""Search built after the rows (migration 0019, traces/services/search_index.py): on
PostgreSQL triggers queue the traces written, the worker indexes them, and search reads a
queued trace's payloads directly meanwhile, so that its results never depend on the
worker's progress. SQLite scans and has nothing to build: the same tests hold there."""

import threading

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.urls import reverse

from tests.explorer.conftest import chat, import_lines
from tests.threads import run_together
from traces import kinds
from traces.models import Block, BlockSearch, SearchPending, Trace
from traces.search_queue import search_queued_here
from traces.selectors.blocks import trace_block_hits
from traces.selectors.search import search_hits, traces_matching
from traces.services.blocks import BlockInput, block_create
from traces.services.deletion import trace_delete
from traces.services.search_index import search_index_build, search_index_drain

pg_only = pytest.mark.postgres


def drain() -> int:
    return search_index_drain(batch=2)  # small batches: several transactions


def found(traces, text: str) -> dict:
    """Everything a search shows of `traces`: the traces, each one's hit, and each one's
    in-trace find."""
    matching = sorted(traces_matching(traces=traces, text=text).values_list("pk", flat=True))
    hits = search_hits(trace_ids=matching, text=text)
    finds = {
        trace.pk: trace_block_hits(trace=trace, text=text, limit=10)
        for trace in Trace.objects.filter(pk__in=matching)
    }
    return {"traces": matching, "hits": hits, "finds": finds}


@pytest.fixture
def dataset(org):
    return import_lines(
        org,
        "indexing",
        [
            {"messages": chat("book a flight to Lisbon", "search_flights")},
            {"messages": chat("cancel my hotel", answer="The hotel is cancelled.")},
            {"messages": chat("a flight and a hotel")},
        ],
    )


@pytest.mark.django_db
def test_search_finds_the_same_before_and_after_the_worker(dataset):
    traces = Trace.objects.filter(dataset=dataset)
    if connection.vendor == "postgresql":
        assert SearchPending.objects.filter(trace__dataset=dataset).count() == 3
    texts = ("flight", "hotel", "cancelled", "is:error", "LISBON", "search_flights", "50%_off")
    before = {text: found(traces, text) for text in texts}
    assert len(before["flight"]["traces"]) == 2 and len(before["hotel"]["traces"]) == 2
    assert len(before["LISBON"]["traces"]) == len(before["search_flights"]["traces"]) == 1
    assert before["50%_off"]["traces"] == []  # LIKE's wildcards are the reader's text
    assert drain() == (3 if connection.vendor == "postgresql" else 0)
    assert not SearchPending.objects.exists()
    after = {text: found(traces, text) for text in before}
    assert after == before
    if connection.vendor == "postgresql":
        searched = Block.objects.filter(sub_type__in=kinds.searched_sub_types())
        assert BlockSearch.objects.count() == searched.count() > 0


@pytest.mark.django_db
def test_an_append_to_an_indexed_trace_queues_it_and_is_found_before_and_after(dataset):
    drain()
    trace = Trace.objects.get(dataset=dataset, index=1)
    traces = Trace.objects.filter(dataset=dataset)
    assert traces_matching(traces=traces, text="zeppelin").count() == 0
    payload = {"role": "user", "content": "and a zeppelin"}
    block_create(trace=trace, block=BlockInput(sub_type="MESSAGE", payload=payload))
    if connection.vendor == "postgresql":
        assert list(SearchPending.objects.values_list("trace_id", flat=True)) == [trace.pk]
    before = found(traces, "zeppelin")
    assert before["traces"] == [trace.pk] and before["finds"][trace.pk]
    drain()
    assert found(traces, "zeppelin") == before
    # Its older text is found all along: a queued trace is read from its payloads only.
    assert trace.pk in traces_matching(traces=traces, text="hotel").values_list("pk", flat=True)


@pg_only
@pytest.mark.django_db
def test_a_changed_payload_queues_its_trace_and_stale_vectors_are_not_read(dataset):
    drain()
    block = Block.objects.get(trace__dataset=dataset, trace__index=1, payload__contains="cancel my")
    Block.objects.filter(pk=block.pk).update(rendered="drawn")  # not the text: not queued
    assert not SearchPending.objects.exists()
    Block.objects.filter(pk=block.pk).update(payload='{"role": "user", "content": "a yacht"}')
    traces = Trace.objects.filter(dataset=dataset)
    assert SearchPending.objects.filter(trace_id=block.trace_id).exists()
    assert not traces_matching(traces=traces, text="cancel my").filter(pk=block.trace_id)
    assert traces_matching(traces=traces, text="yacht").get().pk == block.trace_id
    drain()
    assert not traces_matching(traces=traces, text="cancel my").filter(pk=block.trace_id)
    assert traces_matching(traces=traces, text="yacht").get().pk == block.trace_id


@pg_only
@pytest.mark.django_db
def test_deleting_a_trace_or_a_block_removes_its_search_rows(dataset):
    drain()
    first, second = Trace.objects.filter(dataset=dataset).order_by("index")[:2]
    assert BlockSearch.objects.filter(trace_id=first.pk).exists()
    trace_delete(trace=first)  # the set-based delete (traces/services/deletion.py)
    assert not BlockSearch.objects.filter(trace_id=first.pk).exists()
    block = Block.objects.filter(trace=second, sub_type="MESSAGE").last()
    block_create(  # queued again, then deleted with the ORM's cascade
        trace=second, block=BlockInput(sub_type="MESSAGE", payload={"role": "user", "content": "x"})
    )
    assert SearchPending.objects.filter(trace_id=second.pk).exists()
    Block.objects.filter(pk=block.pk).delete()
    assert not BlockSearch.objects.filter(block_id=block.pk).exists()
    Trace.objects.filter(pk=second.pk).delete()
    assert not SearchPending.objects.filter(trace_id=second.pk).exists()
    assert not BlockSearch.objects.filter(trace_id=second.pk).exists()


@pg_only
@pytest.mark.django_db(transaction=True)
def test_two_workers_never_index_the_same_trace(org):
    import_lines(org, "workers", [{"messages": chat(f"task {n}")} for n in range(6)])
    holding, done = threading.Event(), threading.Event()
    taken: dict[str, list[str]] = {}

    def first():
        with transaction.atomic():  # holds its batch's rows until the second has run
            count = search_index_build(limit=2)
            taken["first"] = list(BlockSearch.objects.values_list("trace_id", flat=True))
            holding.set()
            assert done.wait(30)
        return count

    def second():
        assert holding.wait(30)
        try:
            return search_index_build(limit=10)
        finally:
            done.set()

    assert run_together([first, second]) == [2, 4]
    assert not SearchPending.objects.exists()
    per_trace = {t: BlockSearch.objects.filter(trace_id=t).count() for t in set(taken["first"])}
    assert len(per_trace) == 2 and all(n > 0 for n in per_trace.values())
    assert BlockSearch.objects.values("trace_id").distinct().count() == 6


@pytest.mark.django_db
def test_the_worker_command_once_drains_the_queue(dataset, capsys):
    call_command("search_worker", "--once")
    out = capsys.readouterr().out
    if connection.vendor == "postgresql":
        assert "3 traces indexed" in out
        assert not SearchPending.objects.exists()
        assert BlockSearch.objects.exists()
    else:
        assert "nothing to do on SQLite" in out


@pg_only
@pytest.mark.django_db
def test_the_trace_list_marks_traces_being_indexed(member_client, dataset):
    url = reverse("dataset", args=[dataset.pk])
    html = member_client.get(url, {"q": "flight"}).content.decode()
    assert html.count('class="indexing-tag"') == 2  # the two that match, both pending
    assert "3 traces are still being indexed; search reads them directly meanwhile." in html
    assert 'class="indexing-note' not in member_client.get(url).content.decode()  # no search
    drain()
    html = member_client.get(url, {"q": "flight"}).content.decode()
    assert "indexing-tag" not in html and "still being indexed" not in html
    assert html.count('class="search-hit"') == 2


@pytest.mark.django_db
def test_a_block_of_a_million_distinct_words_is_indexed_and_searched_without_error(org):
    """A text vector holds at most 1 MB and to_tsvector raised past it: one such message
    (imports take up to 2 MB) stopped the worker for every trace and made searches fail.
    Search reads each block's first SEARCH_TEXT_CHARS characters on both sides."""
    import hashlib

    from traces.selectors.search import SEARCH_TEXT_CHARS

    words = " ".join(hashlib.md5(str(n).encode()).hexdigest() for n in range(40_000))
    assert len(words) > 1_000_000
    first, late = words[:32], words[-32:]
    big = import_lines(org, "big", [{"messages": chat(f"quokka {words}")}])
    small = import_lines(org, "small", [{"messages": chat("hello lisbon")}])
    traces = Trace.objects.filter(dataset__in=[big, small])
    before = {text: found(traces, text) for text in ("quokka", first, "lisbon")}
    assert len(before["quokka"]["traces"]) == len(before[first]["traces"]) == 1
    drain()  # raised "string is too long for tsvector" before the cut
    assert not SearchPending.objects.exists()
    assert {text: found(traces, text) for text in before} == before
    if connection.vendor == "postgresql":  # past the cut: not read (SQLite scans all)
        assert words.index(late) > SEARCH_TEXT_CHARS
        assert found(traces, late)["traces"] == []


@pytest.mark.django_db
def test_a_search_of_many_words_needs_every_one_of_them_the_shortest_too(org):
    """PostgreSQL's filter before the exact match reads only the longest
    PREFILTER_WORDS words of a search (a search of 167 short words scanned each block 167
    times): a block that lacks only the shortest word passes that filter and must still
    not match, before the worker and after it."""
    from traces.selectors.search import PREFILTER_WORDS

    long_words = [f"{'abcdefghijkl'[n]}{'x' * (12 - n)}" for n in range(PREFILTER_WORDS + 4)]
    every = " ".join(long_words)
    search = f"{every} qz"
    dataset = import_lines(
        org,
        "many words",
        [
            {"messages": chat(f"{search} too")},  # every word: found
            {"messages": chat(f"{every} and nothing short")},  # all but "qz": not found
            {"messages": chat(" ".join(long_words[:-1]) + " qz")},  # lacks a long word
        ],
    )
    traces = Trace.objects.filter(dataset=dataset)
    first = traces.get(index=0).pk
    before = found(traces, search)
    assert before["traces"] == [first]
    drain()
    assert found(traces, search) == before


@pytest.mark.django_db
def test_a_word_longer_than_the_filter_reads_is_matched_whole(org):
    """PostgreSQL's filter reads a word's first PREFILTER_CHARS characters (a 500-character
    word made it take seconds over large blocks): the exact match still needs all of it."""
    from traces.selectors.search import PREFILTER_CHARS

    stem = "q" * PREFILTER_CHARS
    dataset = import_lines(
        org,
        "long words",
        [
            {"messages": chat(f"see {stem}right here")},
            {"messages": chat(f"see {stem}wrong here")},
        ],
    )
    traces = Trace.objects.filter(dataset=dataset)
    search = f"{stem}right"
    before = found(traces, search)
    assert before["traces"] == [traces.get(index=0).pk]
    drain()
    assert found(traces, search) == before


def pending() -> set[str]:
    return set(SearchPending.objects.values_list("trace_id", flat=True))


@pg_only
@pytest.mark.django_db
def test_the_import_and_a_block_append_queue_their_traces_themselves(dataset, org):
    assert pending() == set(dataset.traces.values_list("pk", flat=True))
    drain()
    trace = dataset.traces.order_by("index").first()
    message = BlockInput(sub_type="MESSAGE", payload={"role": "user", "content": "more"})
    block_create(trace=trace, block=message)
    assert pending() == {trace.pk}


@pg_only
@pytest.mark.django_db
def test_a_block_written_any_other_way_is_queued_by_the_trigger(dataset):
    drain()
    trace = dataset.traces.order_by("index").first()
    first = Block.objects.filter(trace=trace).order_by("number").first()
    Block.objects.create(
        trace=trace, block_type="MESSAGE", sub_type="MESSAGE",
        payload={"role": "user", "content": "written by the ORM"},
        created_at=first.created_at, updated_at=first.updated_at,
    )  # fmt: skip
    assert pending() == {trace.pk}


@pg_only
@pytest.mark.django_db
def test_the_trigger_skips_blocks_of_a_writer_that_queues_them_and_only_those(dataset):
    drain()
    first, second = dataset.traces.order_by("index")[:2]
    template = Block.objects.filter(trace=first).order_by("number").first()

    def message(trace):
        return Block(
            trace=trace, block_type="MESSAGE", sub_type="MESSAGE",
            payload={"role": "user", "content": "x"},
            created_at=template.created_at, updated_at=template.updated_at,
        )  # fmt: skip

    with transaction.atomic():
        with search_queued_here():
            message(first).save()
        assert pending() == set()
        message(second).save()  # after the writer's block: queued again by the trigger
        assert pending() == {second.pk}
    assert pending() == {second.pk}


def queued_in_statistics() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'traces_search_pending'")
        return cursor.fetchone()[0]


@pg_only
@pytest.mark.django_db
def test_once_the_queue_is_emptied_its_statistics_say_so(dataset):
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_search_pending")
    assert queued_in_statistics() == 3  # the three traces the import queued
    drain()
    assert queued_in_statistics() == 0


@pytest.mark.django_db
def test_a_word_after_a_line_break_tab_or_return_is_found_before_and_after(org):
    dataset = import_lines(
        org,
        "breaks",
        [
            {"messages": chat("first line\nsecondword here")},
            {"messages": chat("a\ttabbedword and a\r\nreturnedword")},
            # Backslashes of the text itself, before an n: the words stay whole.
            {"messages": chat("an escaped \\\\nothing in C:\\newfolder")},
        ],
    )
    traces = Trace.objects.filter(dataset=dataset)
    texts = ("secondword", "tabbedword", "returnedword", "nothing", "newfolder", "nsecondword")
    before = {text: found(traces, text) for text in texts}
    assert [len(before[text]["traces"]) for text in texts[:-1]] == [1, 1, 1, 1, 1]
    if connection.vendor == "postgresql":  # words; SQLite's scan finds any piece of text
        assert before["nsecondword"]["traces"] == []
    drain()
    assert {text: found(traces, text) for text in texts} == before
