"""Uploads outside /v1/ (the upload page, the admin's): their limits answered as a page.

The CSRF check reads a POST's form before any view runs, so a body with too many files
failed there with Django's bare 400. This middleware reads a multipart body first, where
its refusal can be answered: 413 with the upload page and its message (elsewhere, the
admin's upload, a page with the message). A body over UPLOAD_MAX_BYTES is refused from
its Content-Length, unread. /v1/ refuses the same in its views, in spec/004's envelope.

Nobody signed in may post a multipart body to any page but a small one to sign in (only
signed-in users write): such a request is sent to the sign-in page before a byte of its
body is read, so that an anonymous client cannot make the server read and spool a
large upload (/v1/ refuses it 401 before DRF parses the body).
"""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.shortcuts import render
from django.urls import Resolver404, resolve

from explorer.upload_files import discard_uploads
from explorer.views.upload import upload_refused
from traces.api.errors import is_api_path
from traces.errors import PayloadTooLarge, as_upload_refusal, upload_too_large


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def upload_refusal(request) -> PayloadTooLarge | None:
    length = _content_length(request)
    if length > settings.UPLOAD_MAX_BYTES:
        return upload_too_large(actual_bytes=length, limit_bytes=settings.UPLOAD_MAX_BYTES)
    try:
        request.POST  # noqa: B018  (reads the body: its errors are raised here)
    except (TooManyFilesSent, RequestDataTooBig) as exc:
        discard_uploads(request)
        return as_upload_refusal(exc)
    return None


def _refused_page(request, error: PayloadTooLarge):
    try:
        url_name = resolve(request.path_info).url_name
    except Resolver404:
        url_name = None
    if url_name == "upload" and request.user.is_authenticated:
        return upload_refused(request, error.message)
    context = {"message": error.message, "back": request.path}
    return render(request, "413.html", context, status=error.http_status)


# A sign-in form is a few hundred bytes, whatever its encoding.
SIGN_IN_MAX_BYTES = 64 * 1024


def _small_sign_in(request) -> bool:
    """A sign-in (the login page's or the admin's) small enough to be one."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return match.view_name in ("login", "admin:login") and (
        0 < _content_length(request) <= SIGN_IN_MAX_BYTES
    )


class UploadLimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (
            request.method == "POST"
            and request.content_type == "multipart/form-data"
            and not is_api_path(request)
        ):
            if not request.user.is_authenticated and not _small_sign_in(request):
                return redirect_to_login(request.get_full_path())
            error = upload_refusal(request)
            if error is not None:
                return _refused_page(request, error)
        return self.get_response(request)
