"""Reading features in a real browser (issue 11): failure labels on a real tau2-bench run,
the pages at 375 px wide, /v1/docs and the browsable API on the live server.

Screenshots go to a temporary folder, or to $E2E_SHOTS when set (to look at them)."""

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.e2e.conftest import PASSWORD
from tests.real_runs import tau2_dataset
from traces.models import Annotation, Membership
from traces.services.annotations import annotation_create, label_create

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 375, "height": 740}
LONG_NAME = "telecom " + "very-long-run-name-" * 8 + "end"


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("E2E_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def runs(org, member):
    dataset = tau2_dataset(org, name=LONG_NAME)
    for name in ("wrong tool", "hallucinated argument", "gave up"):
        label_create(dataset=dataset, name=name)
    return dataset


def test_a_member_labels_a_trace_and_a_block(
    page: Page, live_server, runs, sign_in, console_errors, tmp_path
):
    trace = runs.traces.filter(reward=0).order_by("index").first()
    call = trace.blocks.filter(sub_type="TOOL_CALL").order_by("created_at", "id").first()
    sign_in(page, "alice")
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    form = page.locator("form.annotate")
    form.locator("select[name=label]").select_option("gave up")
    form.locator("input[name=comment]").fill("stops after the second failed check")
    form.locator("button[type=submit]").click()
    expect(page.locator("#annotations .annotation")).to_have_count(1)
    expect(page.locator("#annotations .label-tag")).to_have_text("gave up")

    # "label this block": the form, for that block, without JavaScript's help
    page.goto(f"{live_server.url}/t/{trace.pk}/?annotate={call.pk}#annotations")
    expect(page.locator("form.annotate input[name=block]")).to_have_value(call.pk)
    page.locator("form.annotate select[name=label]").select_option("wrong tool")
    page.locator("form.annotate button[type=submit]").click()
    expect(page.locator("#annotations .annotation")).to_have_count(2)
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    expect(page.locator(f"#{call.pk} .label-tag")).to_have_text("wrong tool")
    assert Annotation.objects.filter(trace=trace).count() == 2
    page.locator(f"#{call.pk}").scroll_into_view_if_needed()
    page.screenshot(path=str(shots(tmp_path) / "labelled-trace.png"))
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    page.screenshot(path=str(shots(tmp_path) / "labelled-trace-head.png"))

    # The dataset page counts it and filters by it.
    page.goto(f"{live_server.url}/d/{runs.pk}/")
    expect(page.locator("#labels .label-count").first).to_contain_text("gave up")
    page.locator("#labels a.label-tag", has_text="gave up").click()
    expect(page.locator(".trace-table tbody tr")).to_have_count(1)
    page.screenshot(path=str(shots(tmp_path) / "labels-on-dataset.png"), full_page=True)
    assert console_errors == []


def _no_sideways_scroll(page: Page, name: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        """w => [...document.querySelectorAll('body *')].filter(e => {
             const r = e.getBoundingClientRect(); return r.right > w + 1; })
           .slice(0, 5).map(e => e.tagName + '.' + e.className)""",
        PHONE["width"],
    )
    assert width <= PHONE["width"], f"{name} is {width} px wide at {PHONE['width']} px: {wide}"


def test_small_screens(browser, live_server, runs, tmp_path):
    trace = runs.traces.order_by("index").first()
    annotation_create(trace=trace, label="gave up", comment="a comment " * 30)
    user = get_user_model().objects.get(username="alice")
    Membership.objects.filter(user=user).update(role="owner")
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, locale="en-US")
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        for name, url in (
            ("datasets", "/"),
            ("dataset", f"/d/{runs.pk}/"),
            ("trace", f"/t/{trace.pk}/"),
            ("edit", f"/d/{runs.pk}/edit"),
        ):
            page.goto(f"{live_server.url}{url}")
            page.screenshot(path=str(shots(tmp_path) / f"375-{name}.png"))
            _no_sideways_scroll(page, name)
            nav = page.locator(".topnav").bounding_box()
            assert nav["x"] >= 0 and nav["x"] + nav["width"] <= PHONE["width"]
        # A long title ends with an ellipsis, and its title attribute holds it whole.
        page.goto(f"{live_server.url}/d/{runs.pk}/")
        title = page.locator("h1 .ellipsis")
        expect(title).to_have_attribute("title", LONG_NAME)
        assert title.evaluate("e => e.scrollWidth > e.clientWidth")
        assert title.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis"
        # Nothing fixed or sticky covers the end of the page.
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.screenshot(path=str(shots(tmp_path) / "375-dataset-end.png"))
        last = page.locator(".trace-table tbody tr").last.bounding_box()
        covering = page.evaluate(
            """([x, y]) => { const e = document.elementFromPoint(x, y);
                 return e ? e.closest('tr') !== null : false; }""",
            [last["x"] + 10, min(last["y"] + last["height"] / 2, PHONE["height"] - 2)],
        )
        assert covering, "something covers the last row of the trace list"
    finally:
        context.close()


def test_the_api_docs_and_the_browsable_api_on_the_live_server(
    page: Page, live_server, runs, sign_in, tmp_path
):
    sign_in(page, "alice")
    page.goto(f"{live_server.url}/v1/docs")
    expect(page.locator(".opblock-summary-path").first).to_be_visible(timeout=15_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert paths and all(p.startswith("/v1/organizations/{org}/") for p in paths)
    # the description's placeholders are shown, not taken for HTML tags
    expect(page.locator(".info .description")).to_contain_text("/v1/organizations/<org>/")
    expect(page.locator(".info .description")).to_contain_text("Bearer <key>")
    page.screenshot(path=str(shots(tmp_path) / "docs.png"))
    page.goto(f"{live_server.url}/v1/organizations/acme/datasets/{runs.pk}/labels")
    expect(page.locator(".response-info")).to_contain_text("hallucinated argument")
    expect(page.locator(".response-info")).to_contain_text('"traces": 0')


def test_a_mixed_dataset_list_fits_a_laptop_screen(page: Page, live_server, org, member, sign_in):
    """Every column of the trace list (usage, tools with long names, task ids) fits 1280
    pixels: it scrolled sideways with traces of several benchmarks in one dataset."""
    import io

    from traces.services.imports import trace_import

    fixtures = Path(__file__).parents[1] / "ingest" / "formats" / "fixtures"
    files = [
        (path.name, io.BytesIO(path.read_bytes()))
        for path in sorted(fixtures.iterdir())
        if path.suffix in (".json", ".traj")
    ]
    dataset = trace_import(organization=org, dataset_name="mixed", files=files).dataset
    sign_in(page, "alice")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/d/{dataset.pk}/")
    table = page.locator(".trace-table")
    assert table.locator("tbody tr").count() >= 5
    wide, room = table.evaluate("t => [t.scrollWidth, t.parentElement.clientWidth]")
    assert wide <= room, f"the trace list is {wide} px wide in {room} px"


def test_the_groups_footer_covers_the_rows_it_sticks_over(page: Page, live_server, runs, sign_in):
    """The groups table's footer row sticks to the bottom of its scroll area: each of
    its cells, the first included, has a background (the first was transparent, and
    "All n groups" showed over a task's row)."""
    sign_in(page, "alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/d/{runs.pk}/")
    expect(page.locator(".groups tfoot th").first).to_be_visible()  # the table comes by htmx
    backgrounds = page.locator(".groups tfoot th, .groups tfoot td").evaluate_all(
        "cells => cells.map(c => getComputedStyle(c).backgroundColor)"
    )
    assert backgrounds and "rgba(0, 0, 0, 0)" not in backgrounds, backgrounds
