"""Notes anchored to text in a real browser (issue 13 item 3): Invariant Explorer's own
sample trace pushed as its client pushes it, its annotation highlighted on the line it
names; a member selects a range with the mouse, comments, reloads and finds the note
anchored there; a note whose address points past the text is listed on its block.

Screenshots go to a temporary folder, or to $E2E_SHOTS when set (to look at them)."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_trace_story import shots
from tests.explorer.anchored import explorer_trace
from traces.invariant.services import Writer, explorer_traces_push
from traces.models import Annotation, Block, TraceEvent
from traces.services.annotations import annotation_create

pytestmark = pytest.mark.django_db(transaction=True)


def _message_block(trace, position: int) -> str:
    event = TraceEvent.objects.get(trace=trace, position=position)
    return Block.objects.get(trace=trace, number=event.first_block).pk


def _drag_over(page: Page, block_id: str, text: str, until: str = "") -> None:
    """Select `text` in the block's body with the mouse, as a reader does; or from `text`
    to the end of `until`, in a text node of its own (a link's, say)."""
    box = page.evaluate(
        """([id, text, until]) => {
             const body = document.querySelector(`#${id} > .block-body`);
             const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
             const range = document.createRange();
             let started = false;
             for (let n = walker.nextNode(); n; n = walker.nextNode()) {
               const wanted = started ? until : text;
               const at = n.data.indexOf(wanted);
               if (at < 0) continue;
               if (!started) { range.setStart(n, at); started = true; }
               if (!until || wanted === until) { range.setEnd(n, at + wanted.length); break; }
             }
             if (!started) return null;
             const rects = range.getClientRects();
             const first = rects[0], last = rects[rects.length - 1];
             return {x1: first.left + 1, y1: first.top + first.height / 2,
                     x2: last.right - 1, y2: last.top + last.height / 2};
           }""",
        [block_id, text, until],
    )
    assert box, f"{text!r} is not in block {block_id}"
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=5)
    page.mouse.up()


