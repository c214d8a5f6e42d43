"""POST /otlp/v1/traces (traces/api/otlp.py): what it answers, as the OTLP specification
says, for every way a request goes wrong, and that a refused request writes nothing.
(A real SDK against a live server: test_otlp_live.py.)"""

import gzip
import json
import zlib

import pytest
from django.test import Client
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from tests.otel.agent import genai_agent, otlp_json, recorded, request_bytes
from tests.sqlite_lock import busy_timeout, sqlite_only, write_lock_held_elsewhere
from traces.models import Block, Dataset, OtelSpan, Trace
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db

URL = "/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


@pytest.fixture(scope="module")
def body() -> bytes:
    return request_bytes(recorded(genai_agent, {"service.name": "weather-agent"}))


def send(key: str | None, body: bytes, content_type: str = PROTOBUF, **headers):
    if key is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    return Client().post(URL, body, content_type=content_type, **headers)


def status_of(response) -> status_pb2.Status:
    if response["Content-Type"] == "application/json":
        data = json.loads(response.content)
        return status_pb2.Status(code=data.get("code", 0), message=data.get("message", ""))
    return status_pb2.Status.FromString(response.content)


def nothing_written() -> bool:
    return not (Trace.objects.exists() or Block.objects.exists() or OtelSpan.objects.exists())


def test_a_protobuf_request_answers_an_export_response(key, body):
    response = send(key, body)
    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")
    assert Block.objects.count() == 7


def test_deflate_is_taken_too(key, body):
    response = send(key, zlib.compress(body), HTTP_CONTENT_ENCODING="deflate")
    assert response.status_code == 200
    assert Block.objects.count() == 7


def test_no_key_is_401_with_a_status_body(body):
    response = send(None, body)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert status_of(response).code == code_pb2.UNAUTHENTICATED
    assert nothing_written()


def test_an_unknown_key_is_401(db, body):
    response = send("te_not-a-key", body)
    assert response.status_code == 401
    assert "API key" in status_of(response).message
    assert nothing_written()


def test_a_revoked_key_is_401(org, body):
    from traces.services.api_keys import api_key_revoke

    made = api_key_create(organization=org, name="old")
    api_key_revoke(organization=org, key_id=made.api_key.pk)
    assert send(made.secret, body).status_code == 401
    assert nothing_written()


def test_a_viewer_key_may_not_write_403(org, body):
    viewer = api_key_create(organization=org, role="viewer").secret
    response = send(viewer, body)
    assert response.status_code == 403
    assert status_of(response).code == code_pb2.PERMISSION_DENIED
    assert "viewer" in status_of(response).message
    assert nothing_written()


def test_what_arrives_belongs_to_the_key_organization(org, rival_org, body):
    rival = api_key_create(organization=rival_org).secret
    assert send(rival, body).status_code == 200
    assert Trace.objects.get().organization == rival_org
    assert Dataset.objects.get().organization == rival_org


