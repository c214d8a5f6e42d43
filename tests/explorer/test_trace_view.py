"""The trace page: lanes, access, folding, chunks, permalinks, rewards, images."""

import base64
import hashlib
import io
import json
import re
import time

import pytest
from django.utils import timezone

from tests.explorer.conftest import (
    LONG_OUTPUT,
    PNG,
    PNG_URL,
    import_lines,
    import_traces,
    jsonl_bytes,
    parse,
)
from traces.models import Block, Image, Trace
from traces.services.annotations import block_extra_patch
from traces.services.imports import trace_import
from traces.services.traces import trace_patch

HTMX = {"HTTP_HX_REQUEST": "true"}


def page_url(trace: Trace) -> str:
    return f"/t/{trace.pk}/"


def block_of(trace: Trace, sub_type: str, **payload) -> Block:
    for block in Block.objects.filter(trace=trace, sub_type=sub_type).order_by("created_at", "id"):
        if all(block.payload.get(k) == v for k, v in payload.items()):
            return block
    raise AssertionError(f"no {sub_type} with {payload}")


# --- Lanes -----------------------------------------------------------------------------


def test_three_lanes_with_each_block_in_its_lane(member_client, imported_trace):
    response = member_client.get(page_url(imported_trace))
    assert response.status_code == 200
    html = response.content.decode()
    page = parse(html)
    for head in ("lane-head-message", "lane-head-act", "lane-head-observe"):
        assert f'class="lane-head {head}"' in html

    messages = Block.objects.filter(trace=imported_trace, sub_type="MESSAGE")
    assert messages.count() == 4
    for message in messages:
        assert page.lane_of(message.pk) == "cell-message"
    think = block_of(imported_trace, "THINK")
    assert page.lane_of(think.pk) == "cell-act"

    call = block_of(imported_trace, "TOOL_CALL", call_id="call_search")
    result = block_of(imported_trace, "TOOL_RESULT", call_id="call_search")
    assert page.lane_of(call.pk) == "cell-act"
    assert page.lane_of(result.pk) == "cell-observe"
    # The result sits beside its call: the same call/result pair, in the same row.
    assert page.pair_of(result.pk) == page.pair_of(call.pk) is not None
    assert page.row_of(call.pk) == page.row_of(call.parent_id)

    stream = block_of(imported_trace, "TOOL_CALL", call_id="call_stream")
    deltas = [b for b in Block.objects.filter(trace=imported_trace, call_id="call_stream")
              if b.sub_type == "TOOL_RESULT"]  # fmt: skip
    assert len(deltas) == 2
    for delta in deltas:
        assert page.pair_of(delta.pk) == page.pair_of(stream.pk)
        assert page.pair_of(delta.pk) != page.pair_of(call.pk)
    ids = page.ids()
    seq0, seq1 = sorted(deltas, key=lambda b: b.payload["seq"])
    assert ids.index(seq0.pk) < ids.index(seq1.pk)
    assert "seq 0" in html and "seq 1" in html

    # Blocks come in stitched order: message, think, call, its results, next call ...
    order = [b for b in ids if b.startswith("tb_")]
    assert order.index(think.pk) < order.index(call.pk) < order.index(result.pk)
    assert order.index(result.pk) < order.index(stream.pk)


def test_header_shows_breadcrumb_counts_metadata_and_neighbours(
    member_client, imported_chat_traces
):
    first, second = imported_chat_traces
    html = member_client.get(page_url(first)).content.decode()
    assert f'href="/d/{first.dataset_id}/"' in html
    assert "trace-page-chat" in html
    # The dataset's index is "#0", as in its list (a trial is "trial 0", never "#").
    crumbs = re.search(r'<nav class="breadcrumbs".*?</nav>', html, re.S).group()
    assert re.search(r">#0</a>\s*</nav>$", crumbs) and "trace #" not in crumbs
    page = parse(html)
    nxt = [a for a in page.all("a") if a.get("rel") == "next"]
    assert nxt and nxt[0]["href"] == page_url(second)
    assert not [a for a in page.all("a") if a.get("rel") == "prev"]
    html2 = member_client.get(page_url(second)).content.decode()
    prev = [a for a in parse(html2).all("a") if a.get("rel") == "prev"]
    assert prev and prev[0]["href"] == page_url(first)
    assert "<b>1</b> call" in html  # block counts by kind
    assert "<b>3</b> messages" in html


