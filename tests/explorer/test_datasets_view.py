"""The datasets page (/): visible datasets with their accuracy; live search."""

import re

import pytest
from django.urls import reverse

from tests.conftest import client_for, user_in
from tests.explorer.conftest import chat, html_problems, import_lines

URL = reverse("datasets")


def names_on(html: str) -> list[str]:
    return re.findall(r'class="dataset-link ellipsis" href="[^"]+" title="[^"]*">([^<]+)</a>', html)


@pytest.fixture
def three_datasets(org, rival_org, tasks_dataset):
    import_lines(rival_org, "rival-secret", [{"messages": chat("hi"), "metadata": {"reward": 1}}])
    public = import_lines(rival_org, "rival-public", [{"messages": chat("hi")}])
    public.is_public = True
    public.save()
    return tasks_dataset


def test_signed_out_visitors_see_public_datasets_only(client, three_datasets):
    response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert names_on(html) == ["rival-public"]
    assert "Upload traces" not in html and 'href="/accounts/login/?next=/"' in html


def test_a_viewer_sees_their_datasets_but_no_upload(viewer_client, three_datasets):
    html = viewer_client.get(URL).content.decode()
    assert set(names_on(html)) == {"airline-run", "rival-public"}
    assert "Upload traces" not in html


def test_only_visible_datasets_newest_first(member_client, three_datasets):
    response = member_client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert names_on(html) == ["rival-public", "airline-run"]  # the latest update first
    assert "rival-secret" not in html
    assert html.count('class="badge accent"') == 1  # "public" on rival-public only
    row = html[html.index("airline-run") :]
    assert ">6<" in row.split("</tr>")[0]  # trace count
    assert "0.333" in row.split("</tr>")[0]  # accuracy and mean reward (2 of 6)
    assert reverse("dataset", args=[three_datasets.pk]) in html


def test_search_full_page_and_htmx_partial(member_client, three_datasets):
    full = member_client.get(URL, {"q": "AIRLINE"})
    html = full.content.decode()
    assert "<html" in html and names_on(html) == ["airline-run"]
    assert 'value="AIRLINE"' in html  # the form keeps the query
    partial = member_client.get(URL, {"q": "public"}, HTTP_HX_REQUEST="true")
    fragment = partial.content.decode()
    assert partial.status_code == 200
    assert "<html" not in fragment and "topbar" not in fragment
    assert fragment.lstrip().startswith('<section id="datasets-table"')
    assert names_on(fragment) == ["rival-public"]
    assert "HX-Request" in partial["Vary"]
    assert partial["HX-Push-Url"] == f"{URL}?q=public"  # the address bar's clean URL
    cleared = member_client.get(URL, {"q": ""}, HTTP_HX_REQUEST="true")
    assert cleared["HX-Push-Url"] == URL
    # A history restore asks for the whole page.
    restore = member_client.get(
        URL, {"q": "public"}, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in restore.content.decode()
    nothing = member_client.get(URL, {"q": "zzz"}, HTTP_HX_REQUEST="true").content.decode()
    assert "No dataset matches" in nothing


def test_search_form_is_live_and_works_without_script(member_client, three_datasets):
    html = member_client.get(URL).content.decode()
    form = html[html.index('<form class="search-form"') :].split("</form>")[0]
    assert 'method="get"' in form and f'action="{URL}"' in form
    assert 'hx-trigger="input changed delay:250ms' in form
    assert 'hx-push-url="true"' in form and 'hx-target="#datasets-table"' in form


def test_empty_state_tells_how_to_upload(member_client):
    html = member_client.get(URL).content.decode()
    assert "No datasets yet" in html
    assert f'href="{reverse("upload")}"' in html
    assert "manage.py import_traces" in html and "--org acme" in html
    assert "/v1/organizations/acme/datasets/" in html and reverse("api-keys") in html


def test_a_person_without_organization_sees_public_datasets_only(db, three_datasets):
    html = client_for(user_in(None, "loner")).get(URL).content.decode()
    assert names_on(html) == ["rival-public"]
    assert "Upload traces" not in html


def test_no_script_from_data(member_client, xss_dataset):
    html = member_client.get(URL).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html_problems(html) == []
    partial = member_client.get(URL, {"q": "script"}, HTTP_HX_REQUEST="true")
    assert html_problems(partial.content.decode()) == []
    assert "&lt;img src=x onerror=alert(1)&gt;" in partial.content.decode()
