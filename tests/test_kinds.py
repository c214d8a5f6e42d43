"""traces/kinds.py: one row per block sub type, and every part that treats kinds apart
reads it (models, validation, ingest, the stitched tree, search, export, the trace page).

The tests that change a row (or add one) show that a part follows the table instead of
listing the sub types itself."""

import dataclasses
import io
import re
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from explorer.trace_page import BODY_RENDERERS
from tests.explorer.conftest import blocks_trace, import_traces, jsonl_bytes, make_user
from traces import kinds
from traces.checks import CheckInput, Limits, ParentInfo, ValidBlock, fail
from traces.errors import ParentSubtypeMismatch, ValidationFailed
from traces.ingest.blocks import blocks_to_drafts
from traces.models import Block, BlockType, SubType, Trace
from traces.selectors.blocks import trace_tree_get
from traces.selectors.exports import trace_events
from traces.selectors.search import traces_matching
from traces.services.blocks import BlockInput, block_create, trace_order_refill
from traces.services.imports import trace_import
from traces.services.traces import trace_create
from traces.validation import validate_block

ROOT = Path(__file__).resolve().parents[1]
TRACE_TEMPLATE = (ROOT / "templates" / "explorer" / "trace.html").read_text()
LIMITS = Limits(message=1000, think=1000, tool_args=1000, tool_result=1000)


def use_table(monkeypatch, rows: tuple[kinds.BlockKind, ...]) -> None:
    """Make `rows` the table for one test."""
    monkeypatch.setattr(kinds, "KINDS", rows)
    monkeypatch.setattr(kinds, "BY_SUB_TYPE", {row.sub_type: row for row in rows})
    monkeypatch.setattr(kinds, "SUB_TYPES", tuple(row.sub_type for row in rows))
    monkeypatch.setattr(kinds, "LANES", tuple(dict.fromkeys(row.lane for row in rows)))


def with_row(monkeypatch, sub_type: str, **changes) -> None:
    """The table with one row changed."""
    use_table(
        monkeypatch,
        tuple(
            dataclasses.replace(row, **changes) if row.sub_type == sub_type else row
            for row in kinds.KINDS
        ),
    )


# --- every row is complete ---------------------------------------------------------------


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda kind: kind.sub_type)
def test_every_row_is_complete(kind):
    assert kind.lane in ("MESSAGE", "ACT", "OBSERVE")
    assert kind.parent is None or kind.parent in kinds.SUB_TYPES
    assert kind.label and kind.view and callable(kind.check)
    assert (ROOT / "static" / kind.icon).is_file(), f"no icon file static/{kind.icon}"
    assert kind.icon.endswith(".svg")
    assert f"{{% partialdef kind-{kind.view} %}}" in TRACE_TEMPLATE, "no header partial"
    assert kind.render in BODY_RENDERERS
    assert kind.body and set(kind.body) <= set(kind.fields)
    # In a chat export a kind is an event of its own or goes into its parent's.
    assert (kind.to_event is None) != (kind.into_event is None)
    assert kind.into_event is None or kind.parent is not None
    # A block with a parent can be an orphan, listed under its own key.
    assert bool(kind.orphans) == (kind.parent is not None)


def test_the_rows_name_distinct_sub_types_views_and_orphan_lists():
    assert len(set(kinds.SUB_TYPES)) == len(kinds.KINDS)
    assert len({k.view for k in kinds.KINDS}) == len(kinds.KINDS)
    orphans = [k.orphans for k in kinds.KINDS if k.orphans]
    assert len(set(orphans)) == len(orphans)


def test_parents_form_trees_rooted_in_kinds_without_a_parent():
    for kind in kinds.KINDS:
        seen = set()
        while kind.parent is not None:
            assert kind.sub_type not in seen, "a cycle of parents"
            seen.add(kind.sub_type)
            kind = kinds.BY_SUB_TYPE[kind.parent]
    assert any(kind.parent is None for kind in kinds.KINDS)


def test_the_models_choices_follow_the_table():
    assert tuple(SubType.values) == kinds.SUB_TYPES
    assert tuple(BlockType.values) == kinds.LANES


