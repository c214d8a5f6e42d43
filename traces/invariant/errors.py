"""Every /api/v1 error in Explorer's shape, {"detail": ...} (not spec/004's envelope): a
refused value 400, someone else's private object 401, a request that does not match a
declared parameter 422 with a list."""

import logging
from typing import Any

from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from traces.errors import (
    RETRY_AFTER_SECONDS,
    DatabaseBusy,
    ImportFailed,
    TraceStoreError,
    ValidationFailed,
    as_database_busy,
    as_upload_refusal,
)

logger = logging.getLogger(__name__)


def _list(detail: Any) -> list:
    if isinstance(detail, dict):
        return [{"loc": [key], "msg": str(v)} for key, value in detail.items() for v in value]
    return [{"msg": str(m)} for m in (detail if isinstance(detail, list) else [detail])]


def explorer_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    exc = as_database_busy(exc) or as_upload_refusal(exc) or exc
    if isinstance(exc, ValidationFailed | ImportFailed):
        return Response({"detail": exc.message}, status=400)
    if isinstance(exc, TraceStoreError):
        response = Response({"detail": exc.message}, status=exc.http_status)
        if isinstance(exc, DatabaseBusy):
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, Http404):
        return Response({"detail": "Not found"}, status=404)
    if isinstance(exc, SuspiciousOperation | drf.ParseError):
        return Response({"detail": str(exc) or "Bad request"}, status=400)
    if isinstance(exc, drf.ValidationError):
        return Response({"detail": _list(exc.detail)}, status=422)
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        response = Response({"detail": str(exc.detail)}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    if isinstance(exc, drf.APIException):
        return Response({"detail": str(exc.detail)}, status=exc.status_code)
    logger.exception("unhandled error in Explorer's API", exc_info=exc)
    return Response({"detail": "Internal server error"}, status=500)
