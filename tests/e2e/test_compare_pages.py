"""The comparison pages in a real browser (issue 12): two runs open at their first
divergence, identical stretches folded; two datasets with their statistics, and a flipped
task's link to the trace comparison. Screenshots of both pages go to COMPARE_SHOTS (a
directory; the test's tmp_path otherwise)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.compare_data import GPT41, GROK3, import_runs, raw
from tests.e2e.conftest import import_lines

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def shot(page: Page, tmp_path: Path, name: str, full_page: bool = False) -> Path:
    folder = Path(os.environ.get("COMPARE_SHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    assert path.stat().st_size > 10_000
    return path


def _run(answer: str, query: str) -> list:
    steps = [{"role": "user", "content": f"step {n}: keep going"} for n in range(40)]
    function = {"name": "search", "arguments": f'{{"query": "{query}"}}'}
    return [
        *steps,
        {
            "role": "assistant",
            "content": "Searching.",
            "tool_calls": [{"id": "c1", "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "three results"},
        {"role": "assistant", "content": answer},
    ]  # fmt: skip


def test_two_runs_open_at_their_first_divergence(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    runs = import_lines(
        org,
        "search-agent",
        [
            {"messages": _run("The answer is in the first result.", "cheap flights to Lisbon"),
             "metadata": {"task_id": "flights", "reward": 0}},
            {"messages": _run("The answer is in the second result, which is cheaper.",
                              "cheap direct flights to Lisbon in May"),
             "metadata": {"task_id": "flights", "reward": 1}},
        ],
    )  # fmt: skip
    sign_in(page, "alice")
    page.goto(f"{live_server.url}/t/{runs[0].pk}/")
    page.click("#compare-trace")  # "Compare with a passing trial"
    page.wait_for_url(f"**/compare/traces/?a={runs[0].pk}")
    first = page.locator("#first-divergence")
    expect(first).to_be_visible()
    expect(first).to_be_in_viewport()
    expect(first).to_contain_text("call search")
    expect(first.locator("ins").first).to_contain_text("direct")
    expect(page.locator(".divergence-line")).to_contain_text("at step 42 of 44")
    # The 41 identical steps before it (40 user turns, the assistant's "Searching."): three
    # shown just above it, the rest not shown until asked for, then folded.
    expect(page.locator(".fold-before")).to_contain_text("38 earlier steps not shown")
    page.click(".fold-before a")
    expect(page.locator(".fold-run summary")).to_contain_text("41 identical steps")
    page.goto(f"{live_server.url}/compare/traces/?a={runs[0].pk}&b={runs[1].pk}")
    shot(page, tmp_path, "compare_traces")
    assert console_errors == []


def test_two_datasets_compared_with_their_statistics(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    gpt = import_runs(org, "gpt-4.1 telecom", raw(GPT41))
    grok = import_runs(org, "grok-3 telecom-workflow", raw(GROK3))
    sign_in(page, "alice")
    page.goto(f"{live_server.url}/d/{gpt.pk}/")
    page.click("#compare-dataset")
    page.select_option("#pick-b", grok.pk)
    page.click(".compare-pick button[type=submit]")
    page.wait_for_url(f"**/compare/datasets/?a={gpt.pk}**")
    expect(page.locator("h1")).to_contain_text("gpt-4.1 telecom with grok-3 telecom-workflow")
    expect(page.locator(".verdict-text")).to_contain_text("significant at 5%")
    expect(page.locator(".compare-tasks tbody tr")).to_have_count(5)
    shot(page, tmp_path, "compare_datasets", full_page=True)
    flipped = page.locator(".flipped a")
    if flipped.count():
        flipped.first.click()
        page.wait_for_url("**/compare/traces/?a=*")
        expect(page.locator("#first-divergence")).to_be_visible()
    assert console_errors == []