@pytest.mark.django_db
def test_the_database_refuses_a_lane_the_table_does_not_give_its_sub_type(org):
    trace = trace_create(organization=org, dataset=None, name="t", metadata={})
    message = block_create(
        trace=trace, block=BlockInput(sub_type="MESSAGE", payload={"role": "user", "content": "x"})
    )
    row = Block.objects.get(pk=message["id"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Block.objects.filter(pk=row.pk).update(block_type="OBSERVE")


# --- a new row is picked up --------------------------------------------------------------


def _citation(payload, given: CheckInput) -> ValidBlock:
    if not isinstance(payload.get("url"), str):
        raise fail("payload.url must be a string", "payload.url", "required")
    return ValidBlock("CITATION", "OBSERVE", payload, None, None)


CITATION = kinds.BlockKind(
    "CITATION", lane="OBSERVE", parent="MESSAGE", check=_citation, orphans="citations",
    into_event=lambda event, payloads: event.update(citations=[p["url"] for p in payloads]),
    label="source", icon="icons/kind-result.svg", view="result", render="output",
    body=("url",), fields=("url",),
)  # fmt: skip


@pytest.fixture
def citations(monkeypatch):
    use_table(monkeypatch, (*kinds.KINDS, CITATION))


def test_validation_takes_a_new_rows_lane_parent_and_check(citations):
    message = ParentInfo(id="tb_1", sub_type="MESSAGE")
    valid = validate_block(
        sub_type="CITATION", payload={"url": "https://a.example"}, parent=message, limits=LIMITS
    )
    assert (valid.sub_type, valid.block_type) == ("CITATION", "OBSERVE")
    with pytest.raises(ValidationFailed) as missing:
        validate_block(sub_type="CITATION", payload={}, parent=message, limits=LIMITS)
    assert missing.value.details["field"] == "payload.url"
    with pytest.raises(ValidationFailed) as lane:
        validate_block(
            sub_type="CITATION", block_type="ACT", payload={"url": "u"}, parent=message,
            limits=LIMITS,
        )  # fmt: skip
    assert lane.value.details == {
        "field": "block_type", "rule": "matches_sub_type", "expected": "OBSERVE"
    }  # fmt: skip
    with pytest.raises(ParentSubtypeMismatch):
        call = ParentInfo(id="tb_2", sub_type="TOOL_CALL", call_id="c")
        validate_block(sub_type="CITATION", payload={"url": "u"}, parent=call, limits=LIMITS)


def test_validation_names_a_new_sub_type_among_those_it_takes(citations):
    with pytest.raises(ValidationFailed) as unknown:
        validate_block(sub_type="QUOTE", payload={}, parent=None, limits=LIMITS)
    assert "CITATION" in unknown.value.message


def test_a_block_array_hangs_a_new_kind_under_the_latest_block_of_its_parent_kind(citations):
    items = [
        {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "a"}},
        {"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": "b"}},
        {"sub_type": "CITATION", "payload": {"url": "https://a.example"}},
    ]
    converted = blocks_to_drafts(items, location={"trace": 0}, limits=LIMITS)
    assert converted.problems == []
    assert [d.parent for d in converted.blocks] == [None, None, 1]


def test_a_new_kind_without_its_parent_kind_in_the_file_is_refused(citations):
    items = [{"sub_type": "CITATION", "payload": {"url": "https://a.example"}}]
    converted = blocks_to_drafts(items, location={"trace": 0}, limits=LIMITS)
    assert [(p["field"], p["rule"]) for p in converted.problems] == [
        ("parent_block_id", "required")
    ]


# --- a changed row changes what each part does ---------------------------------------------


def _written_trace(org) -> Trace:
    """A trace written through the blocks service (so its export is built from the rows)."""
    trace = trace_create(organization=org, dataset=None, name="kinds", metadata={})
    message = block_create(
        trace=trace, block=BlockInput("MESSAGE", {"role": "assistant", "content": "Looking."})
    )["id"]
    block_create(trace=trace, block=BlockInput("THINK", {"text": "zebra stripes"}, None, message))
    call = block_create(
        trace=trace,
        block=BlockInput(
            "TOOL_CALL", {"call_id": "c1", "name": "look", "arguments": {}}, None, message
        ),
    )["id"]
    block_create(trace=trace, block=BlockInput("TOOL_RESULT", {"call_id": "c1", "output": "ok"},
                                               None, call))  # fmt: skip
    return trace


