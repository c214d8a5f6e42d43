"""A block's head in a real browser: a long tool name and call id shrink, and the block's
number (its permalink) stays clear of the "details" button."""

import io
import json

import pytest
from playwright.sync_api import Page

from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db(transaction=True)

NAME = ("mcp__github__search_repositories_and_list_all_matching_pull_requests_" + "x" * 60)[:120]
CALL_ID = "call_" + "abcdefghijklmnopqrstuvwxyz0123456789" * 2


def overlap(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_a_long_tool_name_leaves_the_block_number_visible(
    page: Page, live_server, org, member, sign_in
):
    call = {"id": CALL_ID, "type": "function", "function": {"name": NAME, "arguments": "{}"}}
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": CALL_ID, "content": "ok"},
    ]
    result = trace_import(
        organization=org, dataset_name="long names",
        files=[("a.json", io.BytesIO(json.dumps(events).encode()))],
    )  # fmt: skip
    trace = result.dataset.traces.get()
    block = trace.blocks.get(sub_type="TOOL_CALL")
    sign_in(page, "alice")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    article = page.locator(f"article#{block.pk}")
    number = article.locator(".permalink").bounding_box()
    button = article.locator(".drawer > summary").bounding_box()
    box = article.bounding_box()
    assert number and button and box
    assert not overlap(number, button), (number, button)
    assert number["x"] + number["width"] <= box["x"] + box["width"]
