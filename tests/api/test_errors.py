"""Every API error code, with its status and full envelope."""

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.api.conftest import BASE, error_of, post_json
from tests.sqlite_lock import busy_timeout, sqlite_only, write_lock_held_elsewhere
from traces.models import Trace


@pytest.fixture
def trace(api):
    return post_json(api, f"{BASE}/traces", {"name": "t"}).json()


@pytest.fixture
def message(api, trace):
    url = f"{BASE}/traces/{trace['id']}/blocks"
    return post_json(
        api, url, {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "q"}}
    ).json()


def blocks_url(trace):
    return f"{BASE}/traces/{trace['id']}/blocks"


def test_it_answers_401_to_a_write_without_a_key(db):
    response = APIClient().post(f"{BASE}/datasets", {"name": "x"}, format="json")
    assert response.status_code == 401
    assert error_of(response) == {
        "code": "UNAUTHENTICATED",
        "http_status": 401,
        "message": "Authentication credentials were not provided.",
        "details": {},
    }
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_answers_401_for_an_unknown_key(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer te_nope")
    assert error_of(client.get(f"{BASE}/datasets")) == {
        "code": "UNAUTHENTICATED",
        "http_status": 401,
        "message": "the API key is unknown or revoked",
        "details": {},
    }


def test_it_answers_404_for_a_missing_trace(api):
    response = api.get(f"{BASE}/traces/tr_missing")
    assert response.status_code == 404
    assert error_of(response) == {
        "code": "NOT_FOUND",
        "http_status": 404,
        "message": "no trace 'tr_missing'",
        "details": {"trace_id": "tr_missing"},
    }


def test_it_answers_404_for_an_unknown_url_under_v1(api):
    response = api.get("/v1/nothing-here")
    assert response.status_code == 404
    assert error_of(response)["code"] == "NOT_FOUND"


def test_it_answers_405_for_a_method_an_endpoint_lacks(api, trace):
    response = api.put(f"{BASE}/traces/{trace['id']}", {}, format="json")
    assert response.status_code == 405
    assert error_of(response) == {
        "code": "METHOD_NOT_ALLOWED",
        "http_status": 405,
        "message": 'Method "PUT" not allowed.',
        "details": {},
    }


def test_it_answers_400_for_malformed_json(api, trace):
    response = api.generic(
        "POST", blocks_url(trace), b'{"sub_type": ', content_type="application/json"
    )
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "MALFORMED_JSON"
    assert error["message"].startswith("the request body is not valid JSON")


def test_it_answers_422_with_field_and_rule(api, trace):
    response = post_json(
        api,
        blocks_url(trace),
        {"sub_type": "MESSAGE", "payload": {"role": "robot", "content": "x"}},
    )
    assert response.status_code == 422
    assert error_of(response) == {
        "code": "VALIDATION",
        "http_status": 422,
        "message": "payload.role must be one of system, user, assistant, not 'robot'",
        "details": {
            "field": "payload.role",
            "rule": "enum",
            "allowed": ["system", "user", "assistant"],
        },
    }


def test_it_rejects_tool_result_under_message(api, trace, message):
    body = {
        "sub_type": "TOOL_RESULT",
        "parent_block_id": message["id"],
        "payload": {"call_id": "c", "output": "x"},
    }
    response = post_json(api, blocks_url(trace), body)
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "PARENT_SUBTYPE_MISMATCH",
        "http_status": 409,
        "message": "a TOOL_RESULT block must hang under a TOOL_CALL, not a MESSAGE",
        "details": {
            "field": "parent_block_id",
            "sub_type": "TOOL_RESULT",
            "parent_sub_type": "MESSAGE",
            "allowed_parent_sub_type": "TOOL_CALL",
            "parent_block_id": message["id"],
        },
    }


def test_it_answers_409_for_a_duplicate_call_id(api, trace, message):
    body = {
        "sub_type": "TOOL_CALL",
        "parent_block_id": message["id"],
        "payload": {"call_id": "c1", "name": "f", "arguments": {}},
    }
    assert post_json(api, blocks_url(trace), body).status_code == 201
    response = post_json(api, blocks_url(trace), body)
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "DUPLICATE_CALL_ID",
        "http_status": 409,
        "message": "this trace already has a TOOL_CALL with call_id 'c1'",
        "details": {"field": "payload.call_id", "call_id": "c1"},
    }


