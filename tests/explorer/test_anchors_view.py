"""Notes anchored to text on the trace page (explorer/views/anchors.py): a selection made
into an Explorer address and kept, each role's right to it, the refusals (422 with where
the address breaks), and the page's list and data island of the notes, hostile ones too."""

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from tests.explorer.anchored import explorer_trace
from tests.real_runs import signed_in
from traces.models import Annotation, Block, TraceEvent
from traces.services.annotations import annotation_create

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def trace(org):
    return explorer_trace(org, real=False)


def _block_of_event(trace, position: int, sub_type: str = "") -> Block:
    event = TraceEvent.objects.get(trace=trace, position=position)
    blocks = Block.objects.filter(
        trace=trace, number__gte=event.first_block,
        number__lt=event.first_block + event.block_count,
    ).order_by("number")  # fmt: skip
    return blocks.filter(sub_type=sub_type).first() if sub_type else blocks.first()


def _island(html: str) -> dict:
    found = re.search(r'<div id="anchor-notes" hidden data-notes="([^"]*)"></div>', html)
    assert found, "the page carries no anchored notes"
    return json.loads(unescape(found[1]))


def _post(client, trace, **fields):
    return client.post(reverse("trace-anchor", args=[trace.pk]), fields, **HTMX)


def test_a_member_comments_a_selection_and_it_is_kept_with_its_address(org, trace):
    member = signed_in(org, "member")
    block = _block_of_event(trace, 3)
    response = _post(member, trace, block=block.pk, quote="born in Warsaw", hint="0.4",
                     comment="right")  # fmt: skip
    assert response.status_code == 200
    assert response["X-Partial"] == "annotations"
    note = Annotation.objects.get(comment="right")
    assert note.address == "messages[3].content:13-27"
    assert note.block_id == block.pk
    assert note.author.username == "member"
    island = _island(response.content.decode())
    [placed] = [n for n in island["notes"] if n["id"] == note.pk]
    assert placed["block"] == block.pk and placed["quote"] == "born in Warsaw"


@pytest.mark.parametrize(
    ("position", "sub_type", "quote", "address"),
    [
        # A whole line: by its line.
        (0, "", "Answer in one line.", "messages[0].content:L1"),
        # In a call: in its arguments.
        (1, "TOOL_CALL", "Nobel", "messages[1].tool_calls[0].function.arguments.query:4-9"),
        # White space the page folded (Markdown) still finds the text.
        (0, "", "Prizes? Answer", "messages[0].content:18-32"),
    ],
)
def test_a_selection_is_addressed_in_the_event_as_stored(
    org, trace, position, sub_type, quote, address
):
    block = _block_of_event(trace, position, sub_type)
    _post(signed_in(org, "member"), trace, block=block.pk, quote=quote, hint="0", comment="c")
    note = Annotation.objects.get(comment="c")
    assert (note.address, note.block_id) == (address, block.pk)


def test_the_occurrence_nearest_the_hint_is_the_one_kept(org):
    trace = explorer_trace(org, real=False)
    TraceEvent.objects.filter(trace=trace, position=0).update(
        event={"role": "user", "content": "ab ab ab"}
    )
    member = signed_in(org, "member")
    block = _block_of_event(trace, 0)
    _post(member, trace, block=block.pk, quote="ab", hint="0.9", comment="c")
    assert Annotation.objects.get(comment="c").address == "messages[0].content:6-8"


def test_a_typed_address_is_kept_as_typed(org, trace):
    member = signed_in(org, "member")
    response = _post(member, trace, address="messages.3.content:0-5", comment="typed")
    assert response.status_code == 200
    assert Annotation.objects.get(comment="typed").address == "messages.3.content:0-5"


@pytest.mark.parametrize(
    ("address", "where"),
    [
        ("messages[x]", "cannot read the step at &#x27;[x]&#x27;"),
        ("messages[1].content:L", "anchor &#x27;L&#x27; is none of Ln"),
        ("messages[1].content:9-4", "range &#x27;9-4&#x27; ends before it starts"),
        ("msgs[1]", "an address starts with &#x27;messages&#x27;"),
    ],
)
def test_a_bad_address_is_422_saying_where_it_breaks(org, trace, address, where):
    member = signed_in(org, "member")
    response = _post(member, trace, address=address, comment="c")
    assert response.status_code == 422
    assert response["X-Partial"] == "anchor_error"
    assert response["HX-Retarget"] == "#anchor-error"
    body = response.content.decode()
    assert body.startswith('<span role="alert">The note was not saved: address ')
    assert where in body
    assert not Annotation.objects.filter(comment="c").exists()


def test_a_bad_address_without_htmx_is_a_message_on_the_page(org, trace):
    member = signed_in(org, "member")
    url = reverse("trace-anchor", args=[trace.pk])
    response = member.post(url, {"address": "messages[x]", "comment": "c"}, follow=True)
    assert response.redirect_chain[-1][0].endswith("#annotations")
    assert "The note was not saved: address &#x27;messages[x]&#x27;: cannot read" in (
        response.content.decode()
    )


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"quote": "Warsaw", "hint": "0"}, "block: select text in a block"),
        ({"block": "b_none", "quote": "Warsaw"}, "block &#x27;b_none&#x27;: not an event"),
        ({"block": "EVENT3", "quote": "  "}, "quote: select some text first"),
        ({"block": "EVENT3", "quote": "Paris"}, "quote: messages[3] does not hold"),
        ({"block": "EVENT3", "quote": "x" * 2001}, "quote: select at most 2000 characters"),
        ({"block": "EVENT3", "quote": "Warsaw", "comment": ""}, "give a label, a comment"),
    ],
)
def test_a_selection_that_is_no_text_of_the_trace_is_422(org, trace, fields, why):
    member = signed_in(org, "member")
    if fields.get("block") == "EVENT3":
        fields["block"] = _block_of_event(trace, 3).pk
    response = _post(member, trace, **{"comment": "c", **fields})
    assert response.status_code == 422
    assert why in response.content.decode()
    assert Annotation.objects.count() == 1  # the pushed trace's own


