"""Failure labels in the pages: the dataset's vocabulary with counts and the label filter,
tagging a trace or a block on the trace page, with and without htmx, on real tau2-bench
runs."""

import re

import pytest
from django.urls import reverse

from tests.real_runs import signed_in
from traces.models import Annotation, Label
from traces.services.annotations import annotation_create, label_create

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def member(org):
    return signed_in(org, "member")


def test_a_member_adds_a_label_and_the_page_counts_its_traces(member, runs):
    url = reverse("dataset-label-add", args=[runs.pk])
    assert member.post(url, {"name": "gave up"}).status_code == 302
    failed = runs.traces.filter(reward=0).order_by("index")
    for trace in failed[:3]:
        annotation_create(trace=trace, label="gave up")
    page = member.get(reverse("dataset", args=[runs.pk])).content.decode()
    assert 'id="labels"' in page
    assert 'href="?label=gave%20up#traces"' in page
    assert '<span class="num" title="3 traces, 3 tags">3</span>' in page


def test_the_label_filter_keeps_the_tagged_traces(member, runs):
    label_create(dataset=runs, name="wrong tool")
    tagged = runs.traces.order_by("index")[5]
    annotation_create(trace=tagged, label="wrong tool", block_id=tagged.blocks.first().pk)
    response = member.get(
        reverse("dataset", args=[runs.pk]), {"label": "wrong tool"}, HTTP_HX_TARGET="traces", **HTMX
    )
    body = response.content.decode()
    assert "1–1 of 1 trace matching the filters" in body
    assert reverse("trace", args=[tagged.pk]) in body
    assert '<span class="label-tag small">wrong tool</span>' in body


def test_a_duplicate_label_answers_the_form_with_why(member, runs):
    label_create(dataset=runs, name="gave up")
    url = reverse("dataset-label-add", args=[runs.pk])
    response = member.post(url, {"name": "gave up"}, **HTMX)
    assert response.status_code == 422
    assert response["X-Partial"] == "labels"
    assert "the dataset has a label named &#x27;gave up&#x27; already" in response.content.decode()
    assert Label.objects.count() == 1


def test_a_member_may_not_remove_a_label_an_owner_may(member, org, runs):
    label = label_create(dataset=runs, name="gave up")
    annotation_create(trace=runs.traces.first(), label="gave up")
    url = reverse("dataset-label-remove", args=[runs.pk, label.pk])
    assert member.post(url).status_code == 403
    assert signed_in(org, "owner").post(url).status_code == 302
    assert not Label.objects.exists() and not Annotation.objects.exists()


def test_tagging_a_block_from_the_trace_page(member, runs):
    label_create(dataset=runs, name="hallucinated argument")
    trace = runs.traces.order_by("index")[0]
    call = trace.blocks.filter(sub_type="TOOL_CALL").order_by("created_at", "id").first()
    page = member.get(reverse("trace", args=[trace.pk]), {"annotate": call.pk}).content.decode()
    assert f'name="block" value="{call.pk}"' in page  # the block's "label this block" link
    assert f">Tag block #{call.number}</button>" in page  # named as the page numbers it
    for odd in ("tb_nope", "a\x00b", "x" * 500):  # made by hand: the form, unnamed
        html = member.get(reverse("trace", args=[trace.pk]), {"annotate": odd}).content.decode()
        assert ">Tag the block</button>" in html
    response = member.post(
        reverse("trace-annotate", args=[trace.pk]),
        {"label": "hallucinated argument", "comment": "msisdn made up", "block": call.pk},
        **HTMX,
    )
    assert response.status_code == 200 and response["X-Partial"] == "annotations"
    assert "msisdn made up" in response.content.decode()
    # the note names its block by the number the page shows it with
    assert f'#{call.pk}">on block #{call.number}</a>' in response.content.decode()
    note = Annotation.objects.get()
    assert (note.block_id, note.label.name, note.author.username) == (
        call.pk, "hallucinated argument", "member",
    )  # fmt: skip
    page = member.get(reverse("trace", args=[trace.pk])).content.decode()
    assert (
        '<a class="label-tag small" href="#annotations" title="label">hallucinated argument</a>'
        in page
    )  # noqa: E501


def _oob_labels(html: str, block_id: str) -> list[str] | None:
    """The names in the labels the answer puts on the block out of band (None: none)."""
    found = re.search(
        rf'<p class="block-labels" id="labels-{block_id}" hx-swap-oob="true">(.*?)</p>', html
    )
    return None if found is None else re.findall(r'title="label">([^<]*)</a>', found[1])


def test_tagging_a_block_puts_its_labels_on_the_block_without_a_reload(member, runs):
    label_create(dataset=runs, name="wrong-city")
    label_create(dataset=runs, name="<no units>")
    trace = runs.traces.order_by("index")[0]
    call = trace.blocks.filter(sub_type="TOOL_CALL").order_by("created_at", "id").first()
    page = member.get(reverse("trace", args=[trace.pk])).content.decode()
    assert f'<p class="block-labels" id="labels-{call.pk}"></p>' in page  # where they go
    url = reverse("trace-annotate", args=[trace.pk])
    first = member.post(url, {"label": "wrong-city", "block": call.pk}, **HTMX).content.decode()
    assert _oob_labels(first, call.pk) == ["wrong-city"]
    second = member.post(url, {"label": "<no units>", "block": call.pk}, **HTMX).content.decode()
    assert _oob_labels(second, call.pk) == ["wrong-city", "&lt;no units&gt;"]
    # A comment alone, or a tag of the trace, leaves the blocks as they are.
    commented = member.post(url, {"comment": "odd", "block": call.pk}, **HTMX).content.decode()
    assert "hx-swap-oob" not in commented
    on_trace = member.post(url, {"label": "wrong-city"}, **HTMX).content.decode()
    assert "hx-swap-oob" not in on_trace
    # Removing a tag takes it off the block.
    tag = Annotation.objects.get(block_id=call.pk, label__name="wrong-city")
    removed = member.post(
        reverse("annotation-remove", args=[trace.pk, tag.pk]), **HTMX
    ).content.decode()
    assert _oob_labels(removed, call.pk) == ["&lt;no units&gt;"]
    # Without JavaScript: back to the page, which shows them.
    response = member.post(url, {"label": "wrong-city", "block": call.pk})
    assert response.status_code == 302


def test_an_empty_tag_is_refused_with_the_reason(member, runs):
    trace = runs.traces.first()
    response = member.post(reverse("trace-annotate", args=[trace.pk]), {"comment": " "}, **HTMX)
    assert response.status_code == 422
    assert "give a label, a comment or both" in response.content.decode()
    without_js = member.post(reverse("trace-annotate", args=[trace.pk]), {"comment": ""})
    assert without_js.status_code == 302 and not Annotation.objects.exists()


def test_removing_a_comment_from_the_trace_page(member, runs):
    trace = runs.traces.first()
    note = annotation_create(trace=trace, comment="recheck")
    url = reverse("annotation-remove", args=[trace.pk, note.pk])
    assert member.post(url).status_code == 302
    assert not Annotation.objects.exists()


def test_a_viewer_sees_labels_but_no_form(org, runs):
    label_create(dataset=runs, name="gave up")
    trace = runs.traces.first()
    annotation_create(trace=trace, label="gave up", comment="no retry")
    page = signed_in(org, "viewer").get(reverse("trace", args=[trace.pk])).content.decode()
    assert "no retry" in page and 'class="annotate"' not in page