def test_content_is_rendered_for_each_kind(member_client, imported_trace, imported_chat_traces):
    html = member_client.get(page_url(imported_trace)).content.decode()
    assert "checkout flow" in html  # the trace's name
    assert "task-7" in html  # its metadata
    assert "<strong>brief</strong>" in html  # markdown
    assert "no text" not in html  # null content of a turn that only calls a tool: the call
    # Arguments in the model's order, never sorted.
    call = html[html.index("search_catalog") :]
    assert call.index('"zeta"') < call.index('"alpha"') < call.index('"mid"')
    # Control characters shown, CRLF as a line break.
    assert "back\u2408space" in html
    assert "part one\nback" in html
    # An image we store is shown from our URL; a remote one only as a link.
    sha = hashlib.sha256(PNG).hexdigest()
    page = parse(html)
    srcs = [img["src"] for img in page.all("img")]
    assert f"/t/{imported_trace.pk}/images/{sha}" in srcs
    assert not any("example.com" in src for src in srcs)
    assert 'href="https://example.com/remote.png"' in html

    chat_html = member_client.get(page_url(imported_chat_traces[0])).content.decode()
    assert "arguments are not JSON" in chat_html
    assert "{&#x27;cmd&#x27;: ls" in chat_html or "{'cmd': ls" in chat_html
    assert "Orchestrator (thought)" in chat_html
    assert '<span class="agent-name" title="name: alice">alice</span>' in chat_html


def test_a_user_simulators_reasoning_says_whose_it_is(member_client, org):
    """A THINK under the user's message (tau2's user simulator) is labelled as the
    user's, in the user's colour; the agent's own stays a plain think."""
    user = {
        "role": "user",
        "content": "My flight is late.",
        "raw_data": {"message": {"reasoning_content": "I play Ethan; start upset."}},
    }
    agent = {"role": "assistant", "content": "Sorry.", "reasoning_content": "apologise first"}
    dataset = import_lines(org, "simulated", [{"messages": [user, agent]}])
    html = member_client.get(page_url(dataset.traces.get())).content.decode()
    thinks = re.findall(r'<article class="([^"]*k-think[^"]*)"', html)
    assert len(thinks) == 2
    assert "role-user" in thinks[0] and "role-" not in thinks[1]
    assert html.count("of the user</span>") == 1


def test_orphans_have_their_own_section(member_client, imported_trace):
    message = block_of(imported_trace, "MESSAGE", role="system")
    now = timezone.now()
    orphan = Block.objects.create(
        trace=imported_trace,
        block_type="OBSERVE",
        sub_type="TOOL_RESULT",
        parent=message,  # a result under a message: an orphan in spec/004's tree
        payload={"call_id": "lost", "output": "where am I"},
        call_id="lost",
        result_seq=None,
        created_at=now,
        updated_at=now,
    )
    html = member_client.get(page_url(imported_trace)).content.decode()
    assert 'id="orphans"' in html
    assert html.index('id="orphans"') < html.index(f'id="{orphan.pk}"')
    assert "where am I" in html


# --- Access ----------------------------------------------------------------------------


def test_anonymous_is_sent_to_login(client, imported_trace):
    response = client.get(page_url(imported_trace))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_other_organization_gets_404_everywhere(outsider_client, imported_trace):
    block = block_of(imported_trace, "TOOL_RESULT", call_id="call_search")
    sha = hashlib.sha256(PNG).hexdigest()
    base = page_url(imported_trace)
    for url in (
        base,
        f"{base}?after=0",
        f"{base}b/{block.pk}/full",
        f"/t/{imported_trace.pk}/images/{sha}",
    ):
        assert outsider_client.get(url).status_code == 404, url
        assert outsider_client.get(url, **HTMX).status_code == 404, url
    for url in (f"{base}reward", f"{base}b/{block.pk}/reward"):
        assert outsider_client.post(url, {"action": "up"}, **HTMX).status_code == 404
    assert outsider_client.get("/t/tr_nothere/").status_code == 404