def test_get_is_405(key):
    response = Client().get(URL, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert status_of(response).code == code_pb2.UNIMPLEMENTED


def test_another_content_type_is_415(key, body):
    response = send(key, body, content_type="text/plain")
    assert response.status_code == 415
    assert "application/x-protobuf" in status_of(response).message
    assert nothing_written()


def test_another_content_encoding_is_415(key, body):
    response = send(key, body, HTTP_CONTENT_ENCODING="br")
    assert response.status_code == 415
    assert "br" in status_of(response).message
    assert nothing_written()


def test_malformed_protobuf_is_400_with_the_reason(key):
    response = send(key, b"\xff\xff\xff\xff not protobuf")
    assert response.status_code == 400
    status = status_of(response)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert "ExportTraceServiceRequest" in status.message
    assert nothing_written()


def test_malformed_json_is_400_with_a_json_status(key):
    response = send(key, b'{"resourceSpans": [', content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    data = json.loads(response.content)
    assert data["code"] == code_pb2.INVALID_ARGUMENT
    assert "not JSON" in data["message"]
    assert nothing_written()


def test_json_of_the_wrong_shape_is_400(key):
    response = send(key, b'{"resourceSpans": 7}', content_type="application/json")
    assert response.status_code == 400
    assert "ExportTraceServiceRequest" in json.loads(response.content)["message"]


def test_broken_gzip_is_400(key, body):
    response = send(key, gzip.compress(body)[:-20], HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 400
    assert "gzip" in status_of(response).message
    assert nothing_written()


def test_a_body_over_the_limit_is_413(key, body, settings):
    settings.OTLP_MAX_BYTES = len(body) - 1
    response = send(key, body)
    assert response.status_code == 413
    assert status_of(response).code == code_pb2.RESOURCE_EXHAUSTED
    assert f"{len(body) - 1}-byte limit" in status_of(response).message
    assert nothing_written()


def test_a_gzip_body_that_inflates_past_the_limit_is_413(key, settings):
    settings.OTLP_MAX_BYTES = 1 << 20
    bomb = gzip.compress(b"\x00" * (8 << 20))  # 8 MiB of zeros in a few KiB
    assert len(bomb) < settings.OTLP_MAX_BYTES
    response = send(key, bomb, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413
    assert "inflates" in status_of(response).message
    assert nothing_written()


def test_spans_refused_are_counted_in_partial_success_and_the_rest_kept(key):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    user = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    bad_call = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "no spaces allowed", "arguments": {}}
            ],
        }
    ]  # noqa: E501
    with tracer.start_as_current_span("chat") as span:
        span.set_attributes({
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(user),
            "gen_ai.output.messages": json.dumps(bad_call),
        })  # fmt: skip
    response = send(key, request_bytes(memory.get_finished_spans()))
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert "name" in answer.partial_success.error_message
    # nothing of the refused span is kept, and no trace is made for it alone
    assert nothing_written()


def test_all_zero_ids_are_refused_in_partial_success(key):
    spans = [
        {"traceId": "0" * 32, "spanId": "1" * 16, "name": "a"},
        {"traceId": "1" * 32, "spanId": "0" * 16, "name": "b"},
    ]
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    response = send(key, body, content_type="application/json")
    assert response.status_code == 200
    answer = response.json()["partialSuccess"]
    assert answer["rejectedSpans"] == "2"
    assert "all-zero" in answer["errorMessage"]
    assert nothing_written()


@sqlite_only
@pytest.mark.django_db(transaction=True)  # the lock is another connection's
def test_a_busy_database_is_503_to_retry_and_writes_nothing(key, body):
    busy_timeout(50)
    with write_lock_held_elsewhere():
        response = send(key, body)
    assert response.status_code == 503
    assert response["Retry-After"]
    assert status_of(response).code == code_pb2.UNAVAILABLE
    assert nothing_written()


def test_json_nested_past_the_parsers_limits_is_400(key):
    value = '{"stringValue": "x"}'
    for _ in range(400):
        value = '{"kvlistValue": {"values": [{"key": "k", "value": ' + value + "}]}}"
    body = (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "'
        + "ab" * 16
        + '", "spanId": "'
        + "cd" * 8
        + '", "attributes": [{"key": "a", "value": '
        + value
        + "}]}]}]}]}"
    )  # noqa: E501
    response = send(key, body.encode(), content_type="application/json")
    assert response.status_code == 400
    assert nothing_written()


def test_a_gzip_json_body_answers_json(key):
    body = gzip.compress(otlp_json(recorded(genai_agent, {"service.name": "weather-agent"})))
    response = send(key, body, content_type="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {}
    assert Block.objects.count() == 7


def test_ids_in_base64_as_protobufs_json_mapping_writes_them_are_taken_too(key):
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = recorded(genai_agent, {"service.name": "weather-agent"})
    body = json_format.MessageToJson(encode_spans(spans)).encode()
    assert send(key, body, content_type="application/json").status_code == 200
    hex_id = format(spans[0].context.trace_id, "032x")
    assert Trace.objects.get().metadata["otel.trace_id"] == hex_id
