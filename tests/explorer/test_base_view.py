"""explorer/views/base.py, the one htmx convention, on the pages that use it: a page's
URL answers htmx with the partial its view names (marked X-Partial) and anything else,
htmx's history restore too, with the whole page; answers vary on HX-Request and
HX-Target; a partial with an error status is marked like any other."""

import pytest
from django.test import RequestFactory

from explorer.views.base import clean_url, htmx_target, render_page, wants_partial

URL = "/"
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_htmx_gets_the_partial_marked_and_a_browser_the_page(member_client, tasks_dataset):
    page = member_client.get(URL)
    assert "<html" in page.content.decode() and "X-Partial" not in page
    partial = member_client.get(URL, **HTMX)
    assert "<html" not in partial.content.decode() and partial["X-Partial"] == "table"
    for response in (page, partial):
        assert {"HX-Request", "HX-Target"} <= {v.strip() for v in response["Vary"].split(",")}


def test_a_history_restore_gets_the_whole_page(member_client, tasks_dataset):
    restore = member_client.get(URL, HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HTMX)
    assert "<html" in restore.content.decode() and "X-Partial" not in restore


def test_the_target_names_the_partial_where_one_url_feeds_several(member_client, tasks_dataset):
    url = f"/d/{tasks_dataset.pk}/"
    groups = member_client.get(url, HTTP_HX_TARGET="groups", **HTMX)
    traces = member_client.get(url, HTTP_HX_TARGET="traces", **HTMX)
    unknown = member_client.get(url, HTTP_HX_TARGET="elsewhere", **HTMX)
    assert groups["X-Partial"] == "groups" and traces["X-Partial"] == "traces"
    assert "<html" in unknown.content.decode()  # no partial of that name: the page


@pytest.mark.parametrize(
    ("headers", "partial", "target"),
    [
        ({}, False, ""),
        ({"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "traces"}, True, "traces"),
        ({"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}, False, ""),
    ],
)
def test_wants_partial_and_target(headers, partial, target):
    from django_htmx.middleware import HtmxDetails

    request = RequestFactory().get("/", **headers)
    request.htmx = HtmxDetails(request)
    assert wants_partial(request) is partial and htmx_target(request) == target


def test_an_error_partial_is_marked_and_a_push_url_only_goes_with_a_partial(db):
    from django_htmx.middleware import HtmxDetails

    def request(**headers):
        made = RequestFactory().get("/upload/?x=1", **headers)
        made.htmx = HtmxDetails(made)
        made.user = None
        return made

    context = {"problems": [], "error": "Wrong.", "problem_columns": ()}
    template = "explorer/upload.html"
    answer = render_page(request(**HTMX), template, context, partial="result", status=422,
                         push_url="/upload/")  # fmt: skip
    assert answer.status_code == 422 and answer["X-Partial"] == "result"
    assert answer["HX-Push-Url"] == "/upload/" and "Wrong." in answer.content.decode()
    assert clean_url(request(), "") == "/upload/" and clean_url(request(), "q=a") == "/upload/?q=a"
