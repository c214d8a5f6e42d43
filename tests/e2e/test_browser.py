"""The explorer in a real browser: sign in, upload, accuracy, the three lanes, rewards,
permalinks, the keyboard, hostile content, and the pages without JavaScript.

Chromium is Debian's (tests/e2e/conftest.py); the server is pytest-django's live server,
whose database the test writes through the project's services.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import user_in
from tests.e2e.conftest import import_lines, jsonl, weather_events
from tests.explorer.test_trace_xss import ALL, ATTACKS, OBJECT, blocks_trace, chat_events
from traces.models import Block, Dataset, Trace
from traces.services.api_keys import api_key_create
from traces.services.traces import trace_patch

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = (
    "console: Failed to load resource: the server responded with a status of 422 "
    "(Unprocessable Entity)"
)


# Every state the upload's progress shows, kept in sessionStorage across the page load
# that follows the upload (`page.add_init_script` adds it to every page).
RECORD_PROGRESS = """
addEventListener("DOMContentLoaded", () => {
  const text = document.querySelector("[data-progress-text]");
  if (!text) return;
  const box = text.closest(".progress");
  const bar = box.querySelector("progress");
  new MutationObserver(() => {
    const seen = JSON.parse(sessionStorage.getItem("upload-progress") || "[]");
    seen.push({
      text: text.textContent,
      value: bar.hasAttribute("value") ? Math.round(bar.value) : null,
      shown: getComputedStyle(box).display !== "none",
    });
    sessionStorage.setItem("upload-progress", JSON.stringify(seen));
  }).observe(text, { childList: true, characterData: true, subtree: true });
});
"""


@contextmanager
def upload_speed(page: Page, bytes_per_second: int) -> Iterator[None]:
    """The page's uploads sent at this speed (Chromium's network emulation)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    fast = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", {**fast, "uploadThroughput": bytes_per_second})
    try:
        yield
    finally:
        cdp.send("Network.emulateNetworkConditions", fast)
        cdp.detach()


def block_id(trace: Trace, sub_type: str, **payload: Any) -> str:
    """The id of the one block of `trace` of this sub type whose payload holds `payload`."""
    found = [
        b.pk
        for b in Block.objects.filter(trace=trace, sub_type=sub_type)
        if all(b.payload.get(k) == v for k, v in payload.items())
    ]
    assert len(found) == 1, (sub_type, payload, found)
    return found[0]


def current_block(page: Page) -> str:
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('.is-current'), (el) => el.id).join(',')"
    )


def below_lane_heads(page: Page, selector: str) -> None:
    """The block is on screen and not under the sticky lane heads."""
    heads = page.locator(".lane-heads").bounding_box()
    box = page.locator(selector).bounding_box()
    assert heads and box
    assert heads["y"] + heads["height"] <= box["y"] < page.viewport_size["height"], (heads, box)


