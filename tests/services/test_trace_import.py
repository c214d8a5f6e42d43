import json

import orjson
import pytest

from tests.conftest import FIXTURES, as_file
from traces.errors import ImportFailed
from traces.models import Block, Dataset, Trace
from traces.selectors.exports import trace_events
from traces.services.imports import trace_import


def run(org, *files, dataset="runs"):
    return trace_import(organization=org, dataset_name=dataset, files=list(files))


def tree(trace):
    blocks = list(trace.blocks.order_by("created_at", "id"))
    by_id = {b.id: b for b in blocks}
    return [(b.sub_type, by_id[b.parent_id].sub_type if b.parent_id else None) for b in blocks]


def test_it_imports_the_spec000_full_trace_example_verbatim(org):
    path = FIXTURES / "spec000_full_trace.json"
    result = run(org, (path.name, path.open("rb")))
    assert (result.traces, result.blocks) == (1, 5)
    trace = Trace.objects.get()
    assert tree(trace) == [
        ("MESSAGE", None),
        ("MESSAGE", None),
        ("TOOL_CALL", "MESSAGE"),
        ("TOOL_RESULT", "TOOL_CALL"),
        ("MESSAGE", None),
    ]
    assert trace_events(trace=trace) == json.loads(path.read_text())


def test_it_imports_the_spec004_example_trace_verbatim(org):
    path = FIXTURES / "spec004_example_trace.json"
    result = run(org, (path.name, path.open("rb")))
    assert (result.traces, result.blocks) == (1, 4)
    trace = Trace.objects.get()
    assert tree(trace) == [
        ("MESSAGE", None),
        ("TOOL_CALL", "MESSAGE"),
        ("TOOL_RESULT", "TOOL_CALL"),
        ("THINK", "MESSAGE"),
    ]
    result_block = trace.blocks.get(sub_type="TOOL_RESULT")
    assert result_block.payload == {"call_id": "call_1", "output": {"forecast": "22Β°C cloudy"}}


def test_it_reads_invariant_jsonl_with_dataset_metadata_and_trace_metadata(org):
    lines = [
        {"metadata": {"benchmark": "demo", "accuracy": 0.5}},
        {"messages": [{"role": "user", "content": "hi"}], "metadata": {"reward": 1, "task": "a"}},
        [{"metadata": {"reward": False}}, {"role": "user", "content": "hello"}],
    ]
    data = "\n".join(json.dumps(line) for line in lines) + "\n"
    result = run(org, as_file(data, "runs.jsonl"))
    assert result.traces == 2
    dataset = Dataset.objects.get()
    assert dataset.metadata == {"benchmark": "demo", "accuracy": 0.5}
    first, second = Trace.objects.order_by("index")
    assert (first.index, first.reward, first.metadata) == (0, 1.0, {"reward": 1, "task": "a"})
    assert (second.index, second.reward) == (1, 0.0)


def test_it_reads_a_json_array_of_traces(org):
    data = [
        [{"role": "user", "content": "one"}],
        {"messages": [{"role": "user", "content": "two"}], "metadata": {"name": "second"}},
    ]
    result = run(org, as_file(json.dumps(data)))
    assert result.traces == 2
    assert list(Trace.objects.order_by("index").values_list("name", flat=True)) == ["", "second"]


def test_it_continues_indices_across_imports_into_one_dataset(org):
    run(org, as_file('[{"role": "user", "content": "a"}]'))
    run(org, as_file('[{"role": "user", "content": "b"}]'))
    assert list(Trace.objects.order_by("index").values_list("index", flat=True)) == [0, 1]


def test_it_links_outputs_by_id_list_order_and_legacy_function_call(org):
    events = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "name": "flat", "arguments": {"x": 1}},
                {"id": "b", "function": "inspect_style", "arguments": {}},
                {"type": "function", "function": {"name": "noid", "arguments": '{"q": 1}'}},
            ],
        },
        {"role": "tool", "id": "a", "content": "by id"},
        {"role": "tool", "tool_call_ids": ["b"], "content": "by list"},
        {"role": "tool", "content": "by order"},
        {"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "legacy"},
    ]
    run(org, as_file(json.dumps(events)))
    calls = {b.payload["name"]: b for b in Block.objects.filter(sub_type="TOOL_CALL")}
    results = {b.payload["output"]: b for b in Block.objects.filter(sub_type="TOOL_RESULT")}
    assert results["by id"].parent_id == calls["flat"].id
    assert results["by list"].parent_id == calls["inspect_style"].id
    assert results["by order"].parent_id == calls["noid"].id
    assert results["legacy"].parent_id == calls["f"].id
    assert calls["noid"].payload["arguments"] == {"q": 1}
    assert calls["noid"].metadata["call_id_generated"] is True


