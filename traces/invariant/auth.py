"""Who calls Invariant Explorer's /api/v1: a bearer API key (a bad one is 401, never
anonymous), else the browser session, else nobody; in test mode (settings.DEV_MODE) one
fixed development user, whatever key is sent (spec invariant-explorer-api.md, Test mode)."""

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from rest_framework.authentication import BaseAuthentication

from traces.api.auth import BearerKeyAuthentication
from traces.errors import Forbidden
from traces.models import Membership
from traces.services.organizations import organization_get_or_create

DEVELOPER = "developer"
SECOND_USER = "user1"


def dev_user_get_or_create(*, username: str):
    """The test mode's user, owner of the organization of the same name (its namespace)."""
    User = get_user_model()
    try:
        with transaction.atomic():
            user, _ = User.objects.get_or_create(username=username)
    except IntegrityError:  # made by a concurrent first request
        user = User.objects.get(username=username)
    organization = organization_get_or_create(slug=username)
    try:
        with transaction.atomic():
            Membership.objects.get_or_create(
                user=user, organization=organization, defaults={"role": Membership.Role.OWNER}
            )
    except IntegrityError:
        pass
    return user


def dev_username(referer: str) -> str | None:
    """Whom a test-mode request acts as: `user1` for a `noauth=user1` referer, normal
    authentication (None) for any other `noauth` referer, else the developer."""
    if "noauth=" not in referer:
        return DEVELOPER
    return SECOND_USER if "noauth=user1" in referer else None


def dev_same_site_check(request) -> None:
    """Test mode acts as the developer with no key: a page of another site could post a
    form here in the developer's browser. An unsafe request whose Origin (or, without
    one, Referer) names another host is refused; one with neither (the SDK, curl) is not
    a browser's."""
    if request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
        return
    source = request.META.get("HTTP_ORIGIN") or request.META.get("HTTP_REFERER")
    if source is None:
        return
    if urlsplit(source).netloc != request.get_host():
        raise Forbidden(
            "Forbidden: in test mode (DEV_MODE) a request that changes something must come "
            "from this site's own pages"
        )


class ExplorerAuthentication(BaseAuthentication):
    def authenticate(self, request):
        if settings.DEV_MODE:
            dev_same_site_check(request)
            username = dev_username(request.META.get("HTTP_REFERER", ""))
            if username is not None:
                return dev_user_get_or_create(username=username), None
        return BearerKeyAuthentication().authenticate(request)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'
