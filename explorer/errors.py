"""Error pages: the API's JSON envelope under /v1/, Explorer's {"detail"} under /api/v1/,
HTML elsewhere."""

import sys

from django.http import JsonResponse
from django.views import defaults

from explorer.busy import busy_response
from traces.api.errors import api_not_found, api_server_error, is_api_path


def not_found(request, exception=None):
    if request.path.startswith("/api/v1/"):  # Invariant Explorer's shape (traces/invariant)
        return JsonResponse({"detail": "Not Found"}, status=404)
    if is_api_path(request):
        return api_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def server_error(request):
    # Django calls this inside its `except`: a busy database outside a view (a session
    # saved by a middleware...) is a 503 to retry as well.
    busy = busy_response(request, sys.exc_info()[1])
    if busy is not None:
        return busy
    if is_api_path(request):
        return api_server_error(request)
    return defaults.server_error(request)