def test_a_trace_not_pushed_by_an_explorer_client_offers_no_selection(org, imported_trace):
    trace = imported_trace
    member = signed_in(org, "member")
    block = trace.blocks.first()
    response = _post(member, trace, block=block.pk, quote="a", comment="c")
    assert response.status_code == 422
    assert "only pushed and uploaded Explorer traces keep their events" in response.content.decode()
    page = member.get(reverse("trace", args=[trace.pk])).content.decode()
    assert _island(page)["can_comment"] is False


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("member", 200), ("owner", 200)])
def test_members_and_owners_comment_viewers_read(org, trace, role, status):
    client = signed_in(org, role)
    block = _block_of_event(trace, 3)
    response = _post(client, trace, block=block.pk, quote="Warsaw", comment="by " + role)
    assert response.status_code == status
    assert Annotation.objects.filter(comment="by " + role).exists() == (status == 200)
    page = client.get(reverse("trace", args=[trace.pk])).content.decode()
    assert _island(page)["can_comment"] is (status == 200)


def test_an_outsider_is_404_and_nobody_signed_in_goes_to_sign_in(org, rival_org, trace, client):
    outsider = signed_in(rival_org, "owner")
    block = _block_of_event(trace, 3)
    fields = {"block": block.pk, "quote": "Warsaw", "comment": "c"}
    assert outsider.post(reverse("trace-anchor", args=[trace.pk]), fields).status_code == 404
    response = client.post(reverse("trace-anchor", args=[trace.pk]), fields)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Annotation.objects.filter(comment="c").exists()


def test_the_page_lists_each_note_where_it_lands_and_those_that_do_not(org, trace):
    tool = _block_of_event(trace, 2)
    annotation_create(trace=trace, comment="past", address="messages[2].content:L7")
    annotation_create(trace=trace, comment="nowhere", address="messages[40]")
    annotation_create(trace=trace, comment="region", address="messages[3].content:bbox-0,0,1,1")
    viewer = signed_in(org, "viewer")
    page = viewer.get(reverse("trace", args=[trace.pk])).content.decode()
    notes = {n["comment"]: n for n in _island(page)["notes"]}
    assert notes["the tool's answer"]["block"] == tool.pk
    assert notes["the tool's answer"]["quote"] == '{"name": "Marie Curie"}'
    assert notes["past"]["block"] == tool.pk  # listed on its block, not lost
    assert (
        notes["past"]["why"] == "messages[2].content:L7: past the end of the text (23 characters)"
    )
    assert notes["nowhere"]["block"] is None
    assert notes["nowhere"]["why"] == "messages[40]: the trace has no event 40"
    assert "an image region" in notes["region"]["why"]
    # Without JavaScript: the card lists them, the unplaced ones marked.
    assert page.count('<span class="badge warn anchor-unplaced"') == 3
    assert '<q class="anchor-quote">{&quot;name&quot;: &quot;Marie Curie&quot;}</q>' in page


def test_hostile_comments_metadata_and_addresses_are_text(org, trace):
    evil = "</script><img src=x onerror=alert(1)>"
    annotation_create(
        trace=trace, comment=evil, address="messages[3].content:0-5",
        extra_metadata={"source": evil, "severity": "high"},
    )  # fmt: skip
    Annotation.objects.create(trace=trace, comment="raw", address="messages[1]" + evil)
    page = signed_in(org, "viewer").get(reverse("trace", args=[trace.pk])).content.decode()
    assert "<img src=x" not in page and "</script><img" not in page
    notes = {n["comment"]: n for n in _island(page)["notes"]}
    assert json.loads(notes[evil]["extra_metadata"]) == {"source": evil, "severity": "high"}
    assert notes["raw"]["block"] is None and "cannot read the step" in notes["raw"]["why"]
    assert '<details class="anchor-meta"><summary class="small">extra_metadata</summary>' in page


@pytest.mark.parametrize("role, reads", [("viewer", 1), ("member", 2)])
def test_the_notes_cost_the_page_two_queries_whatever_their_number(
    org, trace, django_assert_max_num_queries, role, reads
):
    for n in range(30):
        annotation_create(trace=trace, comment=f"n{n}", address=f"messages[{n % 4}].content:0-3")
    client = signed_in(org, role)
    client.get(reverse("trace", args=[trace.pk]))  # warm: sessions, caches
    with django_assert_max_num_queries(40) as captured:
        client.get(reverse("trace", args=[trace.pk]))
    events = [q for q in captured.captured_queries if "traces_traceevent" in q["sql"]]
    # The named events; and, for who may comment, whether the trace has any.
    assert len(events) == reads


def test_a_huge_explorer_note_costs_the_page_a_few_kilobytes(org, trace):
    # Explorer's API keeps content, address and extra_metadata unbounded (spec 2.5).
    huge = "x" * 1_000_000
    Annotation.objects.create(
        trace=trace, comment=huge, address="messages[3].content:0-5" + "9" * 100_000,
        extra_metadata={"log": huge},
    )  # fmt: skip
    page = signed_in(org, "viewer").get(reverse("trace", args=[trace.pk])).content.decode()
    assert len(page) < 100_000
    [note] = [n for n in _island(page)["notes"] if n["comment"].startswith("xxx")]
    assert note["comment"] == "x" * 4000 + " …"
    assert len(note["address"]) == 202 and len(note["extra_metadata"]) == 4002