def check_lanes(page: Page, city: str) -> None:
    """The weather trace (conftest.weather_events) in its three lanes."""
    expect(page.locator(".lane-head-message")).to_have_text("Message")
    expect(page.locator(".lane-head-act")).to_contain_text("Act")
    expect(page.locator(".lane-head-observe")).to_contain_text("Observe")
    stats = page.locator(".trace-stats")
    for text in ("4 messages", "2 calls", "2 results", "1 think"):
        expect(stats).to_contain_text(text)
    rows = page.locator("#rows > .row")
    expect(rows).to_have_count(4)
    roles = ["system", "user", "assistant", "assistant"]
    for n, role in enumerate(roles):
        expect(rows.nth(n).locator(".cell-message > .block.k-message .role")).to_have_text(role)
    expect(rows.nth(0).locator(".pair")).to_have_count(0)
    expect(rows.nth(1).locator(".cell-message")).to_contain_text(f"weather in {city}")
    expect(rows.nth(3).locator(".pair")).to_have_count(0)
    expect(rows.nth(3).locator(".cell-message")).to_contain_text(f"cloudy in {city}")
    # Markdown is rendered: the system prompt's **weather** is bold.
    expect(rows.nth(0).locator(".cell-message strong")).to_have_text("weather")

    # Every block sits in its lane, and nowhere else.
    expect(page.locator("#rows .cell-message > .block")).to_have_count(4)
    expect(page.locator("#rows .cell-message > .block:not(.k-message)")).to_have_count(0)
    expect(page.locator("#rows .cell-act > .block")).to_have_count(3)
    expect(page.locator("#rows .cell-act > .block:not(.k-think):not(.k-call)")).to_have_count(0)
    expect(page.locator("#rows .cell-observe > .block")).to_have_count(2)
    expect(page.locator("#rows .cell-observe > .block:not(.k-result)")).to_have_count(0)

    # The third row: the think and both calls in ACT, each call's result beside it.
    row = rows.nth(2)
    expect(row.locator(".cell-act > .block.k-think")).to_contain_text("forecast and the local")
    for tool, call_id, output in (
        ("get_weather", "call_weather", "22°C, cloudy"),
        ("get_time", "call_time", "14:05"),
    ):
        pair = row.locator(".pair").filter(
            has=page.locator(".cell-act code.tool-name", has_text=tool)
        )
        expect(pair).to_have_count(1)
        expect(pair.locator(".cell-act .call-id")).to_have_text(call_id)
        result = pair.locator(".cell-observe > .block.k-result")
        expect(result).to_have_count(1)
        expect(result).to_contain_text(output)
        expect(result.locator(".call-id")).to_have_text(call_id)
        # Laid out as lanes: message | call | result from left to right, the result on
        # the call's line.
        message_box = row.locator(".cell-message > .block").bounding_box()
        call_box = pair.locator(".cell-act > .block").bounding_box()
        result_box = result.bounding_box()
        assert message_box and call_box and result_box
        assert message_box["x"] + message_box["width"] <= call_box["x"] + 1
        assert call_box["x"] + call_box["width"] <= result_box["x"] + 1
        assert abs(call_box["y"] - result_box["y"]) < 8, (call_box, result_box)
    # The arguments of a call are shown, key and value.
    expect(row.locator(".k-call", has_text="get_weather")).to_contain_text(city)


# --- sign in, upload, accuracy, open a trace -------------------------------------------