def test_unknown_block_is_404(member_client, imported_trace):
    assert member_client.get(f"{page_url(imported_trace)}b/tb_nope/full").status_code == 404


# --- Folding ---------------------------------------------------------------------------


def test_long_payload_is_folded_and_loaded_in_full(member_client, imported_trace):
    result = block_of(imported_trace, "TOOL_RESULT", call_id="call_search")
    html = member_client.get(page_url(imported_trace)).content.decode()
    assert "line 0:" in html
    assert "line 399:" not in html
    full_url = f"/t/{imported_trace.pk}/b/{result.pk}/full"
    assert f'href="{full_url}"' in html
    assert f'hx-get="{full_url}"' in html
    assert "Show all (" in html and "KB)" in html

    partial = member_client.get(full_url, **HTMX)
    assert partial.status_code == 200
    body = partial.content.decode()
    assert "<html" not in body
    assert body.strip().startswith(f'<div class="block-body" id="body-{result.pk}"')
    assert LONG_OUTPUT.splitlines()[-1] in body
    assert "Show all" not in body

    whole = member_client.get(full_url)
    assert whole.status_code == 200
    page = whole.content.decode()
    assert "<html" in page and "line 399:" in page
    assert f"?focus={result.pk}#{result.pk}" in page  # back to the block in the trace


def test_raw_is_loaded_on_demand_when_large(member_client, trace_importer):
    big = "word " * 2000
    trace = trace_importer([[{"role": "user", "content": big}]], dataset="raw-demand")[0]
    message = Block.objects.get(trace=trace)
    html = member_client.get(page_url(trace)).content.decode()
    full_url = f"/t/{trace.pk}/b/{message.pk}/full"
    assert html.count("word ") < 400  # neither payload nor raw rendered whole
    # The drawer's contents come when it opens, with the control that loads the raw.
    assert f'hx-get="{full_url}" hx-trigger="toggle once" hx-target="#drawer-{message.pk}"' in html
    drawer = member_client.get(full_url, HTTP_HX_TARGET=f"drawer-{message.pk}", **HTMX)
    assert drawer["X-Partial"] == "drawer_body"
    drawer_html = drawer.content.decode()
    assert drawer_html.startswith(f'<div class="drawer-body" id="drawer-{message.pk}"')
    assert f'hx-get="{full_url}" hx-target="#raw-{message.pk}"' in drawer_html
    assert drawer_html.count("word ") < 400
    # The block's page gives htmx the partial of the place it swaps (explorer/views/base.py).
    raw = member_client.get(full_url, HTTP_HX_TARGET=f"raw-{message.pk}", **HTMX)
    assert raw["X-Partial"] == "raw"
    assert raw.content.decode().strip().startswith(f'<div class="raw-slot" id="raw-{message.pk}"')
    assert raw.content.decode().count("word ") == 2000
    body = member_client.get(full_url, HTTP_HX_TARGET=f"body-{message.pk}", **HTMX)
    assert body["X-Partial"] == "block_body"
    assert body.content.decode().startswith(f'<div class="block-body" id="body-{message.pk}"')


# --- Chunks and permalinks -------------------------------------------------------------


@pytest.fixture
def long_trace(trace_importer) -> Trace:
    events = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn number {n}"}
        for n in range(400)
    ]
    return trace_importer([events], dataset="long-trace")[0]


