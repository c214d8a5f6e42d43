"""Invariant Explorer's /api/v1 under test: the real client (invariant-sdk) against the live
server (pytest-django's, a thread per request, each with its own database connection), and
Django's test client for what the SDK does not send."""

import pytest
from rest_framework.test import APIClient

from traces.services.api_keys import api_key_create


@pytest.fixture
def owner_key(org) -> str:
    return api_key_create(organization=org, name="sdk", role="owner").secret


# The SDK's own timeouts (5 s to connect) are for a server that is up; the suite's live
# server shares two cores with a second test process and Chromium.
SDK_TIMEOUT_MS = 60_000


@pytest.fixture
def sdk(live_server, owner_key):
    from invariant_sdk.client import Client

    client = Client(api_url=live_server.url, api_key=owner_key, timeout_ms=SDK_TIMEOUT_MS)
    yield client
    client.session.close()


@pytest.fixture
def inv(owner_key) -> APIClient:
    """Django's client with an owner's key of acme."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {owner_key}")
    return client


EVENTS = [
    {"role": "user", "content": "line one\nline two"},
    {"role": "assistant", "content": "x" * 50},
]


@pytest.fixture
def pushed(inv):
    """A trace pushed by acme's owner key into acme's private dataset `runs`: its id."""

    def push(events=None, dataset="runs", client=None):
        body = {"messages": [events or EVENTS], "annotations": None, "metadata": None,
                "dataset": dataset}  # fmt: skip
        response = (client or inv).post("/api/v1/push/trace", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()["id"][0]

    return push


@pytest.fixture
def rival(rival_org) -> APIClient:
    client = APIClient()
    secret = api_key_create(organization=rival_org, role="owner").secret
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client