def test_a_member_comments_a_selected_range_and_finds_it_anchored_after_a_reload(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    trace = explorer_trace(org)
    tool = _message_block(trace, 2)
    annotation_create(
        trace=trace, comment="the output is past its one line", address="messages[2].content:L3",
        extra_metadata={"source": "analyzer-model", "severity": "low"},
    )  # fmt: skip
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/")

    # The trace's own annotation (messages[2].content:L0) on the tool output's line.
    note = page.locator(f"#{tool} aside.anchor-notes .anchor-note").first
    expect(note).to_contain_text(Annotation.objects.filter(trace=trace).first().comment)
    expect(page.locator(f"#{tool} mark.anchor-hl").first).to_be_visible()
    # One past the end of the text: listed on its block, unresolvable, metadata folded.
    past = page.locator(f"#{tool} .anchor-note", has_text="past its one line")
    expect(past.locator(".anchor-unplaced")).to_have_text("unresolvable")
    expect(past.locator("details.anchor-meta pre")).not_to_be_visible()
    past.locator("details.anchor-meta summary").click()
    expect(past.locator("details.anchor-meta pre")).to_contain_text('"severity": "low"')

    answer = _message_block(trace, 5)
    page.locator(f"#{answer}").scroll_into_view_if_needed()
    _drag_over(page, answer, "Warsaw, Poland")
    page.locator(".anchor-comment-button").click()
    composer = page.locator("form.anchor-composer")
    expect(composer.locator("q")).to_have_text("Warsaw, Poland")
    composer.locator("textarea").fill("the tool said so: <b>checked</b>")
    page.screenshot(path=str(shots(tmp_path) / "anchor-composer.png"))
    composer.locator("button[type=submit]").click()
    expect(composer).to_have_count(0)
    mine = page.locator(f"#{answer} .anchor-note", has_text="the tool said so")
    expect(mine).to_be_visible()
    saved = Annotation.objects.get(comment="the tool said so: <b>checked</b>")
    assert saved.address == "messages[5].content:24-38"
    assert saved.author == member

    page.reload()
    expect(page.locator(f"#{answer} mark.anchor-hl")).to_have_text("Warsaw, Poland")
    expect(mine).to_contain_text("the tool said so: <b>checked</b>")  # as text, not HTML
    expect(page.locator(f"#{answer} .anchor-note b", has_text="checked")).to_have_count(0)
    expect(page.locator("#annotations .anchor-address", has_text="messages[5].content:24-38"))
    page.locator(f"#{answer}").scroll_into_view_if_needed()
    page.screenshot(path=str(shots(tmp_path) / "anchored-note.png"))
    page.locator(f"#{tool}").scroll_into_view_if_needed()
    page.screenshot(path=str(shots(tmp_path) / "anchored-tool-output.png"))
    page.set_viewport_size({"width": 375, "height": 740})  # a phone: the notes stay inside
    page.locator(f"#{answer}").scroll_into_view_if_needed()
    width = page.evaluate(
        "document.querySelector('aside.anchor-notes').getBoundingClientRect().right"
    )
    assert width <= 375
    page.screenshot(path=str(shots(tmp_path) / "anchored-note-phone.png"))
    assert console_errors == []


def test_enter_starts_a_new_line_of_the_comment_and_ctrl_enter_saves_it(
    page: Page, live_server, org, member, sign_in, console_errors
):
    trace = explorer_trace(org)
    answer = _message_block(trace, 5)
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    page.locator(f"#{answer}").scroll_into_view_if_needed()
    _drag_over(page, answer, "Warsaw, Poland")
    page.locator(".anchor-comment-button").click()
    box = page.locator("form.anchor-composer textarea")
    box.type("first line")
    box.press("Enter")
    box.type("second line")
    expect(box).to_have_value("first line\nsecond line")
    assert not Annotation.objects.filter(comment__startswith="first line").exists()
    # Two presses in one go (a double press, a held key): one note.
    box.evaluate(
        """(box) => {
             for (const repeat of [false, false, true]) {
               box.dispatchEvent(new KeyboardEvent("keydown",
                 {key: "Enter", ctrlKey: true, repeat, bubbles: true, cancelable: true}));
             }
           }"""
    )
    expect(page.locator("form.anchor-composer")).to_have_count(0)
    expect(page.locator(f"#{answer} .anchor-note", has_text="second line")).to_be_visible()
    assert Annotation.objects.get(trace=trace, author=member).comment == "first line\nsecond line"
    assert console_errors == []


def test_a_viewer_is_offered_no_comment_on_a_selection(
    page: Page, live_server, org, sign_in, console_errors
):
    from tests.conftest import user_in

    trace = explorer_trace(org)
    user_in(org, "vera", "viewer")
    sign_in(page, "vera")
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    answer = _message_block(trace, 5)
    _drag_over(page, answer, "Warsaw, Poland")
    expect(page.locator(".anchor-comment-button")).to_have_count(0)
    expect(page.locator("aside.anchor-notes .anchor-note")).to_have_count(1)
    assert console_errors == []


def test_without_javascript_the_notes_are_listed_with_their_block_and_text(
    page_without_js, live_server, org, tmp_path
):
    trace = explorer_trace(org)
    tool = _message_block(trace, 2)
    annotation_create(trace=trace, comment="nowhere", address="messages[99].content:L0")
    page_without_js.goto(f"{live_server.url}/t/{trace.pk}/")
    notes = page_without_js.locator("#annotations .annotation")
    expect(notes).to_have_count(2)
    first = notes.nth(0)
    number = Block.objects.get(pk=tool).number
    expect(first.locator(f"a[href$='#{tool}']")).to_have_text(f"on block #{number}")
    expect(first.locator(".anchor-quote")).to_contain_text('"name": "Marie Curie"')
    expect(notes.nth(1).locator(".anchor-unplaced")).to_have_text("unresolvable")
    expect(notes.nth(1)).to_contain_text("on the trace")
    expect(page_without_js.locator("mark.anchor-hl")).to_have_count(0)
    page_without_js.locator("#annotations").screenshot(
        path=str(shots(tmp_path) / "anchors-no-js.png")
    )


def test_markdown_drawn_text_is_anchored_both_ways_and_a_stale_page_is_told_in_the_form(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    events = [
        {"role": "user", "content": "Is it **really** done?\nYes."},
        {"role": "assistant", "content": "It is [done](https://x.org/d) now."},
    ]
    notes = [[{"content": "bold in the text", "address": "messages[0].content:6-16"}]]
    [trace], _ = explorer_traces_push(
        organization=org, messages=[events], annotations=notes, metadata=None,
        dataset_name="md", writer=Writer(),
    )  # fmt: skip
    question, answer = _message_block(trace, 0), _message_block(trace, 1)
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/t/{trace.pk}/")
    expect(page.locator(f"#{question} mark.anchor-hl")).to_have_text("really")

    _drag_over(page, answer, "is", until="now")  # from outside the link: a link drags
    page.locator(".anchor-comment-button").click()
    page.locator("form.anchor-composer textarea").fill("a link in the text")
    page.locator("form.anchor-composer button[type=submit]").click()
    expect(page.locator("form.anchor-composer")).to_have_count(0)
    assert Annotation.objects.get(comment="a link in the text").address == (
        "messages[1].content:3-33"
    )
    page.reload()
    expect(page.locator(f"#{answer} mark.anchor-hl")).to_have_text(["is", "done", "now"])

    # The trace changed under the page: the form says why, and stays.
    _drag_over(page, question, "Yes.")
    page.locator(".anchor-comment-button").click()
    expect(page.locator(".anchor-comment-button")).to_be_hidden()  # the form took its place
    TraceEvent.objects.filter(trace=trace).delete()
    composer = page.locator("form.anchor-composer")
    composer.locator("textarea").fill("too late")
    composer.locator("button[type=submit]").click()
    expect(composer.locator("#anchor-error")).to_contain_text("The note was not saved: block")
    expect(composer.locator("#anchor-error")).to_contain_text("label the block instead")
    expect(composer.locator("textarea")).to_have_value("too late")
    page.screenshot(path=str(shots(tmp_path) / "anchor-refused.png"))
    # The browser notes the 422 it was answered; nothing else went wrong.
    assert [e for e in console_errors if "status of 422" not in e] == []
