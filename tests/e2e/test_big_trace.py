"""A 100,000-block trace in a real browser: it opens, scrolls, jumps to block 90,000 and
to a search hit, each without loading what lies before it."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import import_lines
from traces.models import Block

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOOPS = 25_000  # 4 blocks each: a user message, an assistant turn, its call and result
NEEDLE = "zebra-needle"
NEEDLE_LOOP = 21_000


def big_events() -> list[dict]:
    events: list[dict] = []
    for n in range(LOOPS):
        call_id = f"call_{n}"
        events += [
            {"role": "user", "content": f"question {n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": {"n": n}},
                    }
                ],
            },  # fmt: skip
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": f"answer {n}" + (f" {NEEDLE}" if n == NEEDLE_LOOP else ""),
            },
        ]
    return events


def test_a_100000_block_trace_opens_scrolls_and_jumps(
    page: Page, live_server, org, member, sign_in, console_errors
):
    (trace,) = import_lines(org, "big", [big_events()])
    assert trace.block_count == 100_000
    sign_in(page, "alice")
    url = f"{live_server.url}/t/{trace.pk}/"

    page.goto(url)
    expect(page.locator(".trace-stats")).to_contain_text("50000 messages")
    rows = page.locator("#rows > .row")
    expect(page.locator("#row-0")).to_contain_text("question 0")
    first = rows.count()
    assert 100 <= first <= 150  # one chunk: at most 150 rows or 500 blocks

    # The outline lists the whole trace a page of rows at a time.
    page.get_by_role("link", name="Outline").click()
    expect(page.locator("#outline [data-outline-row]")).to_have_count(200)
    expect(page.locator("#outline")).to_contain_text("Rows 1–200 of 50000")
    page.screenshot(path="/tmp/perfpage-big-trace-top.png")

    # Scrolling to the end of the first chunk brings the next one in.
    page.locator(".more-rows").scroll_into_view_if_needed()
    # (A shared machine under load may take seconds to answer.)
    expect(page.locator(f"#row-{first}")).to_contain_text(f"question {first // 2}", timeout=20_000)
    assert rows.count() > first

    # Go to block 90,000: the page opens at it, with a way back to the first row.
    goto_block = page.get_by_label("Block number")  # the annotation form has a `block` too
    goto_block.fill("90000")
    goto_block.press("Enter")
    page.wait_for_url(re.compile(r"\?block=90000"))
    target = page.locator('a.permalink[title="Permalink to block 90000"]')
    expect(target).to_have_count(1)
    expect(target).to_be_in_viewport()  # scrolled to, wherever it is in the chunk
    expect(page.locator(".rows-before")).to_contain_text("Show from the first row")
    expect(page.locator("#row-0")).to_have_count(0)

    # Find in the trace: the hit's link opens the page at its block.
    page.fill("input[name=q]", NEEDLE)
    page.locator("input[name=q]").press("Enter")
    hit = page.locator("#outline a[data-hit]")
    expect(hit).to_have_count(1)
    hit.click()
    block = Block.objects.get(trace=trace, payload__contains=NEEDLE)
    page.wait_for_url(re.compile(rf"\?focus={block.pk}#{block.pk}$"))
    shown = page.locator(f"#{block.pk}")
    expect(shown).to_contain_text(NEEDLE)
    expect(shown).to_be_in_viewport()
    page.screenshot(path="/tmp/perfpage-big-trace.png")

    # Its drawer's metadata, raw and extra come when it opens.
    shown.locator(":scope > details.drawer > summary").click()
    expect(page.locator(f"#drawer-{block.pk}")).to_contain_text("event_index")
    assert console_errors == []