@pytest.mark.slow
def test_rows_come_in_chunks(member_client, long_trace):
    html = member_client.get(page_url(long_trace)).content.decode()
    page = parse(html)
    assert "turn number 149<" in html
    assert "turn number 150<" not in html
    sentinels = [a for a in page.all("div") if "more-rows" in a.get("class", "")]
    assert len(sentinels) == 1
    more = sentinels[0]
    assert more["hx-get"] == f"/t/{long_trace.pk}/?after=150"  # the page's own URL
    assert more["hx-trigger"] == "revealed"
    assert more["hx-swap"] == "outerHTML"
    # Without JS, a plain link to the same rows.
    links = [
        a for a in page.all("a") if a.get("href", "").startswith(f"/t/{long_trace.pk}/?after=150")
    ]
    assert links

    chunk = member_client.get(more["hx-get"], **HTMX)
    assert chunk.status_code == 200
    body = chunk.content.decode()
    assert "<html" not in body
    assert "turn number 150<" in body and "turn number 299<" in body
    assert "turn number 300<" not in body
    assert f'hx-get="/t/{long_trace.pk}/?after=300"' in body
    assert chunk["X-Partial"] == "chunk" and "HX-Request" in chunk["Vary"]
    last = member_client.get(f"/t/{long_trace.pk}/?after=300", **HTMX).content.decode()
    assert "turn number 399<" in last
    assert "?after=" not in last
    assert "End of trace" in last

    # Without JavaScript the same address is the page, from that row.
    later = member_client.get(f"/t/{long_trace.pk}/?after=150").content.decode()
    assert "turn number 150<" in later and "turn number 149<" not in later
    assert "Show from the first row" in later


def test_a_later_chunk_offers_label_this_block_to_editors_only(
    member_client, viewer_client, imported_trace
):
    url = f"/t/{imported_trace.pk}/?after=1"
    as_member = member_client.get(url, **HTMX).content.decode()
    blocks = as_member.count("data-block")
    assert blocks and as_member.count(">label this block</a>") == blocks
    as_viewer = viewer_client.get(url, **HTMX).content.decode()
    assert as_viewer.count("data-block") == blocks and "label this block" not in as_viewer


@pytest.mark.parametrize("acts", ["9223372036854775807", "1" * 20])
def test_a_place_too_large_for_the_database_opens_the_page(member_client, imported_trace, acts):
    for headers in ({}, HTMX):
        response = member_client.get(f"/t/{imported_trace.pk}/?after=1&acts={acts}", **headers)
        assert response.status_code == 200


def test_every_block_has_a_permalink_that_opens_the_page_at_it(member_client, imported_trace):
    html = member_client.get(page_url(imported_trace)).content.decode()
    page = parse(html)
    ids = set(page.ids())
    hrefs = {a.get("href") for a in page.all("a")}
    for block in Block.objects.filter(trace=imported_trace):
        assert block.pk in ids
        assert f"{page_url(imported_trace)}?focus={block.pk}#{block.pk}" in hrefs


def test_focus_renders_the_rows_around_a_far_block(member_client, long_trace):
    far = block_of(long_trace, "MESSAGE", content="turn number 350")
    html = member_client.get(f"{page_url(long_trace)}?focus={far.pk}").content.decode()
    assert f'id="{far.pk}"' in html
    assert "turn number 348<" in html
    assert "turn number 10<" not in html
    assert "Show from the first row" in html
    near = block_of(long_trace, "MESSAGE", content="turn number 20")
    html = member_client.get(f"{page_url(long_trace)}?focus={near.pk}").content.decode()
    assert "turn number 0<" in html and f'id="{near.pk}"' in html
    bogus = member_client.get(f"{page_url(long_trace)}?focus=tb_unknown")
    assert bogus.status_code == 200


# --- Rewards ---------------------------------------------------------------------------