def test_it_answers_409_for_a_duplicate_result_seq(api, trace, message):
    call = {
        "sub_type": "TOOL_CALL",
        "parent_block_id": message["id"],
        "payload": {"call_id": "c1", "name": "f", "arguments": {}},
    }
    call_id = post_json(api, blocks_url(trace), call).json()["id"]
    result = {
        "sub_type": "TOOL_RESULT",
        "parent_block_id": call_id,
        "payload": {"call_id": "c1", "delta": "a", "seq": 0},
    }
    assert post_json(api, blocks_url(trace), result).status_code == 201
    response = post_json(api, blocks_url(trace), result)
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "DUPLICATE_RESULT_SEQ",
        "http_status": 409,
        "message": "this trace already has a TOOL_RESULT for call_id 'c1' with seq 0",
        "details": {"field": "payload.seq", "call_id": "c1", "seq": 0},
    }


def test_it_answers_409_when_an_immutable_field_is_patched(api, message):
    response = api.patch(
        f"{BASE}/blocks/{message['id']}",
        {"payload": {"role": "user", "content": "new"}},
        format="json",
    )
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "IMMUTABLE_FIELD",
        "http_status": 409,
        "message": "payload is immutable: only extra may change after a block is written",
        "details": {"field": "payload", "block_id": message["id"]},
    }


@override_settings(LIMIT_TOOL_RESULT_BYTES=2097152)
def test_it_answers_413_with_the_spec_details_and_exact_size(api, trace, message):
    call = {
        "sub_type": "TOOL_CALL",
        "parent_block_id": message["id"],
        "payload": {"call_id": "c1", "name": "f", "arguments": {}},
    }
    call_id = post_json(api, blocks_url(trace), call).json()["id"]
    output = "é" * 1048577  # 2,097,154 bytes in UTF-8
    body = {
        "sub_type": "TOOL_RESULT",
        "parent_block_id": call_id,
        "payload": {"call_id": "c1", "output": output},
    }
    response = post_json(api, blocks_url(trace), body)
    assert response.status_code == 413
    assert error_of(response) == {
        "code": "PAYLOAD_TOO_LARGE",
        "http_status": 413,
        "message": "tool_result output exceeds 2MB limit",
        "details": {
            "sub_type": "TOOL_RESULT",
            "field": "output",
            "limit_bytes": 2097152,
            "actual_bytes": 2097154,
            "trace_id": trace["id"],
            "parent_block_id": call_id,
        },
    }


@override_settings(
    LIMIT_MSG_BYTES=100,
    LIMIT_THINK_BYTES=100,
    LIMIT_TOOL_ARGS_BYTES=100,
    LIMIT_TOOL_RESULT_BYTES=100,
)
def test_it_refuses_a_body_far_over_every_limit_before_parsing_it(api, trace):
    body = b"{" + b" " * (3 << 20)  # not even JSON: refused from its length alone
    response = api.generic("POST", blocks_url(trace), body, content_type="application/json")
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert error["details"] == {
        "field": "body",
        "limit_bytes": 200 + (1 << 20),
        "actual_bytes": len(body),
    }


def test_it_answers_500_without_a_traceback(api, trace, monkeypatch):
    from traces.api import blocks

    def explode(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(blocks, "trace_tree_get", explode)
    client_response = api.get(f"{BASE}/traces/{trace['id']}/blocks.stitched")
    assert client_response.status_code == 500
    assert error_of(client_response) == {
        "code": "INTERNAL",
        "http_status": 500,
        "message": "internal error",
        "details": {},
    }
    assert b"secret internals" not in client_response.content


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_an_api_write_meeting_the_lock_answers_503_busy(api):
    busy_timeout(100)
    with write_lock_held_elsewhere():
        response = post_json(api, f"{BASE}/traces", {"name": "meanwhile"})
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    error = error_of(response)
    assert error["code"] == "BUSY"
    assert error["details"] == {"retry_after_seconds": 5}
    assert not Trace.objects.filter(name="meanwhile").exists()


def test_more_query_parameters_than_django_takes_is_a_400_envelope(api):
    query = "&".join(f"x{i}=1" for i in range(1100))
    response = api.get(f"{BASE}/whoami?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["http_status"]) == ("BAD_REQUEST", 400)
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in error["message"]
