"""Names with bidirectional controls (harden F10a): a dataset, trace, tool, key, label,
comment or organization name holding U+202A-202E or U+2066-2069 could reorder what a page
shows ("invoice\u202egnp.exe" reads as "invoiceexe.png"). Every page (the dataset's labels
card, the trace's annotations, both compare pages...) shows them as visible stand-ins
(explorer/templatetags/names.py), never as the control itself."""

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from tests.explorer.conftest_dataset import *  # noqa: F403 (fixtures: ui_org, members_client...)
from tests.explorer.conftest_dataset import chat, import_lines
from traces.models import Trace
from traces.services.annotations import annotation_create, label_create
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db

CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
DATASET = "report\u202egnp.exe"
TRACE = "run \u2067one\u2069"
TRACE_2 = "run \u2067two\u2069"
TOOL = "look\u202bup"
LABEL = "wrong\u202etool"
COMMENT = "see \u202eline 3"


@pytest.fixture
def bidi_dataset(ui_org):
    dataset = import_lines(
        ui_org,
        DATASET,
        [
            {
                "messages": chat("hi", TOOL),
                "metadata": {"name": TRACE, "task\u202e": "a\u2066b", "reward": 0},
            },
            {
                "messages": chat("hello", TOOL),
                "metadata": {"name": TRACE_2, "task\u202e": "a\u2066b", "reward": 1},
            },
        ],
        metadata={"model\u202e": "gpt\u202e-x", "long\u2068": "\u202e" * 300},
    )
    label_create(dataset=dataset, name=LABEL, description="why \u202ethis")
    trace = Trace.objects.get(name=TRACE)
    annotation_create(trace=trace, label=LABEL, comment=COMMENT)
    annotation_create(trace=trace, label=LABEL, block_id=trace.blocks.first().pk)
    dataset.is_public = True
    dataset.save()
    api_key_create(organization=ui_org, name="key \u202dkey", role="member")
    ui_org.name = "Acme \u202e(evil)"
    ui_org.save()
    return dataset


class ShownText(HTMLParser):
    """What a page shows: its text and its tooltips (not the values a form sends back,
    which must stay exact and are never displayed)."""

    def __init__(self):
        super().__init__()
        self.shown: list[str] = []

    def handle_starttag(self, tag, attrs):
        shown = ("title", "alt", "hx-confirm")  # hx-confirm: the text of a confirm dialog
        self.shown += [value or "" for name, value in attrs if name in shown]

    def handle_data(self, data):
        self.shown.append(data)


def shown_text(html: str) -> str:
    parser = ShownText()
    parser.feed(html)
    return "".join(parser.shown)


def pages(dataset) -> list[str]:
    trace, other = Trace.objects.get(name=TRACE), Trace.objects.get(name=TRACE_2)
    return [
        reverse("datasets"),
        reverse("dataset", args=[dataset.pk]),
        reverse("dataset", args=[dataset.pk]) + "?group=task%E2%80%AE",
        reverse("trace", args=[trace.pk]),
        reverse("upload"),
        reverse("api-keys"),
        reverse("compare-traces") + f"?a={trace.pk}&b={other.pk}",
        reverse("compare-traces") + f"?a={trace.pk}",  # with the other trials to choose from
        reverse("compare-datasets") + f"?a={dataset.pk}&b={dataset.pk}&key=task%E2%80%AE",
        reverse("compare-datasets") + f"?a={dataset.pk}&a_where=reward=0&b_where=reward=1",
    ]


@pytest.mark.parametrize("role", ["member", "owner"])
def test_no_page_shows_a_bidi_control_of_a_name(role, bidi_dataset, request):
    client = request.getfixturevalue(f"{role}_client")  # an owner manages the labels
    for url in pages(bidi_dataset):
        response = client.get(url)
        assert response.status_code == 200, url
        text = shown_text(response.content.decode())
        assert not CONTROLS.search(text), (url, CONTROLS.findall(text))
    html = client.get(reverse("dataset", args=[bidi_dataset.pk])).content.decode()
    assert "report⟨U+202E⟩gnp.exe" in html
    assert "wrong⟨U+202E⟩tool" in html
    trace = Trace.objects.get(name=TRACE)
    html = client.get(reverse("trace", args=[trace.pk])).content.decode()
    assert "run ⟨U+2067⟩one⟨U+2069⟩" in html
    assert "see ⟨U+202E⟩line 3" in html and "wrong⟨U+202E⟩tool" in html


def test_the_compare_pages_show_the_names_visibly(members_client, bidi_dataset):
    trace, other = Trace.objects.get(name=TRACE), Trace.objects.get(name=TRACE_2)
    url = reverse("compare-traces") + f"?a={trace.pk}&b={other.pk}"
    html = shown_text(members_client.get(url).content.decode())
    assert "run ⟨U+2067⟩two⟨U+2069⟩" in html and "call look⟨U+202B⟩up" in html
    assert "report⟨U+202E⟩gnp.exe" in html
    url = (
        reverse("compare-datasets") + f"?a={bidi_dataset.pk}&b={bidi_dataset.pk}&key=task%E2%80%AE"
    )
    html = shown_text(members_client.get(url).content.decode())
    assert "a⟨U+2066⟩b" in html and "task⟨U+202E⟩" in html and "report⟨U+202E⟩gnp.exe" in html


def test_the_stored_names_keep_their_characters(bidi_dataset):
    assert bidi_dataset.name == DATASET
    assert Trace.objects.filter(dataset=bidi_dataset, name=TRACE).exists()


def test_no_bidi_control_of_content_reorders_a_message_an_outline_a_hit_or_a_diff(
    members_client, ui_org
):
    """Attacker review, finding 4: content (not names) reached four views with its bidi
    controls active: Markdown messages, search hits, the outline and the compare diff."""
    spoof = "Pay to \u202eredda\u202c now"
    role = "agent\u202evil"
    events = [
        {"role": "user", "content": spoof},
        {"role": role, "content": "thinking"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "to\u202eol", "arguments": {"x": spoof}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": spoof},
    ]  # fmt: skip
    dataset = import_lines(ui_org, "bidi content", [events, events[:2]])
    one, two = Trace.objects.filter(dataset=dataset).order_by("index")
    urls = [
        reverse("trace", args=[one.pk]),
        reverse("trace-outline", args=[one.pk]),
        reverse("dataset", args=[dataset.pk]) + "?q=redda",
        reverse("compare-traces") + f"?a={one.pk}&b={two.pk}",
    ]
    for url in urls:
        response = members_client.get(url)
        assert response.status_code == 200, url
        text = shown_text(response.content.decode())
        assert not CONTROLS.search(text), (url, CONTROLS.findall(text))
    html = members_client.get(urls[0]).content.decode()
    assert "Pay to ⟨U+202E⟩redda" in html