def test_trace_reward_through_htmx(member_client, imported_trace):
    url = f"{page_url(imported_trace)}reward"
    response = member_client.post(url, {"action": "down"}, **HTMX)
    assert response.status_code == 200
    imported_trace.refresh_from_db()
    assert imported_trace.extra == {"reward": 0}
    assert imported_trace.reward == 0.0
    body = response.content.decode()
    assert body.lstrip().startswith('<form class="reward reward-trace is-set"')
    assert 'class="thumb thumb-down is-on"' in body
    assert 'id="trace-reward-summary" hx-swap-oob="true"' in body

    member_client.post(url, {"action": "set", "value": "0.25"}, **HTMX)
    imported_trace.refresh_from_db()
    assert imported_trace.extra["reward"] == 0.25 and imported_trace.reward == 0.25

    member_client.post(url, {"action": "set", "value": "-3"}, **HTMX)
    imported_trace.refresh_from_db()
    assert imported_trace.extra["reward"] == -3

    member_client.post(url, {"action": "clear"}, **HTMX)
    imported_trace.refresh_from_db()
    assert "reward" not in imported_trace.extra
    assert imported_trace.reward == 1.0  # back to the benchmark's metadata.reward


def test_invalid_number_is_an_inline_error(member_client, imported_trace):
    url = f"{page_url(imported_trace)}reward"
    for value in ("abc", "", "nan", "inf", "1e999"):
        response = member_client.post(url, {"action": "set", "value": value}, **HTMX)
        assert response.status_code == 422, value
        assert 'class="reward-error" role="alert"' in response.content.decode()
    imported_trace.refresh_from_db()
    assert "reward" not in imported_trace.extra
    no_js = member_client.post(url, {"action": "set", "value": "abc"})
    assert no_js.status_code == 422
    assert "is not a number" in no_js.content.decode()


def test_block_reward_through_htmx_and_without_js(member_client, imported_trace):
    block = block_of(imported_trace, "TOOL_CALL", call_id="call_search")
    url = f"{page_url(imported_trace)}b/{block.pk}/reward"
    response = member_client.post(url, {"action": "up"}, **HTMX)
    assert response.status_code == 200
    block.refresh_from_db()
    assert block.extra == {"reward": 1}
    assert f'id="reward-{block.pk}"' in response.content.decode()
    imported_trace.refresh_from_db()
    assert imported_trace.extra == {}  # a block's reward is not the trace's

    response = member_client.post(url, {"action": "set", "value": "0.5"})
    assert response.status_code == 302
    assert response["Location"] == f"{page_url(imported_trace)}?focus={block.pk}#{block.pk}"
    block.refresh_from_db()
    assert block.extra == {"reward": 0.5}

    member_client.post(url, {"action": "clear"}, **HTMX)
    block.refresh_from_db()
    assert block.extra == {}

    response = member_client.post(f"{page_url(imported_trace)}reward", {"action": "up"})
    assert response.status_code == 302 and response["Location"] == page_url(imported_trace)


def test_reward_needs_post(member_client, imported_trace):
    assert member_client.get(f"{page_url(imported_trace)}reward").status_code == 405


def test_viewer_sees_rewards_read_only_and_cannot_post(viewer_client, imported_trace):
    block = block_of(imported_trace, "TOOL_CALL", call_id="call_search")
    block.extra = {"reward": 0.75}
    block.save()
    html = viewer_client.get(page_url(imported_trace)).content.decode()
    assert 'hx-post="' not in html
    assert "reward <b>0.75</b>" in html
    for url in (
        f"{page_url(imported_trace)}reward",
        f"{page_url(imported_trace)}b/{block.pk}/reward",
    ):
        assert viewer_client.post(url, {"action": "up"}, **HTMX).status_code == 403
        assert viewer_client.post(url, {"action": "up"}).status_code == 403
    block.refresh_from_db()
    imported_trace.refresh_from_db()
    assert block.extra == {"reward": 0.75} and "reward" not in imported_trace.extra


def test_a_public_trace_is_readable_signed_out_but_not_writable(client, imported_trace):
    block = block_of(imported_trace, "TOOL_CALL", call_id="call_search")
    assert client.get(page_url(imported_trace)).status_code == 302  # private: sign in first
    imported_trace.dataset.is_public = True
    imported_trace.dataset.save()
    response = client.get(page_url(imported_trace))
    html = response.content.decode()
    assert response.status_code == 200 and 'hx-post="' not in html
    assert client.get(f"{page_url(imported_trace)}b/{block.pk}/full").status_code == 200
    assert client.get(f"{page_url(imported_trace)}?after=0", **HTMX).status_code == 200
    for url in (
        f"{page_url(imported_trace)}reward",
        f"{page_url(imported_trace)}b/{block.pk}/reward",
    ):
        response = client.post(url, {"action": "up"})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    block.refresh_from_db()
    assert block.extra == {}


