"""Huge metadata (harden F3): thousands of keys and megabyte values in a dataset's or a
trace's metadata. The panels show the first keys, values cut with an ellipsis, and a link
to the whole JSON (the /v1 resource); the dataset page's group-by offers only keys of a
readable length and groups values by their first characters."""

import re

import pytest
from django.urls import reverse

from explorer.dataset_page import META_PANEL_KEYS
from tests.explorer.conftest_dataset import *  # noqa: F403 (fixtures: ui_org, members_client...)
from tests.explorer.conftest_dataset import chat, import_lines
from traces.models import Trace
from traces.selectors.stats import GROUP_KEY_MAX_CHARS, GROUP_VALUE_MAX_CHARS

pytestmark = pytest.mark.django_db

KEYS = 3000
BIG = "v" * 1_000_000


def huge(prefix: str) -> dict:
    return {"big": BIG} | {f"{prefix}{n:05d}": n for n in range(KEYS)}


@pytest.fixture
def huge_dataset(ui_org):
    long_key = "k" * (GROUP_KEY_MAX_CHARS + 1)
    traces = [
        {"messages": chat(f"run {n}"), "metadata": {**huge("x"), "task_id": BIG + str(n % 2),
                                                   long_key: n, "reward": n % 2}}
        for n in range(4)
    ]  # fmt: skip
    return import_lines(ui_org, "huge", traces, metadata=huge("d"))


def shown_keys(html: str, prefix: str) -> int:
    return len(re.findall(rf">{prefix}\d{{5}}<", html))


def test_the_dataset_metadata_panel_shows_the_first_keys_and_links_to_the_rest(
    members_client, huge_dataset
):
    html = members_client.get(reverse("dataset", args=[huge_dataset.pk])).content.decode()
    assert shown_keys(html, "d") == META_PANEL_KEYS - 1  # "big" is one of the first
    assert f"{KEYS + 1 - META_PANEL_KEYS} more keys not shown" in html
    raw = f"/v1/organizations/{huge_dataset.organization.slug}/datasets/{huge_dataset.pk}"
    assert f'href="{raw}"' in html
    assert BIG[:5000] not in html and "v" * 3000 + "…" in html
    assert len(html) < 200_000


def test_the_trace_metadata_panel_shows_the_first_keys_and_links_to_the_rest(
    members_client, huge_dataset
):
    trace = Trace.objects.filter(dataset=huge_dataset).first()
    html = members_client.get(reverse("trace", args=[trace.pk])).content.decode()
    assert shown_keys(html, "x") == META_PANEL_KEYS - 1
    raw = f"/v1/organizations/{huge_dataset.organization.slug}/traces/{trace.pk}"
    assert f'href="{raw}"' in html
    assert len(html) < 200_000


def test_group_by_offers_only_keys_of_a_readable_length(members_client, huge_dataset):
    url = reverse("dataset", args=[huge_dataset.pk])
    html = members_client.get(url, {"group": "task_id"}).content.decode()
    assert "k" * (GROUP_KEY_MAX_CHARS + 1) not in html
    assert '<option value="task_id" selected>' in html


def test_groups_of_megabyte_values_are_told_apart_by_their_first_characters(
    members_client, huge_dataset
):
    url = reverse("dataset", args=[huge_dataset.pk])
    html = members_client.get(url, {"group": "task_id"}).content.decode()
    assert len(html) < 200_000
    groups = html[html.index('id="groups"') :]
    groups = groups[: groups.index("</section>")]
    assert BIG[: GROUP_VALUE_MAX_CHARS + 10] not in groups
    rows = re.findall(r'<th scope="row" class="group-name">(.*?)</th>', groups)
    assert len(rows) == 1 and "v" * 50 in rows[0] and "…" in rows[0]
