"""The trace page's render cache (Block.rendered, explorer/trace_page.py): the first page
that shows a block keeps what it drew of it; the pages after draw the same from it, with
what depends on the reader (rewards, labels, who may edit) drawn for each response."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from explorer import trace_page
from explorer.render.effort import Effort
from tests.explorer.conftest import PNG_URL, import_traces
from tests.explorer.test_trace_story import imported
from tests.explorer.test_trace_view import page_url
from traces.models import Block, Trace
from traces.services.annotations import annotation_create, block_extra_patch, label_create

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"|"X-CSRFToken": "[^"]+"')


def _page(client, trace: Trace) -> str:
    response = client.get(page_url(trace))
    assert response.status_code == 200
    return CSRF.sub("csrf", response.content.decode())


@pytest.fixture
def chat_trace(org) -> Trace:
    events = [
        {"role": "system", "content": "Be **brief**."},
        {"role": "user", "content": "Find the *weather* in `Paris`."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            ],
        },  # fmt: skip
        {"role": "tool", "tool_call_id": "c1", "content": '{"forecast": "22°C"}'},
        {"role": "assistant", "content": "```python\nprint('22°C')\n```\nIt is **22°C**."},
    ]
    return import_traces(org, "render-cache", [events])[0]


@pytest.fixture
def counted_renderers(monkeypatch) -> list[str]:
    """The sub types whose bodies were drawn (not taken from the cache), in order."""
    drawn: list[str] = []

    def counting(name, render):
        def run(value, budget, ctx, metadata):
            drawn.append(name)
            return render(value, budget, ctx, metadata)

        return run

    renderers = {name: counting(name, r) for name, r in trace_page.BODY_RENDERERS.items()}
    monkeypatch.setattr(trace_page, "BODY_RENDERERS", renderers)
    return drawn


def _rendered(trace: Trace) -> dict[str, str | None]:
    return dict(Block.objects.filter(trace=trace).values_list("id", "rendered"))


def test_the_first_page_keeps_what_it_drew_and_the_next_draws_the_same_from_it(
    member_client, chat_trace, counted_renderers
):
    assert set(_rendered(chat_trace).values()) == {None}
    first = _page(member_client, chat_trace)
    assert len(counted_renderers) == chat_trace.block_count
    stored = _rendered(chat_trace)
    assert all(text.startswith(trace_page.RENDER_VERSION) for text in stored.values())

    counted_renderers.clear()
    second = _page(member_client, chat_trace)
    assert counted_renderers == []  # nothing formatted again
    assert second == first
    assert "<strong>brief</strong>" in second and '<span class="k">print</span>' not in second
    assert 'class="code hl"' in second


def test_an_entry_of_another_renderer_version_is_drawn_again_and_replaced(
    member_client, chat_trace, counted_renderers
):
    first = _page(member_client, chat_trace)
    Block.objects.filter(trace=chat_trace).update(rendered='0123456789abcdef{"body": "stale"}')
    counted_renderers.clear()
    again = _page(member_client, chat_trace)
    assert again == first and "stale" not in again
    assert len(counted_renderers) == chat_trace.block_count
    assert all(t.startswith(trace_page.RENDER_VERSION) for t in _rendered(chat_trace).values())


def test_a_page_the_cache_holds_reads_no_payload_of_the_blocks_past_it(
    member_client, org, monkeypatch
):
    # A page reads a block or two past the rows it shows (to know where it ends): those
    # are not drawn, so not kept, and their payloads must not be read for nothing.
    monkeypatch.setattr(trace_page, "CHUNK_ROWS", 2)
    events = [{"role": r, "content": f"turn {n}"} for n in range(3) for r in ("user", "assistant")]
    [trace] = import_traces(org, "render-cache-past", [events])
    first = _page(member_client, trace)
    assert "turn 0" in first and "turn 1" not in first  # two rows: the first turn
    assert sum(text is not None for text in _rendered(trace).values()) == 2

    with CaptureQueriesContext(connection) as queries:
        assert _page(member_client, trace) == first
    block_reads = [q["sql"] for q in queries.captured_queries if "traces_block" in q["sql"]]
    assert block_reads and not any('"payload"' in sql for sql in block_reads)


def test_rewards_labels_and_who_may_edit_are_drawn_for_each_response(
    member_client, viewer_client, chat_trace
):
    _page(member_client, chat_trace)  # fills the cache, as a member
    message = Block.objects.get(trace=chat_trace, number=2)
    block_extra_patch(block=message, patch={"reward": 0.25})
    label_create(dataset=chat_trace.dataset, name="wrong-city")
    annotation_create(trace=chat_trace, label="wrong-city", block_id=message.pk)

    html = _page(member_client, chat_trace)
    assert f'id="reward-{message.pk}"' in html and 'value="0.25"' in html
    assert ">wrong-city</a>" in html
    assert html.count('<form class="reward reward-block') == chat_trace.block_count

    as_viewer = _page(viewer_client, chat_trace)
    assert '<form class="reward reward-block' not in as_viewer
    assert "reward <b>0.25</b>" in as_viewer and ">wrong-city</a>" in as_viewer


@pytest.mark.parametrize("listed", [500, 1])
def test_the_blocks_labels_come_from_the_annotations_the_page_lists_when_it_lists_all(
    member_client, chat_trace, monkeypatch, listed
):
    # The page takes its list as all of them when it holds fewer than it could.
    monkeypatch.setattr("explorer.views.labels.ANNOTATIONS_SHOWN", listed)
    first, second = Block.objects.filter(trace=chat_trace).order_by("number")[1:3]
    label_create(dataset=chat_trace.dataset, name="wrong-city")
    label_create(dataset=chat_trace.dataset, name="no-units")
    annotation_create(trace=chat_trace, label="wrong-city", block_id=first.pk)
    annotation_create(trace=chat_trace, label="no-units", block_id=second.pk)
    annotation_create(trace=chat_trace, label="wrong-city", block_id=second.pk)
    with CaptureQueriesContext(connection) as queries:
        html = _page(member_client, chat_trace)
    for block, names in ((first, ["wrong-city"]), (second, ["no-units", "wrong-city"])):
        article = html[html.index(f'id="{block.pk}"') :].split("</article>", 1)[0]
        shown = re.findall(r'class="label-tag small"[^>]*>([^<]+)</a>', article)
        assert shown == names
    # All three listed: no query of its own for the blocks' labels; one otherwise.
    label_reads = [
        q for q in queries.captured_queries
        if q["sql"].startswith('SELECT "traces_annotation"."block_id" AS "block_id"')
    ]  # fmt: skip
    assert len(label_reads) == (0 if listed == 500 else 1)


def test_blocks_drawn_after_the_effort_allowance_ran_out_are_not_kept(
    member_client, chat_trace, monkeypatch
):
    # A response with no formatting time left draws Markdown as plain text...
    monkeypatch.setattr(trace_page, "Effort", lambda: Effort(seconds=0))
    plain = _page(member_client, chat_trace)
    assert "<strong>brief</strong>" not in plain and "Be **brief**." in plain
    # ... and keeps none of what it drew plainer (a block it drew as any response would,
    # a message with no text, may be kept).
    kept = [text for text in _rendered(chat_trace).values() if text is not None]
    assert len(kept) < chat_trace.block_count
    assert not any("brief" in text or "Paris" in text for text in kept)
    # ... which the next response, with its own allowance, does not inherit.
    monkeypatch.setattr(trace_page, "Effort", Effort)
    assert "<strong>brief</strong>" in _page(member_client, chat_trace)


def test_blocks_drawn_whole_after_a_block_too_large_to_draw_now_are_kept(member_client, org):
    # A huge early block is refused (its decoding would overrun the response's time): the
    # allowance is not spent, so the blocks after it are drawn whole, and kept; only the
    # huge one is drawn again by each response (researcher review: it had stopped the
    # cache for the rest of the trace, and every view drew everything after it).
    huge = "[" + ",".join(["[]"] * 600_000) + "]"  # 1.8 MB of JSON text
    events = [
        {"role": "user", "content": "Start."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": huge},
        *[{"role": r, "content": f"turn **{n}**"} for n in range(6) for r in ("user", "assistant")],
    ]  # fmt: skip
    [trace] = import_traces(org, "render-cache-huge", [events])
    first = _page(member_client, trace)
    assert "A large block" in first and "<strong>5</strong>" in first
    kept = {b.payload.get("content") for b in Block.objects.filter(trace=trace)
            if _rendered(trace)[b.pk] is not None}  # fmt: skip
    assert "turn **5**" in kept and huge not in kept
    assert _page(member_client, trace) == first


def test_a_block_that_shows_a_stored_image_is_drawn_for_each_response(member_client, org):
    [trace] = import_traces(org, "render-cache-image", [[
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG_URL}}]},
        {"role": "assistant", "content": "A tiny picture."},
    ]])  # fmt: skip
    html = _page(member_client, trace)
    assert 'class="trace-img"' in html
    kept = _rendered(trace)
    [image_block] = Block.objects.filter(trace=trace, number=1)
    assert kept[image_block.pk] is None  # its type may come later than the block
    assert sum(text is not None for text in kept.values()) == 1


def test_a_row_of_the_kinds_table_is_part_of_the_entry(member_client, chat_trace, monkeypatch):
    _page(member_client, chat_trace)
    call = trace_page.kinds.BY_SUB_TYPE["TOOL_CALL"]
    relabelled = type(call)(**{**call.__dict__, "label": "invocation"})
    monkeypatch.setitem(trace_page.kinds.BY_SUB_TYPE, "TOOL_CALL", relabelled)
    assert '<span class="kind-label">invocation</span>' in _page(member_client, chat_trace)


def _fresh(client, trace: Trace) -> str:
    """The page drawn anew: the render cache emptied first (the page fills it again)."""
    Block.objects.filter(trace=trace).update(rendered=None)
    return _page(client, trace)


@pytest.mark.parametrize(
    "log", ["inspect-ai/log_tool_call_error.json", "who-and-when/hand-crafted-1.json"]
)
def test_a_page_drawn_from_the_kept_articles_is_the_page_drawn_anew(
    org, member_client, viewer_client, counted_renderers, log
):
    # Real logs: tool errors and stand-ins "not in the log" (marks), turns that only call
    # tools (their message's body left out), a failure step; with a reward and a label.
    trace = imported(org, log)
    blocks = list(Block.objects.filter(trace=trace, turn__gte=0).order_by("number")[:3])
    block_extra_patch(block=blocks[1], patch={"reward": 1})
    label_create(dataset=trace.dataset, name="looped")
    annotation_create(trace=trace, label="looped", block_id=blocks[2].pk)
    for client in (member_client, viewer_client):
        anew = _fresh(client, trace)
        counted_renderers.clear()
        kept = _page(client, trace)
        assert counted_renderers == []  # every block from its kept article
        assert kept == anew
    assert 'class="thumb thumb-up is-on"' in _page(member_client, trace)
    assert ">looped</a>" in kept and "has-reward" in kept and "reward <b>1</b>" in kept


def test_a_kept_article_of_a_block_numbered_again_is_not_shown(member_client, chat_trace):
    _page(member_client, chat_trace)
    block = Block.objects.get(trace=chat_trace, number=2)
    Block.objects.filter(pk=block.pk).update(number=7)  # as trace_blocks_placed_again may
    html = _page(member_client, chat_trace)
    assert 'title="Permalink to block 7">#7</a>' in html
    assert 'title="Permalink to block 2">' not in html
    # ... and kept again for its new number: the next page fills its holes.
    assert '"number":7,' in _rendered(chat_trace)[block.pk]
    assert html == _page(member_client, chat_trace) == _fresh(member_client, chat_trace)


def test_a_kept_article_of_another_address_is_not_shown(member_client, chat_trace):
    # A site moved under another path, or static files with other names: the articles
    # hold both, and are drawn again from the entry's fields.
    first = _page(member_client, chat_trace)
    for block_id, text in _rendered(chat_trace).items():
        moved = text.replace('"at":"/t/', '"at":"/old/t/').replace('"icon":"/', '"icon":"/old/')
        assert moved != text
        Block.objects.filter(pk=block_id).update(rendered=moved)
    assert _page(member_client, chat_trace) == first
    assert not any("/old/" in text for text in _rendered(chat_trace).values())  # kept again


def test_a_change_to_the_articles_markup_is_a_new_render_version(monkeypatch):
    # A deployment that changes how trace_html draws an article draws every kept one again.
    from pathlib import Path

    from explorer import trace_html

    read = Path.read_bytes
    changed = Path(trace_html.__file__).resolve()
    monkeypatch.setattr(
        Path, "read_bytes", lambda path: read(path) + (b"#" if path.resolve() == changed else b"")
    )
    assert trace_page._render_version() != trace_page.RENDER_VERSION