def test_it_keeps_unparseable_arguments_as_the_model_wrote_them(org):
    events = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{oops"}}],
        },
    ]
    run(org, as_file(json.dumps(events)))
    call = Block.objects.get(sub_type="TOOL_CALL")
    assert call.payload["arguments"] == "{oops"
    assert "not JSON" in call.metadata["arguments_unparsed"]


def test_it_turns_reasoning_into_think_blocks_and_keeps_free_text_roles(org):
    events = [
        {"role": "Orchestrator (thought)", "content": "plan"},
        {"role": "developer", "content": "rules"},
        {"role": "assistant", "content": "ok", "reasoning_content": "let me think"},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "more"}, {"type": "text", "text": "done"}],
        },
    ]
    run(org, as_file(json.dumps(events)))
    roles = [b.payload["role"] for b in Block.objects.filter(sub_type="MESSAGE").order_by("id")]
    assert roles == ["Orchestrator (thought)", "developer", "assistant", "assistant"]
    thinks = sorted(b.payload["text"] for b in Block.objects.filter(sub_type="THINK"))
    assert thinks == ["let me think", "more"]


def test_it_keeps_a_user_turn_that_only_calls_tools(org):
    events = [
        {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "u1", "name": "toggle", "arguments": {}}],
        },
        {"role": "tool", "id": "u1", "content": "done", "requestor": "user"},
    ]
    run(org, as_file(json.dumps(events)))
    message = Block.objects.get(sub_type="MESSAGE")
    assert message.payload == {"role": "user", "content": None}


def test_it_gives_back_every_string_key_order_and_number(org):
    tricky = "nul\u0000 emoji \U0001f600 crlf\r\n tab\t é"
    events = [
        {"role": "user", "content": tricky, "zeta": 1, "alpha": {"b": 2, "a": 1}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": {"z": 1.5, "a": 10**18, "m": -0.0}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": tricky},
    ]
    raw = orjson.dumps(events)
    run(org, as_file(raw))
    exported = orjson.dumps(trace_events(trace=Trace.objects.get()))
    assert exported == raw
    args = Block.objects.get(sub_type="TOOL_CALL").payload["arguments"]
    assert list(args) == ["z", "a", "m"]


def test_it_stores_an_inline_image_once_and_exports_it_byte_for_byte(org):
    import base64

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()
    url = f"data:image/png;base64,{png}"
    events = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        },
        {"role": "assistant", "content": f"base64_img: {png}"},
    ]
    raw = orjson.dumps(events)
    result = run(org, as_file(raw))
    assert result.images == 1
    message = Block.objects.filter(sub_type="MESSAGE").order_by("id").first()
    assert png not in orjson.dumps(message.payload).decode()
    assert orjson.dumps(trace_events(trace=Trace.objects.get())) == raw


def test_it_writes_nothing_when_one_trace_of_many_is_bad_and_reports_where(org):
    good = json.dumps([{"role": "user", "content": "fine"}])
    bad = json.dumps(
        [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "?"}]
    )
    with pytest.raises(ImportFailed) as caught:
        run(org, as_file(f"{good}\n{bad}\n{good}\n", "mixed.jsonl"))
    assert caught.value.problems == [
        {
            "file": "mixed.jsonl",
            "line": 2,
            "trace": 1,
            "event": 1,
            "field": "tool_call_id",
            "code": "VALIDATION",
            "rule": "unknown_call_id",
            "message": "tool output answers call id 'nope', which no earlier tool call has",
        }
    ]
    assert (Dataset.objects.count(), Trace.objects.count(), Block.objects.count()) == (0, 0, 0)


