"""Who is calling: a bearer API key (one organization, one role), a browser session (CSRF
enforced), or nobody (reads only). What they may do is traces.policy's answer."""

from dataclasses import dataclass

from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import SAFE_METHODS, BasePermission

from traces.models import ApiKey
from traces.policy import Actor
from traces.services.api_keys import api_key_authenticate


@dataclass
class KeyPrincipal:
    """request.user for a call made with an API key."""

    api_key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_active: bool = True
    is_staff: bool = False

    @property
    def pk(self) -> None:  # keys are not users
        return None


class BearerKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise AuthenticationFailed("the Authorization header must be 'Bearer <key>'")
        api_key = api_key_authenticate(secret=secret.strip())
        if api_key is None:
            raise AuthenticationFailed("the API key is unknown or revoked")
        return KeyPrincipal(api_key), api_key

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class CsrfSessionAuthentication(SessionAuthentication):
    """Session cookies work too, with DRF's CSRF check on unsafe methods."""


class SignedInToWrite(BasePermission):
    """Reads are open to anyone, signed in or not: traces.policy answers them (a public
    dataset is readable by anyone; anything else is 404 as for an outsider). A write
    without a key or a session is 401, whatever it asks."""

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated)


def actor_of(principal) -> Actor:
    """The policy's actor for request.user: a key's principal, or a session's user."""
    if isinstance(principal, KeyPrincipal):
        return Actor(api_key=principal.api_key)
    return Actor(user=principal)
