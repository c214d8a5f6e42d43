"""The trace list in a real browser (issue 11 items 2, 8, 9): sort by a header, filter by
several things at once, search and open a hit at its block, J/K along the list; the same
sort and filter without JavaScript. Screenshots of the sorted and filtered list and of a
search hit go to a temporary folder, or to $E2E_SHOTS when set (to look at them)."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_reading import shots
from tests.real_runs import SHARED_DATA
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db(transaction=True)

FILES = (
    SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json",
    SHARED_DATA / "tau2-bench" / "telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json",
)


@pytest.fixture
def telecom(org, member):
    files = [(p.name, p.open("rb")) for p in FILES]
    return trace_import(organization=org, dataset_name="telecom", files=files).dataset


def cells(page: Page, column: int) -> list[str]:
    return page.locator(f".trace-table tbody tr td:nth-child({column})").all_inner_texts()


def test_sort_filter_search_and_walk_the_list(
    page: Page, live_server, telecom, sign_in, console_errors, tmp_path
):
    sign_in(page, "alice")
    page.goto(f"{live_server.url}/d/{telecom.pk}/")
    # Sort by reward (a header click: htmx swaps the table, the address follows).
    page.locator(".trace-table th a", has_text="Reward").click()
    expect(page).to_have_url(re.compile(r"sort=-reward"))
    expect(page.locator('.trace-table th[aria-sort="descending"]')).to_contain_text("Reward")
    rewards = cells(page, 5)
    assert rewards == sorted(rewards, reverse=True)
    # Filter: trial 0, failures only, on top of the sort.
    page.locator("#trace-meta").fill("trial=0")
    page.locator("#trace-reward").select_option("0")
    page.locator("#trace-filters button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"meta=trial%3D0"))
    expect(page.locator(".result-count")).to_contain_text("matching the filters")
    expect(page).to_have_url(re.compile(r"sort=-reward"))  # the header's sort is kept
    expect(page.locator("#trace-sort")).to_have_value("-reward")
    assert set(cells(page, 4)) == {"0"} and set(cells(page, 5)) == {"0"}
    count = len(cells(page, 4))
    assert count == 7  # trial 0: one of the 5 four-trial tasks and 6 of the 20 telecom runs
    # The rewards per task (pass@k) follow the filter: every group left is a failure.
    expect(page.locator("#groups tfoot")).to_contain_text("All 7 groups")
    means = page.locator("#groups tbody td:nth-child(3)").all_inner_texts()
    assert means and set(means) == {"0.000"}
    page.screenshot(path=str(shots(tmp_path) / "trace-list-sorted-filtered.png"), full_page=True)

    # Search the errors: the hit's snippet, highlighted, leads to the block.
    page.goto(f"{live_server.url}/d/{telecom.pk}/")
    page.locator("#trace-q").fill("is:error suspended")
    page.locator("#trace-q").press("Enter")
    expect(page.locator(".search-hit mark")).to_have_text("suspended")
    page.wait_for_load_state("networkidle")
    hit = page.locator(".search-hit").first
    page.locator(".search-hit").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots(tmp_path) / "search-hit.png"))
    block = re.search(r"focus=(tb_\w+)", hit.get_attribute("href")).group(1)
    hit.click()
    expect(page.locator(f"#{block}")).to_be_visible()
    expect(page.locator(f"#{block}")).to_contain_text("suspended")
    page.screenshot(path=str(shots(tmp_path) / "search-hit-opened.png"))

    # J walks the sorted, filtered list as the table showed it.
    page.goto(f"{live_server.url}/d/{telecom.pk}/?sort=-task&reward=0")
    links = page.locator(".trace-table tbody tr td.trace-name a").evaluate_all(
        "links => links.map(a => a.href)"
    )
    assert len(links) >= 4 and all("list=" in link for link in links)
    page.goto(links[0])
    for link in links[1:3]:
        page.keyboard.press("J")
        page.wait_for_url(link)
    page.keyboard.press("K")
    page.wait_for_url(links[1])
    assert console_errors == []


def test_sort_and_filter_without_javascript(page_without_js, live_server, telecom):
    page = page_without_js
    page.goto(f"{live_server.url}/d/{telecom.pk}/?errors=yes")
    assert cells(page, 8) == ["1"]
    page.locator("#trace-sort").select_option("-turns")
    page.locator("#trace-filters button[type=submit]").click()
    assert "sort=-turns" in page.url and "errors=yes" in page.url
    page.goto(f"{live_server.url}/d/{telecom.pk}/")
    page.locator(".trace-table th a", has_text="Task").click()
    assert "sort=task" in page.url
    tasks = cells(page, 3)
    assert tasks == sorted(tasks)
