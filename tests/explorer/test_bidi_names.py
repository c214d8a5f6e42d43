"""Names with bidirectional controls (harden F10a): a dataset, trace, tool, key or
organization name holding U+202A-202E or U+2066-2069 could reorder what a page shows
("invoice\u202egnp.exe" reads as "invoiceexe.png"). Every page shows them as visible
stand-ins (explorer/templatetags/names.py), never as the control itself."""

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from tests.explorer.conftest_dataset import *  # noqa: F403 (fixtures: ui_org, members_client...)
from tests.explorer.conftest_dataset import chat, import_lines
from traces.models import Trace
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db

CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
DATASET = "report\u202egnp.exe"
TRACE = "run \u2067one\u2069"
TOOL = "look\u202bup"


@pytest.fixture
def bidi_dataset(ui_org):
    dataset = import_lines(
        ui_org,
        DATASET,
        [{"messages": chat("hi", TOOL), "metadata": {"name": TRACE, "task\u202e": "a\u2066b"}}],
        metadata={"model\u202e": "gpt\u202e-x", "long\u2068": "\u202e" * 300},
    )
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
        self.shown += [value or "" for name, value in attrs if name in ("title", "alt")]

    def handle_data(self, data):
        self.shown.append(data)


def shown_text(html: str) -> str:
    parser = ShownText()
    parser.feed(html)
    return "".join(parser.shown)


def pages(dataset) -> list[str]:
    trace = Trace.objects.get(dataset=dataset)
    return [
        reverse("datasets"),
        reverse("dataset", args=[dataset.pk]),
        reverse("dataset", args=[dataset.pk]) + "?group=task%E2%80%AE",
        reverse("trace", args=[trace.pk]),
        reverse("upload"),
        reverse("api-keys"),
    ]


def test_no_page_shows_a_bidi_control_of_a_name(members_client, bidi_dataset):
    for url in pages(bidi_dataset):
        response = members_client.get(url)
        assert response.status_code == 200, url
        text = shown_text(response.content.decode())
        assert not CONTROLS.search(text), (url, CONTROLS.findall(text))
    html = members_client.get(reverse("dataset", args=[bidi_dataset.pk])).content.decode()
    assert "report⟨U+202E⟩gnp.exe" in html
    trace = Trace.objects.get(dataset=bidi_dataset)
    html = members_client.get(reverse("trace", args=[trace.pk])).content.decode()
    assert "run ⟨U+2067⟩one⟨U+2069⟩" in html


def test_the_stored_names_keep_their_characters(bidi_dataset):
    assert bidi_dataset.name == DATASET
    assert Trace.objects.get(dataset=bidi_dataset).name == TRACE