def test_it_gives_a_call_id_reused_after_its_answer_a_new_stored_id(org):
    def call(cid):
        return {"id": cid, "type": "function", "function": {"name": "bash", "arguments": {}}}

    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "1", "tool_calls": [call("c")]},
        {"role": "tool", "tool_call_ids": ["c"], "content": "first"},
        {"role": "assistant", "content": "2", "tool_calls": [call("c")]},
        {"role": "tool", "tool_call_ids": ["c"], "content": "second"},
    ]
    raw = orjson.dumps(events)
    run(org, as_file(raw))
    calls = list(Block.objects.filter(sub_type="TOOL_CALL").order_by("id"))
    assert [c.call_id for c in calls] == ["c", "c#2"]
    assert calls[1].metadata["call_id_reused"] == "c"
    second = Block.objects.get(sub_type="TOOL_RESULT", payload__contains="second")
    assert second.parent_id == calls[1].id
    assert orjson.dumps(trace_events(trace=Trace.objects.get())) == raw


def test_it_keeps_both_results_of_a_tool_output_answering_one_call_twice(org):
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "name": "f"}]},
        {"role": "tool", "tool_call_id": "c", "content": "first"},
        {"role": "tool", "tool_call_id": "c", "content": "second"},
        {"role": "assistant", "content": "done"},
    ]
    raw = orjson.dumps(events)
    run(org, as_file(raw))
    call = Block.objects.get(sub_type="TOOL_CALL")
    results = Block.objects.filter(sub_type="TOOL_RESULT").order_by("created_at", "id")
    assert [(r.payload["output"], r.parent_id, r.result_seq) for r in results] == [
        ("first", call.id, None),
        ("second", call.id, None),
    ]
    assert orjson.dumps(trace_events(trace=Trace.objects.get())) == raw


def test_a_block_array_may_hold_several_results_without_seq(org):
    blocks = [
        {"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": None}},
        {"sub_type": "TOOL_CALL", "payload": {"call_id": "c", "name": "f", "arguments": {}}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "output": "one"}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "delta": "d0", "seq": 0}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "output": "two"}},
    ]
    assert run(org, as_file(json.dumps(blocks))).blocks == 5
    results = Block.objects.filter(sub_type="TOOL_RESULT").order_by("created_at", "id")
    assert [r.result_seq for r in results] == [None, 0, None]


def block_statistics() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'traces_block'")
        return cursor.fetchone()[0]


@pytest.mark.postgres  # statistics are PostgreSQL's concern: SQLite plans without them
def test_an_import_that_grows_the_blocks_by_a_tenth_analyzes_them(org, monkeypatch):
    from django.db import connection

    from traces.services import imports

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_block")  # statistics that say it is empty
    assert block_statistics() == 0
    monkeypatch.setattr(imports, "ANALYZE_AFTER_BLOCKS", 1)
    path = FIXTURES / "spec000_full_trace.json"
    written = run(org, (path.name, path.open("rb"))).blocks
    assert block_statistics() == written  # ANALYZE counted this transaction's own rows
    with connection.cursor() as cursor:  # from a small sample, for this ANALYZE only
        cursor.execute("SHOW default_statistics_target")
        assert cursor.fetchone()[0] == "100"


@pytest.mark.postgres
def test_an_import_small_against_what_the_statistics_know_leaves_them(org, monkeypatch):
    from django.db import connection

    from traces.services import imports

    line = {"messages": [{"role": "user", "content": "x" * 40}] * 6}
    lines = "".join(json.dumps({**line, "metadata": {"n": n}}) + "\n" for n in range(100))
    run(org, as_file(lines, "many.jsonl"))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_block")
    known = block_statistics()
    assert known == 600
    monkeypatch.setattr(imports, "ANALYZE_AFTER_BLOCKS", 1)
    run(org, as_file(json.dumps({**line, "metadata": {"n": "one more"}}) + "\n", "one.jsonl"))
    assert block_statistics() == known  # 6 blocks: less than a tenth, not analyzed


