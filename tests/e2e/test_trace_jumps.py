"""Go to block n and Row n in a real browser: the page opens at the rows around it and
scrolls to it, wherever it falls in the chunk shown (it stayed at the top of the page)."""

import io
import json
import re

import pytest
from playwright.sync_api import Page, expect

from traces.models import Block
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def trace(org, member):
    events = []
    for n in range(60):
        events.append({"role": "user", "content": f"question {n} " + "words " * 40})
        events.append({"role": "assistant", "content": f"answer {n} " + "more words " * 40})
    files = [("long.json", io.BytesIO(json.dumps(events).encode()))]
    return trace_import(organization=org, dataset_name="jumps", files=files).dataset.traces.get()


def test_go_to_block_scrolls_to_it_and_marks_it(page: Page, live_server, trace, sign_in):
    sign_in(page, "alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    goto_block = page.get_by_label("Block number")
    goto_block.fill("45")
    goto_block.press("Enter")
    page.wait_for_url("**?block=45")
    block = Block.objects.get(trace=trace, number=45)
    shown = page.locator(f"article#{block.pk}")
    expect(shown).to_be_in_viewport()
    expect(shown).to_have_class(re.compile(r"\bis-current\b"))


def test_row_n_scrolls_to_its_message(page: Page, live_server, trace, sign_in):
    sign_in(page, "alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/t/{trace.pk}/?row=30")
    message = Block.objects.get(trace=trace, turn=29, act=0)
    shown = page.locator(f"article#{message.pk}")
    expect(shown).to_be_in_viewport()
    # scrolled to it, past the trace's header (which filled the first screen)
    expect(shown).to_have_class(re.compile(r"\bis-current\b"))
    assert page.evaluate("window.scrollY") > 0
