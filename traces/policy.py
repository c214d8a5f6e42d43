"""Who may do what: the one rule every way in asks (DESIGN.md, "Who may do what").

An actor is anonymous, a signed-in user (a role in each organization they belong to), or
an API key (its organization, with the role it was made with). Roles: a viewer reads; a
member also writes (traces, blocks, rewards, uploads, a dataset's description and
metadata); an owner also manages (a dataset's visibility, name and deletion, keys,
members). Labels and comments are written by members; a dataset's vocabulary of labels
grows by members, and shrinks by owners (removing a label removes every tag using it).
A public dataset, with its traces, blocks and images, is readable by anyone.

What an actor may not do answers 404 (NotFound) when the object belongs to an
organization the actor has no role in, so that nothing of it can be learned, and 403
(Forbidden) when the actor's role there is too low. The Django admin is for superusers.
"""

from enum import StrEnum
from functools import cached_property
from typing import Any

from django.db.models import QuerySet

from traces.errors import Forbidden, NotFound
from traces.models import (
    Annotation,
    ApiKey,
    Block,
    Dataset,
    Label,
    Membership,
    Organization,
    Trace,
)
from traces.selectors.prepared import Prepared

Role = Membership.Role
# Every request of a signed-in person asks (traces/selectors/prepared.py).
_ROLES: Prepared[tuple[int, str]] = Prepared(
    lambda user_id: Membership.objects.filter(user_id=user_id).values_list(
        "organization_id", "role"
    ),
    int,
)


class Action(StrEnum):
    READ = "read"
    WRITE = "write"
    MANAGE = "manage"
    ADMIN = "admin"


ALLOWED: dict[str, frozenset[Action]] = {
    Role.VIEWER: frozenset({Action.READ}),
    Role.MEMBER: frozenset({Action.READ, Action.WRITE}),
    Role.OWNER: frozenset({Action.READ, Action.WRITE, Action.MANAGE}),
}


class Actor:
    """Who asks: a signed-in user, an API key, or nobody (anonymous)."""

    def __init__(self, *, user: Any = None, api_key: ApiKey | None = None) -> None:
        self.user = user if user is not None and user.is_authenticated else None
        self.api_key = api_key

    @property
    def is_anonymous(self) -> bool:
        return self.user is None and self.api_key is None

    @property
    def is_superuser(self) -> bool:
        # Keys never: they act for one organization only.
        return self.user is not None and self.user.is_active and self.user.is_superuser

    @cached_property
    def roles(self) -> dict[int, str]:
        """Organization id -> role; one query per actor (an actor lives for one request)."""
        if self.api_key is not None:
            return {self.api_key.organization_id: self.api_key.role}
        if self.user is None:
            return {}
        return dict(_ROLES(self.user.pk))

    def role_in(self, organization_id: int) -> str | None:
        return self.roles.get(organization_id)


def _owner_of(obj: Any) -> tuple[int, bool]:
    """The organization an object belongs to, and whether anyone may read it."""
    if isinstance(obj, Organization):
        return obj.pk, False
    if isinstance(obj, Dataset):
        return obj.organization_id, obj.is_public
    if isinstance(obj, Trace):
        return obj.organization_id, obj.dataset_id is not None and obj.dataset.is_public
    if isinstance(obj, Block):
        return _owner_of(obj.trace)
    if isinstance(obj, ApiKey):
        return obj.organization_id, False
    if isinstance(obj, Label):
        return _owner_of(obj.dataset)
    if isinstance(obj, Annotation):
        return _owner_of(obj.trace)
    raise TypeError(f"no access rule for {type(obj).__name__}")


def allows(actor: Actor, action: Action, obj: Any = None) -> bool:
    """May `actor` do `action` to `obj` (an organization, dataset, trace, block, key, label
    or annotation)? A label is its dataset's, an annotation its trace's: members tag
    traces, add labels to a vocabulary and delete annotations; removing a label from a
    vocabulary (with every tag using it) is the owners' call."""
    if action is Action.ADMIN:
        return actor.is_superuser
    organization_id, public = _owner_of(obj)
    role = actor.role_in(organization_id)
    if role is None:
        return action is Action.READ and public
    return action in ALLOWED[role]


_KINDS = {
    Dataset: "dataset",
    Trace: "trace",
    Block: "block",
    ApiKey: "API key",
    Label: "label",
    Annotation: "annotation",
}
_WHO = {Action.WRITE: "owners and members", Action.MANAGE: "owners"}
_VERBS = {Action.WRITE: "change", Action.MANAGE: "manage"}


def _not_found(obj: Any) -> NotFound:
    """The error a missing object of this kind answers, word for word."""
    if isinstance(obj, Organization):
        return NotFound(f"no organization {obj.slug!r}", {"org": obj.slug})
    key = "key_id" if isinstance(obj, ApiKey) else f"{_KINDS[type(obj)]}_id"
    return NotFound(f"no {_KINDS[type(obj)]} {obj.pk!r}", {key: obj.pk})


def require(actor: Actor, action: Action, obj: Any = None) -> None:
    """Return if `allows`; else raise NotFound (not in the actor's organizations) or
    Forbidden (the actor's role there is too low)."""
    if allows(actor, action, obj):
        return
    if action is Action.ADMIN:
        raise Forbidden("only superusers may use the admin", {"action": action.value})
    organization_id, _ = _owner_of(obj)
    role = actor.role_in(organization_id)
    if role is None:
        raise _not_found(obj)
    kind = _KINDS.get(type(obj), "organization")
    raise Forbidden(
        f"only {_WHO[action]} may {_VERBS[action]} this {kind}; your role is {role}",
        {"action": action.value, "role": role},
    )


# --- What an actor may see or change, as querysets --------------------------------------


def _organization_ids_where(actor: Actor, action: Action) -> list[int]:
    return [org for org, role in actor.roles.items() if action in ALLOWED[role]]


def allowed_somewhere(actor: Actor, action: Action) -> bool:
    """Whether the actor may do `action` in at least one organization (what the menu
    offers: no Upload for who may upload nowhere)."""
    return bool(_organization_ids_where(actor, action))


def organizations_where(actor: Actor, action: Action) -> QuerySet[Organization]:
    """The organizations in which the actor may do `action`, by slug."""
    ids = _organization_ids_where(actor, action)
    return Organization.objects.filter(pk__in=ids).order_by("slug")


def datasets_readable(actor: Actor) -> QuerySet[Dataset]:
    """Public datasets and every dataset of the actor's organizations."""
    public = Dataset.objects.filter(is_public=True)
    if not actor.roles:
        return public
    return public | Dataset.objects.filter(organization_id__in=list(actor.roles))


def datasets_where(actor: Actor, action: Action) -> QuerySet[Dataset]:
    if action is Action.READ:
        return datasets_readable(actor)
    return Dataset.objects.filter(organization__in=organizations_where(actor, action))


def only_public_in(actor: Actor, organization: Organization) -> bool:
    """True when the actor sees an organization's public datasets only (no role there)."""
    return actor.role_in(organization.pk) is None


def organization_readable(actor: Actor, slug: str) -> Organization:
    """The organization with this slug, if the actor has a role there or it has a public
    dataset; else NotFound, the same as for a slug that does not exist."""
    if actor.api_key is not None and actor.api_key.organization.slug == slug:
        return actor.api_key.organization  # the common case of the API, with no query
    found = Organization.objects.filter(slug=slug).first()
    if found is not None and (
        actor.role_in(found.pk) is not None
        or Dataset.objects.filter(organization=found, is_public=True).exists()
    ):
        return found
    raise NotFound(f"no organization {slug!r}", {"org": slug})
