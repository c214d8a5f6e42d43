"""The trace page as a story, in a real browser (issue 11 items 2 and 4, issue 15 item 4):
real logs from ../shared/data; a tool error and its grouped repeats, the failure step
Who&When names, a folded system prompt opened and "Show all" folded again.

Screenshots go to a temporary folder, or to $E2E_SHOTS when set (to look at them)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import SHARED_DATA
from traces.models import Trace
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db(transaction=True)


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("E2E_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def imported(org, relative: str) -> Trace:
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    with path.open("rb") as stream:
        trace_import(organization=org, dataset_name=relative, files=[(path.name, stream)])
    return Trace.objects.filter(dataset__name=relative).order_by("index").first()


def test_tool_errors_and_repeated_calls(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    trace = imported(org, "inspect-ai/log_tool_call_error.json")
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    expect(page.locator(".repeat-count")).to_have_text("×11")
    expect(page.locator("#rows .badge.warn", has_text="tool error").first).to_be_visible()
    repeats = page.locator("details.repeats")
    expect(repeats.locator(":scope > summary")).to_contain_text("10 tool errors")
    expect(repeats.locator(".k-call").first).to_be_hidden()
    page.screenshot(path=str(shots(tmp_path) / "tool-errors-grouped.png"))
    repeats.locator(":scope > summary").click()
    expect(repeats.locator(".k-call")).to_have_count(10)
    expect(repeats.locator(".k-result").first).to_be_visible()
    page.screenshot(path=str(shots(tmp_path) / "tool-errors-opened.png"))
    assert console_errors == []


def test_the_failure_step_and_folds(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    trace = imported(org, "who-and-when/hand-crafted-1.json")
    failing = trace.metadata["failure"]["block"]
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/?focus={failing}#{failing}")
    mark = page.locator(f"#{failing} .badge.warn", has_text="failure starts here")
    expect(mark).to_be_in_viewport()
    assert "WebSurfer" in (mark.get_attribute("title") or "")
    page.screenshot(path=str(shots(tmp_path) / "failure-step.png"))

    swe = imported(org, "swe-agent/demo_function_calling.traj")
    page.goto(f"{live_server.url}/t/{swe.pk}/")
    system = page.locator(".k-message.role-system details.system-fold").first
    expect(system.locator("pre")).to_be_hidden()
    system.locator(":scope > summary").click()
    expect(system.locator("pre")).to_be_visible()
    body = page.locator(".k-message.role-system .block-body").first
    body.locator("a.show-all").click()
    fold = page.locator(".k-message.role-system a.fold-again").first
    expect(fold).to_be_visible()
    fold.click()
    expect(page.locator(".k-message.role-system a.show-all").first).to_be_visible()
    page.screenshot(path=str(shots(tmp_path) / "system-prompt-refolded.png"))
    assert console_errors == []