def test_members_see_active_controls(member_client, imported_trace):
    html = member_client.get(page_url(imported_trace)).content.decode()
    assert f'hx-post="/t/{imported_trace.pk}/reward"' in html
    assert (
        html.count('name="csrfmiddlewaretoken"')
        >= Block.objects.filter(trace=imported_trace).count()
    )


# --- Images ----------------------------------------------------------------------------


def test_images_are_served_only_for_traces_that_reference_them(
    member_client, imported_trace, trace_importer
):
    sha = hashlib.sha256(PNG).hexdigest()
    url = f"/t/{imported_trace.pk}/images/{sha}"
    response = member_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "max-age=31536000" in response["Cache-Control"]
    assert response.content == PNG
    assert member_client.get(url, HTTP_IF_NONE_MATCH=f'"{sha}"').status_code == 304

    other = trace_importer([[{"role": "user", "content": "no image here"}]], dataset="no-img")[0]
    assert member_client.get(f"/t/{other.pk}/images/{sha}").status_code == 404
    assert member_client.get(f"/t/{imported_trace.pk}/images/{'0' * 64}").status_code == 404
    assert member_client.get(f"/t/{imported_trace.pk}/images/not-a-sha").status_code == 404


def test_a_trace_referencing_another_organizations_image_cannot_read_it(
    imported_trace, outsider_client, rival_org
):
    """Knowing the SHA-256 of another organization's image, an outsider writes a trace of
    their own whose text references it: the image stays unreadable (it used to be served,
    since images were global and any trace mentioning the hash could read them)."""
    sha = hashlib.sha256(PNG).hexdigest()
    rival = rival_org
    ref = f"data:image/png;base64,te-image:sha256:{sha}"
    content = [{"type": "image_url", "image_url": {"url": ref}}]
    mine = import_traces(rival, "stolen", [[{"role": "user", "content": content}]])[0]
    assert outsider_client.get(page_url(mine)).status_code == 200
    assert outsider_client.get(f"/t/{mine.pk}/images/{sha}").status_code == 404
    assert outsider_client.get(f"/t/{imported_trace.pk}/images/{sha}").status_code == 404


def test_an_image_imported_by_two_organizations_is_each_ones_own(
    imported_trace, member_client, outsider_client, rival_org
):
    sha = hashlib.sha256(PNG).hexdigest()
    rival = rival_org
    content = [{"type": "image_url", "image_url": {"url": PNG_URL}}]
    theirs = import_traces(rival, "same image", [[{"role": "user", "content": content}]])[0]
    assert Image.objects.filter(sha256=sha).count() == 2
    assert outsider_client.get(f"/t/{theirs.pk}/images/{sha}").content == PNG
    assert member_client.get(f"/t/{imported_trace.pk}/images/{sha}").content == PNG
    assert member_client.get(f"/t/{theirs.pk}/images/{sha}").status_code == 404


def test_svg_is_never_inline(member_client, trace_importer):
    svg = (
        b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
    )
    url = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    trace = trace_importer(
        [[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]],
        dataset="svg",
    )[0]
    sha = hashlib.sha256(svg).hexdigest()
    assert Image.objects.get(sha256=sha).mime_type == "image/svg+xml"
    html = member_client.get(page_url(trace)).content.decode()
    assert not [img for img in parse(html).all("img") if sha in img.get("src", "")]
    assert f'href="/t/{trace.pk}/images/{sha}" download' in html
    response = member_client.get(f"/t/{trace.pk}/images/{sha}")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")


# --- Size ------------------------------------------------------------------------------