@pytest.mark.django_db
def test_every_kind_takes_its_part_in_a_chat_export(org):
    events = trace_events(trace=_written_trace(org))
    assert events == [
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": {}}}
            ],
            "reasoning_content": "zebra stripes",
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]


@pytest.mark.django_db
def test_the_export_follows_a_rows_into_event(org, monkeypatch):
    trace = _written_trace(org)
    with_row(monkeypatch, "THINK", into_event=lambda event, p: event.update(thinking=len(p)))
    [message, _] = trace_events(trace=trace)
    assert message["thinking"] == 1 and "reasoning_content" not in message


@pytest.mark.django_db
def test_search_reads_the_kinds_the_table_marks_searched(org, monkeypatch):
    trace = _written_trace(org)
    traces = Trace.objects.filter(pk=trace.pk)
    assert list(traces_matching(traces=traces, text="zebra")) == [trace]
    with_row(monkeypatch, "THINK", searched=False)
    assert list(traces_matching(traces=traces, text="zebra")) == []
    assert list(traces_matching(traces=traces, text="Looking")) == [trace]


@pytest.mark.django_db
def test_the_tree_hangs_blocks_by_the_tables_parents(org, monkeypatch):
    trace = _written_trace(org)
    tree = trace_tree_get(trace=trace, decode=True)
    [message] = tree["messages"]
    assert [c["sub_type"] for c in message["children"]] == ["THINK", "TOOL_CALL"]
    # A THINK whose row wanted a TOOL_CALL parent is an orphan under its row's key, once
    # the stored order follows the table (as a migration that changes a row refills it).
    with_row(monkeypatch, "THINK", parent="TOOL_CALL", orphans="reasoning")
    trace_order_refill(trace=trace)
    tree = trace_tree_get(trace=trace, decode=True)
    [message] = tree["messages"]
    assert [c["sub_type"] for c in message["children"]] == ["TOOL_CALL"]
    assert [o["payload"]["text"] for o in tree["orphans"]["reasoning"]] == ["zebra stripes"]


@pytest.mark.django_db
def test_the_trace_page_draws_a_block_from_its_row(org, client, monkeypatch):
    [trace] = import_traces(org, "kinds", [[
        {"role": "assistant", "content": "**bold**", "reasoning_content": "_hmm_",
         "tool_calls": [{"id": "c1", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]])  # fmt: skip
    client.force_login(make_user(org, "kinds-reader"))
    html = client.get(reverse("trace", args=[trace.pk])).content.decode()
    for kind in kinds.KINDS:
        assert f'src="/static/{kind.icon}"' in html
    assert '<span class="kind-label">think</span>' in html
    assert "<strong>bold</strong>" in html and "<em>hmm</em>" in html

    with_row(monkeypatch, "THINK", label="reasoning", render="output")
    html = client.get(reverse("trace", args=[trace.pk])).content.decode()
    assert '<span class="kind-label">reasoning</span>' in html
    assert "<em>hmm</em>" not in html and re.search(r"<pre[^>]*>_hmm_</pre>", html)


@pytest.mark.django_db
def test_the_trace_page_counts_blocks_by_kind(org, client):
    [trace] = import_traces(org, "counts", [[
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]])  # fmt: skip
    client.force_login(make_user(org, "counts-reader"))
    html = client.get(reverse("trace", args=[trace.pk])).content.decode()
    stats = re.findall(r'<span class="stat"><b>(\d+)</b> ([a-z]+)</span>', html)
    assert stats == [("2", "messages"), ("1", "call"), ("0", "thinks"), ("1", "result")]
    assert "messages-only" not in html


def test_a_block_array_in_a_file_imports_every_kind(org):
    result = trace_import(
        organization=org, dataset_name="all-kinds",
        files=[("t.jsonl", io.BytesIO(jsonl_bytes([blocks_trace()])))],
    )  # fmt: skip
    blocks = Block.objects.filter(trace__dataset=result.dataset)
    assert set(blocks.values_list("sub_type", flat=True)) == set(kinds.SUB_TYPES)
