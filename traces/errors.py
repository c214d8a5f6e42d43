"""Domain errors, each carrying spec/004's error envelope fields."""

from typing import Any


def envelope(
    code: str, http_status: int, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """spec/004's error body, the one shape of every /v1 error."""
    return {
        "error": {
            "code": code,
            "http_status": http_status,
            "message": message,
            "details": details or {},
        }
    }


class TraceStoreError(Exception):
    """A domain error: its class names its code and HTTP status once, in its header
    (`class NotFound(TraceStoreError, code="NOT_FOUND", http_status=404)`)."""

    code = "INTERNAL"
    http_status = 500

    def __init_subclass__(cls, code: str | None = None, http_status: int | None = None):
        super().__init_subclass__()
        cls.code = code or cls.code
        cls.http_status = http_status or cls.http_status

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def as_envelope(self) -> dict[str, Any]:
        return envelope(self.code, self.http_status, self.message, self.details)


class ValidationFailed(TraceStoreError, code="VALIDATION", http_status=422):
    """A value breaks a rule: `details` names the field and the rule."""


class PayloadTooLarge(TraceStoreError, code="PAYLOAD_TOO_LARGE", http_status=413):
    """A field, a file or a request over its byte limit, `details.actual_bytes` exact."""


class ParentSubtypeMismatch(TraceStoreError, code="PARENT_SUBTYPE_MISMATCH", http_status=409):
    """A block under a parent of a sub type the parent rules do not allow there."""


class DuplicateCallId(TraceStoreError, code="DUPLICATE_CALL_ID", http_status=409):
    """A second TOOL_CALL with the call id of one in the same trace."""


class DuplicateResultSeq(TraceStoreError, code="DUPLICATE_RESULT_SEQ", http_status=409):
    """A second TOOL_RESULT with the same call id and the same non-null `seq`."""


class ImmutableField(TraceStoreError, code="IMMUTABLE_FIELD", http_status=409):
    """A write to a field that never changes after the block is written."""


class NotFound(TraceStoreError, code="NOT_FOUND", http_status=404):
    """No such object, or one the actor may not know of (traces.policy: 404, not 403)."""


class Forbidden(TraceStoreError, code="FORBIDDEN", http_status=403):
    """The actor may see the object but their role does not allow the action (traces.policy)."""


class BadRequest(TraceStoreError, code="BAD_REQUEST", http_status=400):
    """Invariant Explorer's /api/v1 refusal of a request's content (its 400)."""


class Unauthorized(TraceStoreError, code="UNAUTHENTICATED", http_status=401):
    """Invariant Explorer's /api/v1 answer for a missing key and for someone else's private
    object (its clients expect 401 where traces.policy's routes answer 404 or 403)."""


class ImportFailed(TraceStoreError, code="VALIDATION", http_status=422):
    """An upload with problems: nothing was written; `problems` lists every one."""

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        count = len(problems)
        first = problems[0]["message"] if problems else "no problem recorded"
        summary = f"{count} problem{'s' if count != 1 else ''} found; nothing was written"
        super().__init__(f"{summary}. First: {first}", {"problems": problems})
        self.problems = problems


class DatabaseBusy(TraceStoreError, code="BUSY", http_status=503):
    """SQLite: another write held the database's lock past the busy timeout."""


RETRY_AFTER_SECONDS = 5


def as_database_busy(exc: BaseException) -> DatabaseBusy | None:
    """SQLite's "database is locked" as a 503 to retry, never a 500."""
    from django.db import OperationalError

    if isinstance(exc, OperationalError) and "database is locked" in str(exc):
        return DatabaseBusy(
            "the database is busy with another write (a large import?); "
            f"try again in {RETRY_AFTER_SECONDS} seconds",
            {"retry_after_seconds": RETRY_AFTER_SECONDS},
        )
    return None


def upload_too_large(*, actual_bytes: int, limit_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the upload of {actual_bytes} bytes exceeds the {limit_bytes}-byte limit "
        "(UPLOAD_MAX_BYTES); upload the files in several parts",
        {"field": "files", "rule": "max_bytes", "limit_bytes": limit_bytes,
         "actual_bytes": actual_bytes},
    )  # fmt: skip


def as_upload_refusal(exc: BaseException) -> PayloadTooLarge | None:
    """Django's refusals while it reads a multipart body, as 413s that say what to do."""
    from django.conf import settings
    from django.core.exceptions import RequestDataTooBig, TooManyFilesSent

    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return PayloadTooLarge(
            f"more than {limit} files in one upload (UPLOAD_MAX_FILES); put the traces in "
            "fewer files (a JSON Lines file holds any number of traces) or upload them in "
            "several parts",
            {"field": "files", "rule": "max_files", "limit_files": limit},
        )
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return PayloadTooLarge(
            f"the request body (files aside) exceeds the {limit}-byte limit "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE)",
            {"field": "body", "rule": "max_bytes", "limit_bytes": limit},
        )
    return None
