"""Every API error as spec/004's envelope {"error": {code, http_status, message, details}}."""

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from traces.errors import (
    RETRY_AFTER_SECONDS,
    DatabaseBusy,
    TraceStoreError,
    as_database_busy,
    as_upload_refusal,
    envelope,
)

logger = logging.getLogger(__name__)

_DRF_CODES: list[tuple[type[Exception], str]] = [
    (drf.ParseError, "MALFORMED_JSON"),
    (drf.NotAuthenticated, "UNAUTHENTICATED"),
    (drf.AuthenticationFailed, "UNAUTHENTICATED"),
    (drf.NotFound, "NOT_FOUND"),
    (drf.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (drf.PermissionDenied, "FORBIDDEN"),
    (drf.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (drf.NotAcceptable, "NOT_ACCEPTABLE"),
    (drf.Throttled, "THROTTLED"),
    (drf.ValidationError, "VALIDATION"),
]


def _validation_details(detail: Any) -> dict[str, Any]:
    """Serializer errors as {"field": first field, "errors": {field: [messages]}}."""
    if isinstance(detail, dict):
        errors = {
            key: [str(m) for m in (v if isinstance(v, list) else [v])] for key, v in detail.items()
        }
        first = next(iter(errors), None)
        return {"field": first, "rule": "invalid", "errors": errors}
    return {"errors": [str(m) for m in (detail if isinstance(detail, list) else [detail])]}


def _message(detail: Any) -> str:
    if isinstance(detail, dict):
        key, value = next(iter(detail.items()), ("", ""))
        value = value[0] if isinstance(value, list) and value else value
        return f"{key}: {value}" if key else str(value)
    if isinstance(detail, list):
        return str(detail[0]) if detail else "invalid input"
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    exc = as_database_busy(exc) or as_upload_refusal(exc) or exc
    if isinstance(exc, TraceStoreError):
        response = Response(exc.as_envelope(), status=exc.http_status)
        if isinstance(exc, DatabaseBusy):
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, Http404):
        return Response(envelope("NOT_FOUND", 404, "not found"), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(envelope("FORBIDDEN", 403, str(exc) or "forbidden"), status=403)
    if isinstance(exc, SuspiciousOperation):  # e.g. more query parameters than Django takes
        return Response(envelope("BAD_REQUEST", 400, str(exc) or "bad request"), status=400)
    for exc_type, code in _DRF_CODES:
        if isinstance(exc, exc_type):
            status = 422 if code == "VALIDATION" else exc.status_code
            details = _validation_details(exc.detail) if code == "VALIDATION" else {}
            response = Response(
                envelope(code, status, _message(exc.detail), details), status=status
            )
            if code == "UNAUTHENTICATED":
                response["WWW-Authenticate"] = 'Bearer realm="api"'
            return response
    logger.exception("unhandled error in the API", exc_info=exc)
    return Response(envelope("INTERNAL", 500, "internal error"), status=500)


def json_error(code: str, status: int, message: str, details: dict[str, Any] | None = None):
    return JsonResponse(envelope(code, status, message, details), status=status)


def is_api_path(request: HttpRequest) -> bool:
    """/v1/ and Invariant Explorer's /api/v1/ (traces/invariant): answered as code reads."""
    return request.path.startswith(("/v1/", "/api/v1/"))


def api_not_found(request: HttpRequest, exception: Exception | None = None):
    return json_error("NOT_FOUND", 404, f"no endpoint at {request.path}")


def api_server_error(request: HttpRequest):
    return json_error("INTERNAL", 500, "internal error")
