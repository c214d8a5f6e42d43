"""The browsable API: a browser signed in with a session gets DRF's HTML page of each
answer (escaped); code gets JSON as before."""

import pytest
from django.contrib.auth import get_user_model

from tests.api.conftest import BASE
from tests.real_runs import tau2_dataset
from traces.models import Membership

BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def browser(client, org):
    user = get_user_model().objects.create(username="reader")
    Membership.objects.create(user=user, organization=org, role="member")
    client.force_login(user)
    return client


def test_a_browser_gets_the_html_page_of_a_list(browser, org):
    runs = tau2_dataset(org)
    response = browser.get(f"{BASE}/datasets", **BROWSER)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert 'class="response-info"' in body  # DRF's browsable page
    assert runs.pk in body and "&quot;telecom&quot;" in body  # the JSON, escaped


def test_trace_content_is_escaped_in_the_browsable_page(browser, org, api):
    created = api.post(f"{BASE}/traces", {"name": "<script>alert(1)</script>"}, format="json")
    trace_id = created.json()["id"]
    body = browser.get(f"{BASE}/traces/{trace_id}", **BROWSER).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_an_error_is_the_envelope_in_the_page(browser):
    response = browser.get(f"{BASE}/traces/tr_missing", **BROWSER)
    assert response.status_code == 404
    assert "&quot;NOT_FOUND&quot;" in response.content.decode()


def test_code_still_gets_json(api):
    response = api.get(f"{BASE}/datasets")
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"datasets": []}