def test_sign_in_upload_see_accuracy_and_open_a_trace(
    page: Page, live_server, member, sign_in, console_errors, tmp_path
):
    first, second = tmp_path / "weather-runs.jsonl", tmp_path / "nice.jsonl"
    first.write_bytes(
        jsonl(
            [
                {"metadata": {"accuracy": 0.5, "benchmark": "weather-e2e"}},
                *(
                    {"messages": weather_events(city), "metadata": {"name": city, "reward": r}}
                    for city, r in (("Paris", 1), ("Lyon", 0))
                ),
            ]
        )
    )
    # Large enough for the upload's progress to be seen at the speed set below.
    notes = "forecast log line\n" * 20_000
    nice = {"messages": weather_events("Nice"), "metadata": {"name": "Nice", "reward": 1}}
    second.write_bytes(jsonl([{**nice, "metadata": {**nice["metadata"], "notes": notes}}]))
    sign_in(page, member.username)
    expect(page.locator(".topbar .who")).to_have_text(member.username)
    # The static files are served: the stylesheet applies and htmx is there.
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") == "flex"

    page.add_init_script(RECORD_PROGRESS)
    page.click(".topnav a[href='/upload/']")
    page.wait_for_url(f"{live_server.url}/upload/")
    expect(page.locator("#upload-progress")).to_be_hidden()
    page.set_input_files("#upload-files", [str(first), str(second)])
    expect(page.locator("#upload-file-list")).to_contain_text("weather-runs.jsonl")
    expect(page.locator("#upload-file-list")).to_contain_text("2 files, ")
    expect(page.locator("#upload-dataset")).to_have_value("")
    page.fill("#upload-name", "weather uploaded")
    with upload_speed(page, 150 * 1024):  # bytes a second: the upload takes about two
        page.click("#upload-submit")
        page.wait_for_url(re.compile(r"/d/ds_[A-Za-z0-9_-]+/$"))
    progress = page.evaluate("JSON.parse(sessionStorage.getItem('upload-progress') || '[]')")
    # htmx sent it (no page load), the bar filled as it went, then the server imported.
    assert progress[0] == {"text": "0%", "value": 0, "shown": True}, progress
    partial = [p for p in progress if 0 < (p["value"] or 0) < 100 and "% · " in p["text"]]
    assert partial, progress
    assert all(p["shown"] for p in progress), progress
    texts = [p["text"] for p in progress]
    assert "100% sent · checking and importing every trace…" in texts, texts
    assert texts[-1] == "Imported. Opening the dataset…", texts

    expect(page.locator(".flash")).to_contain_text("Imported 3 traces")
    card = page.locator(".accuracy-card")
    expect(card.locator(".big").filter(has_text="computed").locator(".big-value")).to_have_text(
        "0.667"
    )
    expect(card.locator(".big").filter(has_text="reported").locator(".big-value")).to_have_text(
        "0.500"
    )
    expect(card.locator(".computed-line")).to_contain_text(
        "computed 0.667: 2 of the 3 traces with a reward succeeded (reward 1), of 3 traces"
    )
    expect(card).to_contain_text("differs from the reported value by 0.167")
    expect(page.locator(".metadata-card")).to_contain_text("weather-e2e")
    expect(page.locator(".trace-table tbody tr")).to_have_count(3)

    dataset = Dataset.objects.get(name="weather uploaded")
    assert dataset.organization.slug == "acme"
    assert dataset.metadata == {"accuracy": 0.5, "benchmark": "weather-e2e"}
    rewards = list(dataset.traces.order_by("index").values_list("name", "reward"))
    assert rewards == [("Paris", 1.0), ("Lyon", 0.0), ("Nice", 1.0)]

    # The datasets page agrees.
    page.click(".breadcrumbs a[href='/']")
    row = page.locator("table.datasets tbody tr", has_text="weather uploaded")
    expect(row).to_contain_text("0.667")
    row.locator("a.dataset-link").click()

    page.locator(".trace-table a", has_text="Paris").click()
    paris = dataset.traces.get(name="Paris")
    page.wait_for_url(f"{live_server.url}/t/{paris.pk}/")
    expect(page.locator("h1.trace-title")).to_have_text("Paris")
    expect(page.locator("#trace-reward-summary")).to_contain_text("reward 1")
    check_lanes(page, "Paris")
    assert console_errors == []


# --- rewards --------------------------------------------------------------------------


