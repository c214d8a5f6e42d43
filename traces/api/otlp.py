"""The OTLP/HTTP trace receiver, POST /otlp/v1/traces, so that an agent instrumented with
OpenTelemetry sends its spans here with the stock exporter and no code change
(OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8000/otlp).

As the OTLP specification says: a protobuf or JSON ExportTraceServiceRequest, gzip (or
deflate) or not; 200 with an ExportTraceServiceResponse in the request's encoding, whose
partial_success counts the spans refused; an error is a google.rpc.Status in that
encoding (400 unreadable, 401 no or unknown key, 403 a role that may not write, 413 too
large, 415 neither protobuf nor JSON, 503 busy: retry). The key's organization owns what
arrives; traces.policy decides whether its role may write there.
"""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from traces.errors import RETRY_AFTER_SECONDS, Forbidden, as_database_busy
from traces.otel.decode import (
    JSON,
    PROTOBUF,
    BadRequest,
    TooLarge,
    UnsupportedMedia,
    decode_body,
)
from traces.otel.service import otel_spans_ingest
from traces.policy import Action, Actor, require
from traces.services.api_keys import api_key_authenticate

GRPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    503: code_pb2.UNAVAILABLE,
}
ERRORS_SHOWN = 10  # of the refused spans' reasons, in partial_success.error_message


def _encoded(message, media: str, status: int) -> HttpResponse:
    if media == JSON:
        body = json_format.MessageToJson(message, indent=None).encode()
    else:
        body = message.SerializeToString()
    return HttpResponse(body, status=status, content_type=media)


def _error(status: int, message: str, media: str) -> HttpResponse:
    response = _encoded(status_pb2.Status(code=GRPC_CODES[status], message=message), media, status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="otlp"'
    if status == 503:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _answer_media(request: HttpRequest) -> str:
    """JSON for a JSON request, protobuf for any other (the exporters' default)."""
    content_type = request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    return JSON if content_type == JSON else PROTOBUF


def _key_of(request: HttpRequest):
    scheme, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    return api_key_authenticate(secret=secret.strip())


def _read_body(request: HttpRequest, limit: int) -> bytes:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise TooLarge(f"the request body of {length} bytes exceeds the {limit}-byte limit")
    body = request.read(limit + 1)  # a body sent without a length is cut here too
    if len(body) > limit:
        raise TooLarge(f"the request body exceeds the {limit}-byte limit")
    return body


@csrf_exempt
def otlp_traces(request: HttpRequest) -> HttpResponse:
    media = _answer_media(request)
    try:
        return _receive(request, media)
    except Exception as exc:
        # SQLite's lock held by another write (noting the key's use is a write too): 503,
        # which exporters retry, in the OTLP error's encoding.
        busy = as_database_busy(exc)
        if busy is None:
            raise
        return _error(503, busy.message, media)


def _receive(request: HttpRequest, media: str) -> HttpResponse:
    if request.method != "POST":
        response = _error(405, "only POST: an OTLP ExportTraceServiceRequest", media)
        response["Allow"] = "POST"
        return response
    api_key = _key_of(request)
    if api_key is None:
        return _error(401, "an API key is needed: Authorization: Bearer <key>", media)
    try:
        require(Actor(api_key=api_key), Action.WRITE, api_key.organization)
    except Forbidden as exc:
        return _error(403, exc.message, media)
    limit = settings.OTLP_MAX_BYTES
    try:
        body = _read_body(request, limit)
        media, spans = decode_body(
            body,
            content_type=request.META.get("CONTENT_TYPE", ""),
            content_encoding=request.META.get("HTTP_CONTENT_ENCODING", ""),
            limit=limit,
        )
    except TooLarge as exc:
        return _error(413, str(exc), media)
    except UnsupportedMedia as exc:
        return _error(415, str(exc), media)
    except BadRequest as exc:
        return _error(400, str(exc), media)
    result = otel_spans_ingest(organization=api_key.organization, spans=spans)
    answer = ExportTraceServiceResponse()
    if result.rejected:
        answer.partial_success.rejected_spans = result.rejected
        shown = result.errors[:ERRORS_SHOWN]
        more = len(result.errors) - len(shown)
        answer.partial_success.error_message = "; ".join(shown) + (
            f"; and {more} more" if more else ""
        )
    return _encoded(answer, media, 200)
