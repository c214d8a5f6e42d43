"""An OTLP/HTTP export request (protobuf or JSON, gzip or not) decoded with the official
`opentelemetry-proto` classes into plain dicts, one per span: what traces.otel.mapping
reads and what OtelSpan keeps. Nothing here touches the database."""

import base64
import binascii
import math
import zlib
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)
ENCODINGS = ("", "identity", "gzip", "deflate")


class BadRequest(Exception):
    """The body cannot be read: 400 with the reason."""


class TooLarge(Exception):
    """The body, or what it inflates to, is over the limit: 413."""


class UnsupportedMedia(Exception):
    """Neither protobuf nor JSON, or an encoding other than gzip or deflate: 415."""


def media_type(content_type: str) -> str:
    """`application/json; charset=utf-8` -> `application/json`; 415 for anything but the
    two OTLP/HTTP bodies."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in CONTENT_TYPES:
        raise UnsupportedMedia(
            f"Content-Type must be {PROTOBUF} or {JSON}, not {content_type or 'none'!r}"
        )
    return media


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """The body as sent, decompressed; never more than `limit` bytes of it are made (a
    small gzip body may inflate to gigabytes)."""
    encoding = encoding.strip().lower()
    if encoding not in ENCODINGS:
        raise UnsupportedMedia(f"Content-Encoding must be gzip or deflate, not {encoding!r}")
    if encoding in ("", "identity"):
        return body
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"the body is not valid {encoding}: {exc}") from None
    if len(out) > limit:
        raise TooLarge(f"the body inflates to more than the {limit}-byte limit")
    if not inflater.eof:
        raise BadRequest(f"the {encoding} body ends before its end")
    return out


_IDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _id_to_base64(value: Any, size: int) -> Any:
    """OTLP/JSON writes ids in hex (the spec's one departure from protobuf's JSON
    mapping, which writes bytes in base64). Hex of the id's size is taken as hex; anything
    else is left to the protobuf parser (base64, as google.protobuf.json_format writes)."""
    if isinstance(value, str) and len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            return value
    return value


def _items(value: Any, key: str) -> list[dict[str, Any]]:
    """value[key] if value is an object and that is an array: its objects."""
    items = value.get(key) if isinstance(value, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _hex_ids(data: Any) -> None:
    for resource in _items(data, "resourceSpans"):
        for scope in _items(resource, "scopeSpans"):
            for span in _items(scope, "spans"):
                for key, size in _IDS.items():
                    if key in span:
                        span[key] = _id_to_base64(span[key], size)
                for link in _items(span, "links"):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = _id_to_base64(link[key], _IDS[key])


def parse_request(body: bytes, media: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(f"the body is not an OTLP ExportTraceServiceRequest: {exc}") from None
        return request
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    _hex_ids(data)
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, TypeError, ValueError) as exc:
        raise BadRequest(f"the body is not an OTLP ExportTraceServiceRequest: {exc}") from None
    return request


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as the JSON value it stands for (bytes as base64)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    found = getattr(value, kind)
    if kind == "double_value" and not math.isfinite(found):
        return str(found)  # JSON has no NaN or infinity: kept as their names
    return found


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: any_value(pair.value) for pair in pairs}


@dataclass
class SpanIn:
    """One span of the request with its resource's attributes, or why it is refused."""

    resource: dict[str, Any]
    span: dict[str, Any] | None
    problem: str = ""


def spans_of(request: ExportTraceServiceRequest) -> list[SpanIn]:
    out: list[SpanIn] = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    out.append(
                        SpanIn(
                            resource, None, "a span needs a 16-byte trace id and an 8-byte span id"
                        )
                    )
                    continue
                if not any(span.trace_id) or not any(span.span_id):
                    out.append(SpanIn(resource, None, "an all-zero trace id or span id is invalid"))
                    continue
                out.append(SpanIn(resource, span_dict(span, scope)))
    return out


def span_dict(span: Any, scope: str = "") -> dict[str, Any]:
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": span.name,
        "kind": span.kind,
        "scope": scope,
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
        "attributes": attributes(span.attributes),
        "events": [
            {"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes(e.attributes)}
            for e in span.events
        ],
        "status": {"code": span.status.code, "message": span.status.message},
    }


def decode_body(
    body: bytes, *, content_type: str, content_encoding: str, limit: int
) -> tuple[str, list[SpanIn]]:
    """The request's media type and its spans; BadRequest, TooLarge or UnsupportedMedia."""
    media = media_type(content_type)
    request = parse_request(inflate(body, content_encoding, limit), media)
    return media, spans_of(request)