def test_rewards_on_the_trace_and_a_block_persist(
    page: Page, live_server, member, weather_traces, sign_in, console_errors
):
    lyon = weather_traces[1]  # metadata reward 0
    call = block_id(lyon, "TOOL_CALL", name="get_weather")
    result = block_id(lyon, "TOOL_RESULT", call_id="call_time")
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{lyon.pk}/")
    summary = page.locator("#trace-reward-summary")
    expect(summary).to_contain_text("reward 0")
    expect(summary).to_contain_text("from metadata")

    # The trace: thumbs up (htmx swaps the control and, out of band, the summary).
    page.click("#reward-trace .thumb-up")
    expect(page.locator("#reward-trace .thumb-up")).to_have_attribute("aria-pressed", "true")
    expect(summary).to_contain_text("reward 1")
    expect(summary).to_contain_text("from annotation")

    # A block: thumbs up on a call (its control shows on hover), a number on a result.
    page.hover(f"#{call} .block-head")
    page.click(f"#reward-{call} .thumb-up")
    expect(page.locator(f"#reward-{call} .thumb-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f"#reward-{call}")).to_have_class(re.compile(r"\bis-set\b"))
    page.hover(f"#{result} .block-head")
    page.fill(f"#reward-{result} .reward-num", "0.25")
    page.press(f"#reward-{result} .reward-num", "Enter")
    expect(page.locator(f"#reward-{result}")).to_have_class(re.compile(r"\bis-set\b"))
    # No number is refused inline, and changes nothing.
    page.fill("#reward-trace .reward-num", "")
    page.press("#reward-trace .reward-num", "Enter")
    expect(page.locator("#reward-trace .reward-error")).to_contain_text("Enter a number")

    page.reload()
    expect(page.locator("#reward-trace .thumb-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#reward-trace .reward-num")).to_have_value("1")
    expect(summary).to_contain_text("reward 1")
    expect(summary).to_contain_text("from annotation")
    expect(page.locator(f"#reward-{call} .thumb-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f"#reward-{result} .reward-num")).to_have_value("0.25")
    expect(page.locator(f"#reward-{result} .thumb-up")).to_have_attribute("aria-pressed", "false")
    expect(page.locator(".block.has-reward")).to_have_count(2)

    lyon.refresh_from_db()
    assert lyon.extra == {"reward": 1}
    assert lyon.reward == 1.0
    assert Block.objects.get(pk=call).extra == {"reward": 1}
    assert Block.objects.get(pk=result).extra == {"reward": 0.25}
    # The one error: the browser logs the refused number's 422 answer.
    assert console_errors == [REFUSED]


# --- permalinks and the keyboard ------------------------------------------------------


def test_permalinks_and_keyboard(
    page: Page, live_server, member, weather_traces, sign_in, console_errors
):
    paris, lyon = weather_traces
    url = f"{live_server.url}/t/{paris.pk}/"
    target = block_id(paris, "TOOL_RESULT", call_id="call_time")
    sign_in(page, member.username)

    # A permalink opens the trace on its block, marked current and flashed.
    page.goto(f"{url}#{target}")
    block = page.locator(f"#{target}")
    expect(block).to_have_class(re.compile(r"\bis-current\b"))
    expect(block).to_have_class(re.compile(r"\bis-target\b"))
    expect(block).to_be_in_viewport()
    below_lane_heads(page, f"#{target}")
    assert current_block(page) == target

    # A block's "#" makes it current and puts its permalink in the address bar.
    think = block_id(paris, "THINK")
    page.hover(f"#{think} .block-head")
    page.click(f"#{think} a.permalink")
    expect(page).to_have_url(f"{url}#{think}")
    assert current_block(page) == think

    # j / k walk the blocks in page order; the address bar follows.
    page.goto(url)
    order = page.eval_on_selector_all("#rows [data-block]", "els => els.map((e) => e.id)")
    assert len(order) == 9
    assert current_block(page) == ""
    page.keyboard.press("j")
    assert current_block(page) == order[0]
    for n in (1, 2, 3):
        page.keyboard.press("j")
        assert current_block(page) == order[n]
    expect(page).to_have_url(f"{url}#{order[3]}")
    page.keyboard.press("k")
    assert current_block(page) == order[2]
    expect(page).to_have_url(f"{url}#{order[2]}")
    expect(page.locator(f"#{order[2]}")).to_be_focused()
    # o opens the current block's details.
    page.keyboard.press("o")
    expect(page.locator(f"#{order[2]} > details.drawer")).to_have_attribute("open", "")
    page.keyboard.press("Escape")
    expect(page.locator("details.drawer[open]")).to_have_count(0)
    # The keys are inactive while typing in a reward field.
    page.focus("#reward-trace .reward-num")
    page.keyboard.press("j")
    assert current_block(page) == order[2]
    page.keyboard.press("Escape")

    # ? shows the help, ? or Escape hides it; so does its button.
    help_box = page.locator("#keys-help")
    expect(help_box).to_be_hidden()
    page.keyboard.press("?")
    expect(help_box).to_be_visible()
    expect(help_box).to_contain_text("next / previous block")
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    page.click("[data-open-help]")
    expect(help_box).to_be_visible()
    page.keyboard.press("?")
    expect(help_box).to_be_hidden()

    # J / K: the next and previous trace of the dataset.
    page.keyboard.press("J")
    page.wait_for_url(f"{live_server.url}/t/{lyon.pk}/")
    page.keyboard.press("K")
    page.wait_for_url(url)
    assert console_errors == []


def long_chat(org, name: str) -> Trace:
    """A chat of 200 messages ("message number 1".."200"): more than the first chunk."""
    events = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"message number {n + 1}"}
        for n in range(200)
    ]
    (trace,) = import_lines(org, name, [events])
    return trace


def test_a_permalink_beyond_the_first_chunk(
    page: Page, live_server, org, member, sign_in, console_errors
):
    trace = long_chat(org, "long-chat")
    far = block_id(trace, "MESSAGE", content="message number 180")
    sign_in(page, member.username)

    # Row 180 is not on the first page (150 rows): the page asks the server for it.
    page.goto(f"{live_server.url}/t/{trace.pk}/#{far}")
    page.wait_for_url(re.compile(rf"\?focus={far}#{far}$"))
    block = page.locator(f"#{far}")
    expect(block).to_have_class(re.compile(r"\bis-current\b"))
    expect(block).to_be_in_viewport()
    expect(block).to_contain_text("message number 180")
    below_lane_heads(page, f"#{far}")
    expect(page.locator(".rows-before")).to_contain_text("Show from the first row")

    # From the top, scrolling to the end brings the next rows in.
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    rows = page.locator("#rows > .row")
    expect(rows).to_have_count(150)
    page.locator(".more-rows").scroll_into_view_if_needed()
    expect(rows).to_have_count(200)
    expect(page.locator("#end-of-trace")).to_contain_text("200 rows")
    assert console_errors == []


# --- hostile content ------------------------------------------------------------------

PROBE = """
(() => {
  const calls = [];
  const violations = [];
  Object.defineProperty(window, "__xss", { value: calls });
  Object.defineProperty(window, "__csp", { value: violations });
  for (const name of ["alert", "confirm", "prompt", "print"]) {
    const wrapper = (...args) => { calls.push(name + "(" + args.map(String).join(",") + ")"); };
    Object.defineProperty(window, name, { value: wrapper });
  }
  document.addEventListener("securitypolicyviolation", (e) => {
    violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample || ""}`);
  }, true);
})();
"""
# Everything the DOM holds that could run, after the scripts (htmx swaps included) ran.
DOM_AUDIT = """
() => {
  const found = [];
  for (const el of document.querySelectorAll("*")) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\\x00-\\x20\\x7f]+/g, "").toLowerCase();
      if (name.startsWith("on") || name === "style" || name === "srcdoc") {
        found.push(`<${el.localName} ${name}>`);
      }
      if (/^(javascript|vbscript|data:text|data:image\\/svg)/.test(value)
          && ["href", "src", "action", "formaction", "data", "xlink:href"].includes(name)) {
        found.push(`<${el.localName} ${name}=${attr.value}>`);
      }
    }
  }
  for (const tag of ["iframe", "object", "embed", "base", "style", "frame", "math"]) {
    for (const el of document.querySelectorAll(tag)) found.push(`<${tag}>`);
  }
  for (const el of document.querySelectorAll("svg")) {
    if (!el.matches(".histogram, .minibar")) found.push("<svg> from content");
  }
  const own = /^\\/static\\/(js\\/(app|trace|anchors)\\.js|vendor\\/htmx-[0-9.]+\\.min\\.js)$/;
  for (const script of document.scripts) {
    const src = script.getAttribute("src") || "inline";
    if (!own.test(src)) found.push(`<script src=${src}>`);
  }
  return found;
}
"""


class Watch:
    """Dialogs, probe calls, CSP violations, console errors and foreign requests."""

    def __init__(self, page: Page, origin: str, console_errors: list[str]) -> None:
        self.page = page
        self.origin = origin
        self.dialogs: list[str] = []
        self.console_errors = console_errors
        self.foreign: list[str] = []
        page.add_init_script(PROBE)
        page.on("dialog", self._dialog)
        page.on("request", self._request)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _request(self, request) -> None:
        if not request.url.startswith(self.origin + "/"):
            self.foreign.append(request.url)

    def check(self, where: str) -> None:
        self.page.wait_for_timeout(150)  # let an image's onerror or a timer fire
        found = {
            "dialogs": self.dialogs,
            "probe": self.page.evaluate("window.__xss"),
            "csp violations": self.page.evaluate("window.__csp"),
            "console errors": self.console_errors,
            "foreign requests": self.foreign,
            "dom": self.page.evaluate(DOM_AUDIT),
        }
        assert not any(found.values()), f"{where}: {found}"


def open_everything(page: Page) -> None:
    """Every drawer and fold open, every folded block and raw loaded (htmx), every block
    as plain text, every block hovered."""
    for summary in page.locator("summary").all():
        if summary.is_visible():
            summary.click()
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    for selector in ("a.show-all", "a.load-raw", "a[href$='?as=text']"):
        links = page.locator(f"#rows {selector}")
        for n in range(links.count()):
            link = links.first if selector != "a[href$='?as=text']" else links.nth(n)
            with page.expect_response(re.compile(r"/b/[A-Za-z0-9_-]+/full")) as answer:
                link.click()
            assert answer.value.status == 200
            page.wait_for_function("() => !document.querySelector('.htmx-request')")
    for block in page.locator("#rows [data-block]").all():
        block.hover()


def test_hostile_content_stays_inert(page: Page, live_server, org, sign_in, console_errors):
    """The XSS corpus of tests/explorer/test_trace_xss.py in every place, in a browser:
    no dialog, no probe call, no CSP violation (the payloads are escaped, so CSP never
    has to step in), no console error, no request elsewhere, nothing runnable in the DOM."""
    watch = Watch(page, live_server.url, console_errors)
    username = "<img src=x onerror=alert('user')>"
    # An owner: every page shows them the most (the keys page lists keys to owners only).
    user = user_in(org, username, "owner")
    dataset_metadata = {**OBJECT, "accuracy": ATTACKS[1], "long": ALL}
    chat, blocks = import_lines(
        org,
        "<script>alert('ds')</script><img src=x onerror=alert('ds2')>",
        [{"metadata": dataset_metadata}, chat_events(), blocks_trace()],
    )
    trace_patch(trace=blocks, extra={**OBJECT, "note": ALL, "reward": ATTACKS[0]})
    api_key_create(organization=org, name=ATTACKS[1], created_by=user)

    sign_in(page, username)
    expect(page.locator(".topbar .who")).to_have_text(username)
    watch.check("datasets page")
    page.fill("#dataset-search", "<svg onload=alert('q')>")
    expect(page.locator("#datasets-table")).to_contain_text("No dataset matches")
    watch.check("datasets search")
    page.goto(f"{live_server.url}/")
    page.locator("a.dataset-link").click()
    page.wait_for_url(re.compile(r"/d/ds_"))
    expect(page.locator("h1")).to_contain_text("<script>alert('ds')</script>")
    open_everything(page)
    watch.check("dataset page")
    page.fill("#trace-q", "<img src=x onerror=alert('q2')>")
    expect(page.locator("#traces .result-count")).to_contain_text("No trace matches")
    page.fill("#trace-meta", "<script>=alert('m')")
    with page.expect_response(re.compile(r"meta=%3Cscript")):
        page.click("#trace-filters button[type=submit]")
    expect(page.locator("#traces .result-count")).to_contain_text("No trace matches")
    watch.check("dataset filters")
    for path, text in (("/upload/", "<script>alert('ds')</script>"), ("/keys/", ATTACKS[1])):
        page.goto(f"{live_server.url}{path}")
        expect(page.locator("main")).to_contain_text(text)
        watch.check(path)

    for trace in (chat, blocks):
        page.goto(f"{live_server.url}/t/{trace.pk}/")
        expect(page.locator("#rows")).to_contain_text("<script>alert('s1')</script>")
        open_everything(page)
        for _ in range(6):
            page.keyboard.press("j")
        page.keyboard.press("?")
        page.keyboard.press("Escape")
        watch.check(f"trace page {trace.name or trace.pk}")
    expect(page.locator("#rows")).to_contain_text("<svg onload=alert('s5')>")
    expect(page.locator(".trace-meta")).to_contain_text("alert('s8')")

    # The whole-block page and an answer of the reward control with the entered text.
    message = block_id(blocks, "MESSAGE")
    page.goto(f"{live_server.url}/t/{blocks.pk}/b/{message}/full")
    expect(page.locator(".single-block")).to_contain_text("<script>alert('s1')</script>")
    watch.check("block page")
    page.goto(f"{live_server.url}/t/{blocks.pk}/")
    # A number field takes no markup from a person; a crafted client can send it.
    page.evaluate("() => { document.querySelector('#reward-trace .reward-num').type = 'text'; }")
    page.fill("#reward-trace .reward-num", "<img src=x onerror=alert('r')>")
    page.press("#reward-trace .reward-num", "Enter")
    expect(page.locator("#reward-trace .reward-error")).to_contain_text("is not a number")
    assert console_errors == [REFUSED]
    console_errors.clear()
    watch.check("reward error")

    # The watch itself sees what it should: a dialog-free alert, and CSP's refusal.
    page.evaluate("() => alert('probe')")
    assert page.evaluate("window.__xss") == ["alert(probe)"]
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'alert(1)';"
        " document.body.append(s); }"
    )
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__xss") == ["alert(probe)"]
    page.evaluate(
        "() => { const a = document.createElement('a'); a.href = 'javascript:alert(2)';"
        " document.body.append(a); }"
    )
    assert page.evaluate(DOM_AUDIT) == ["<a href=javascript:alert(2)>", "<script src=inline>"]


# --- without JavaScript ---------------------------------------------------------------


def test_the_pages_work_without_javascript(weather_traces, page_without_js, live_server):
    paris, lyon = weather_traces
    page = page_without_js
    page.goto(f"{live_server.url}/")  # with the datasets made after signing in
    page.click("a.dataset-link:text-is('weather-agent')")
    page.wait_for_url(re.compile(r"/d/ds_"))
    computed = page.locator(".accuracy-card .computed-line")
    expect(computed).to_contain_text("of the 2 traces with a reward")
    page.click(".trace-table a:text-is('paris')")
    page.wait_for_url(f"{live_server.url}/t/{paris.pk}/")
    check_lanes(page, "Paris")
    expect(page.locator("#keys-help")).to_be_hidden()

    # A drawer opens natively; its "block page" link shows the block whole.
    call = block_id(paris, "TOOL_CALL", name="get_weather")
    page.click(f"#{call} > details.drawer > summary")
    page.click(f"#{call} .drawer-foot a:text-is('block page')")
    page.wait_for_url(f"{live_server.url}/t/{paris.pk}/b/{call}/full")
    expect(page.locator("h1")).to_contain_text(call)
    page.click("a:text-is('← Back to the trace')")
    page.wait_for_url(re.compile(rf"/t/{paris.pk}/\?focus={call}#{call}$"))

    # A reward is a plain form post: the answer is the trace again, with the reward.
    page.click("#reward-trace .thumb-down")
    page.wait_for_url(f"{live_server.url}/t/{paris.pk}/")
    expect(page.locator("#reward-trace .thumb-down")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#trace-reward-summary")).to_contain_text("reward 0")
    paris.refresh_from_db()
    assert paris.extra == {"reward": 0}

    page.click("#next-trace")
    page.wait_for_url(f"{live_server.url}/t/{lyon.pk}/")
    check_lanes(page, "Lyon")


def test_a_focus_link_without_its_hash_opens_at_the_block(
    page: Page, live_server, org, member, sign_in, console_errors
):
    """Researcher: `?focus=<block>` alone (a link written by hand) stayed at the top."""
    trace = long_chat(org, "focus-only")
    far = block_id(trace, "MESSAGE", content="message number 120")
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/?focus={far}")
    block = page.locator(f"#{far}")
    expect(block).to_be_in_viewport()
    expect(block).to_have_class(re.compile(r"\bis-current\b"))
