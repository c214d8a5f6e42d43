"""Login throttling (django-axes): after LOGIN_FAILURE_LIMIT failed sign-ins for one
username from one address, that username is refused from that address, and after
LOGIN_ADDRESS_FAILURE_LIMIT failures from one address (whatever the usernames), every
sign-in from it is, for LOGIN_LOCKOUT_MINUTES. Failures are counted in the database, so
that every gunicorn worker sees the same count.

Not by username alone: then anyone could lock a user out by failing their password
(a denial of service, harden F7); the user can still sign in from their own address.
"""

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' check before every sign-in that comes with a request: the login page and the
    admin's. A call without one (the test client's login(), a management command) comes
    from no network, so there is nothing to count."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class PairThenAddressHandler(AxesDatabaseHandler):
    """Axes' database handler, counting failures by (username, address), and by address
    alone against its own higher limit. Axes locks out when `get_failures` reaches
    AXES_FAILURE_LIMIT: an address over its limit answers that limit."""

    def get_failures(self, request, credentials=None) -> int:
        from axes.models import AccessAttempt  # a model: not before the apps are loaded

        recent = AccessAttempt.objects.filter(
            ip_address=request.axes_ip_address,
            attempt_time__gte=get_cool_off_threshold(request),
        )
        username = get_client_username(request, credentials)
        pair = _failures(recent.filter(username=username))
        if _failures(recent) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return max(pair, settings.AXES_FAILURE_LIMIT)
        return pair


def _failures(attempts) -> int:
    return attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0


def client_address(request) -> str:
    """The address failures are counted for: REMOTE_ADDR, or behind LOGIN_PROXY_COUNT
    trusted reverse proxies, the address the outermost one saw (each appends it to
    X-Forwarded-For; what comes before it is the client's to write, so never trusted).
    Without this, everyone behind a proxy would share one address and one lockout."""
    count = settings.LOGIN_PROXY_COUNT
    if count:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        forwarded = [address.strip() for address in forwarded if address.strip()]
        if len(forwarded) >= count:
            return forwarded[-count]
    return request.META.get("REMOTE_ADDR", "")


def lockout_minutes() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)


def locked_out(request, original_response=None, credentials=None):
    """The sign-in page again, saying why and for how long (429, with Retry-After)."""
    minutes = lockout_minutes()
    context = {
        "form": AuthenticationForm(request),
        "locked_out": (
            f"Too many failed sign-ins for this username from this address, or from this "
            f"address. "
            f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
        ),
        "next": request.POST.get("next", ""),
    }
    response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response
