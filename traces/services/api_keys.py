"""API keys: made, shown once, stored hashed, revoked."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from traces.checks import check_no_nul
from traces.errors import NotFound, ValidationFailed
from traces.models import ApiKey, Membership, Organization

KEY_PREFIX = "te_"
# Writing last_used_at on every request would make every read a write.
LAST_USED_PRECISION = timedelta(minutes=1)


@dataclass(frozen=True)
class NewApiKey:
    api_key: ApiKey
    secret: str  # the only time the key itself exists outside its owner's hands


def api_key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(
    *,
    organization: Organization,
    name: str = "",
    created_by=None,
    role: str = Membership.Role.MEMBER,
    minted_by: ApiKey | None = None,
) -> NewApiKey:
    """A new key acting with `role` (viewer, member or owner) in `organization`; made with
    the key `minted_by`, it is revoked with that key."""
    check_no_nul(name, "name")
    if role not in Membership.Role.values:
        raise ValidationFailed(
            f"a key's role is one of {', '.join(Membership.Role.values)}, not {role!r}",
            {"field": "role", "rule": "enum"},
        )
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        organization=organization,
        name=name,
        role=role,
        prefix=secret[:10],
        key_hash=api_key_hash(secret),
        created_by=created_by,
        minted_by=minted_by,
    )
    return NewApiKey(api_key=api_key, secret=secret)


def api_key_revoke(*, organization: Organization, key_id: str) -> ApiKey:
    try:
        api_key = ApiKey.objects.get(organization=organization, id=key_id)
    except ApiKey.DoesNotExist:
        raise NotFound(f"no API key {key_id!r}", {"key_id": key_id}) from None
    now = timezone.now()
    if api_key.revoked_at is None:
        api_key.revoked_at = now
        api_key.save(update_fields=["revoked_at"])
    # The keys it minted, and theirs, go with it (one query a generation).
    generation = [api_key.pk]
    while generation:
        generation = list(
            ApiKey.objects.filter(minted_by__in=generation).values_list("pk", flat=True)
        )
        ApiKey.objects.filter(pk__in=generation, revoked_at__isnull=True).update(revoked_at=now)
    return api_key


def api_key_authenticate(*, secret: str) -> ApiKey | None:
    """The live key with this secret, its last use noted; None if unknown or revoked."""
    api_key = (
        ApiKey.objects.select_related("organization")
        .filter(key_hash=api_key_hash(secret), revoked_at__isnull=True)
        .first()
    )
    if api_key is None:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_PRECISION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key