@pytest.mark.slow
def test_five_thousand_blocks_open_with_a_small_page(member_client, org):
    """5,000 blocks, about 20 MB of payloads: the first response stays well under 1.5 MB."""
    filler = "The quick brown fox jumps over the lazy dog. " * 90  # ~4 KB
    events = [{"role": "user", "content": "Start. " + filler}]
    for turn in range(1666):  # three blocks a turn
        call_id = f"call_{turn}"
        events.append(
            {
                "role": "assistant",
                "content": f"Step {turn}. {filler}",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read", "arguments": json.dumps({"text": filler})},
                    }
                ],
            }
        )
        events.append({"role": "tool", "tool_call_id": call_id, "content": filler})
    events.append({"role": "assistant", "content": "Done."})
    data = jsonl_bytes([events])
    assert len(data) > 19_000_000
    result = trace_import(
        organization=org, dataset_name="huge", files=[("huge.jsonl", io.BytesIO(data))]
    )
    trace = Trace.objects.get(dataset=result.dataset)
    assert Block.objects.filter(trace=trace).count() == 5000

    started = time.perf_counter()
    response = member_client.get(page_url(trace))
    seconds = time.perf_counter() - started
    assert response.status_code == 200
    size = len(response.content)
    assert size < 1_500_000, size
    html = response.content.decode()
    assert f'hx-get="/t/{trace.pk}/?after=' in html
    assert seconds < 20, seconds
    rows = html.count('class="row"')
    print(f"5,000 blocks: first response {size} bytes in {seconds:.2f} s, {rows} rows")
    chunk = member_client.get(f"/t/{trace.pk}/?after=40", **HTMX)
    assert chunk.status_code == 200 and len(chunk.content) < 1_500_000


def test_import_helper_reads_event_arrays(org):
    traces = import_traces(org, "helper-check", [[{"role": "user", "content": "hello"}]])
    assert len(traces) == 1


def test_markdown_can_be_read_as_plain_text(member_client, imported_trace):
    system = block_of(imported_trace, "MESSAGE", role="system")
    html = member_client.get(page_url(imported_trace)).content.decode()
    assert f'hx-get="/t/{imported_trace.pk}/b/{system.pk}/full?as=text"' in html
    body = member_client.get(f"/t/{imported_trace.pk}/b/{system.pk}/full?as=text", **HTMX)
    assert '<pre class="text as-text">Be **brief**.</pre>' in body.content.decode()


def test_reward_shown_from_metadata_when_extra_reward_is_not_a_number(trace_client, imported_trace):
    # A string in extra.reward is an annotation the reward column does not count: the
    # number shown is the benchmark's metadata.reward, and the page must say so.
    trace_patch(trace=imported_trace, extra={"reward": "great"})
    html = trace_client.get(page_url(imported_trace)).content.decode()
    assert "from metadata" in html and "from annotation" not in html
    trace_patch(trace=imported_trace, extra={"reward": 0.5})
    html = trace_client.get(page_url(imported_trace)).content.decode()
    assert "from annotation" in html


def test_a_drawer_s_metadata_raw_and_extra_come_when_it_opens(member_client, trace_importer):
    event = {"role": "user", "content": "hi", "note-in-raw": "kept-in-raw"}
    trace = trace_importer([[event]], dataset="drawers")[0]
    message = Block.objects.get(trace=trace)
    block_extra_patch(block=message, patch={"comment": "kept-in-extra"})
    html = member_client.get(page_url(trace)).content.decode()
    assert "kept-in-raw" not in html and "kept-in-extra" not in html
    full_url = f"/t/{trace.pk}/b/{message.pk}/full"
    drawer = member_client.get(full_url, HTTP_HX_TARGET=f"drawer-{message.pk}", **HTMX)
    assert drawer.status_code == 200 and drawer["X-Partial"] == "drawer_body"
    body = drawer.content.decode()
    assert "kept-in-raw" in body and "kept-in-extra" in body and "event_index" in body
    # The same drawer as the block's page shows, and the same foot as the page had.
    whole = member_client.get(full_url).content.decode()
    assert "kept-in-raw" in whole and "kept-in-extra" in whole
    foot = re.search(r'<p class="drawer-foot small">.*?</p>', html, re.S).group(0)
    assert foot in body