@pytest.mark.postgres
def test_an_import_that_grows_the_traces_by_a_tenth_analyzes_what_search_plans_from(
    org, django_capture_on_commit_callbacks
):
    from django.db import connection

    def estimated(table: str) -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
            return cursor.fetchone()[0]

    # Statistics taken while the tables were empty, as on a new site.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_trace, traces_search_pending")
    assert estimated("traces_search_pending") <= 0
    lines = "".join(
        json.dumps({"messages": [{"role": "user", "content": f"run {n}"}]}) + "\n"
        for n in range(60)
    )
    with django_capture_on_commit_callbacks(execute=True):
        run(org, as_file(lines, "many.jsonl"))
    assert estimated("traces_search_pending") >= 60  # the queue as it is now
    assert estimated("traces_trace") >= 60


@pytest.mark.postgres
def test_the_analyze_after_an_import_waits_for_no_lock(org, django_capture_on_commit_callbacks):
    import psycopg
    from django.db import connection

    settings = connection.settings_dict
    holder = psycopg.connect(
        host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
        dbname=settings["NAME"], autocommit=False,
    )  # fmt: skip
    try:
        # A VACUUM, an index being built or another import's ANALYZE holds this lock.
        holder.execute("LOCK TABLE traces_trace IN SHARE UPDATE EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE traces_search_pending")
            cursor.execute("SET lock_timeout = '3s'")  # without SKIP_LOCKED: an error
        lines = "".join(
            json.dumps({"messages": [{"role": "user", "content": f"run {n}"}]}) + "\n"
            for n in range(60)
        )
        with django_capture_on_commit_callbacks(execute=True):
            run(org, as_file(lines, "many.jsonl"))
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'traces_search_pending'")
            assert cursor.fetchone()[0] >= 60  # analyzed; the locked traces table skipped
            cursor.execute("RESET lock_timeout")
    finally:
        holder.rollback()
        holder.close()


@pytest.mark.postgres
def test_a_search_among_traces_a_filter_excludes_all_of_is_empty(org):
    from traces.selectors.search import traces_matching
    from traces.selectors.trace_filters import TraceFilter, traces_filtered

    run(org, as_file(json.dumps([{"role": "user", "content": "flight to Paris"}]), "a.json"))
    assert traces_matching(traces=Trace.objects.all(), text="flight").count() == 1
    assert not traces_matching(traces=Trace.objects.none(), text="flight").exists()
    nothing = TraceFilter(text="flight", label="\x00")  # a label no name holds
    assert not traces_filtered(traces=Trace.objects.all(), filters=nothing).exists()


@pytest.mark.django_db(transaction=True)
def test_an_import_into_an_organization_deleted_meanwhile_writes_nothing():
    """The organization was read before the file (minutes, for a large upload) and is
    gone when the import writes: NotFound, and no dataset or trace under no organization
    (SQLite does not check an import's keys)."""
    from django.db import connection

    from traces.errors import NotFound
    from traces.models import Organization

    gone = Organization.objects.create(slug="gone", name="gone")
    with connection.cursor() as cursor:  # as a delete in another request would
        cursor.execute("DELETE FROM traces_organization WHERE id = %s", [gone.pk])
    line = json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n"
    with pytest.raises(NotFound, match="no organization 'gone'"):
        trace_import(organization=gone, dataset_name="d", files=[as_file(line, "a.jsonl")])
    assert not Dataset.objects.exists()
    assert not Trace.objects.exists()


@pytest.mark.parametrize("fmt", ["blocks", "chat"])
def test_real_tau2_runs_exported_import_back_whole(org, fmt):
    """A researcher's round trip (review of 28 Nov): the blocks export of tau2 telecom
    runs, whose user turns call tools with no text, was refused (551 problems)."""
    from benchmarks.realruns import DEFAULT_DATA
    from traces.selectors.exports import dataset_export_lines

    folder = DEFAULT_DATA / "tau2-bench"
    paths = sorted(folder.glob("*.json"))
    if not paths:
        pytest.skip(f"real benchmark data not available at {folder}")
    first = run(org, *[(p.name, p.open("rb")) for p in paths], dataset="runs")
    exported = b"".join(dataset_export_lines(dataset=first.dataset, fmt=fmt))
    again = run(org, as_file(exported, "export.jsonl"), dataset="again")
    assert (again.traces, again.blocks) == (first.traces, first.blocks)
    kinds = Block.objects.filter(trace__dataset=again.dataset).values_list("sub_type", flat=True)
    assert sorted(kinds) == sorted(
        Block.objects.filter(trace__dataset=first.dataset).values_list("sub_type", flat=True)
    )
