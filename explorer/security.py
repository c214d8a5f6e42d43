"""Security headers: a Content-Security-Policy that forbids inline script everywhere
trace content can appear."""

from django.conf import settings

STRICT = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
# The API docs page is drf-spectacular's, with an inline bootstrap script; it shows no
# trace content.
DOCS = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class SecurityHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = DOCS if request.path == "/v1/docs" else STRICT
        response.setdefault("Content-Security-Policy", policy)
        response.setdefault("X-Content-Type-Options", "nosniff")
        response.setdefault("Referrer-Policy", "same-origin")
        response.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        if not settings.DEBUG:
            response.setdefault("X-Frame-Options", "DENY")
        return response
