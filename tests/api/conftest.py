"""Helpers of the API tests. The keys (`api`, `viewer_api`, `owner_api`, `other_api`) are
fixtures of tests/conftest.py, the one set."""

import orjson

from tests.conftest import key_client  # noqa: F401 (imported from here by older tests)

BASE = "/v1/organizations/acme"


def post_json(client, url, body):
    return client.generic("POST", url, orjson.dumps(body), content_type="application/json")


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "http_status", "message", "details"}
    assert body["error"]["http_status"] == response.status_code
    return body["error"]
