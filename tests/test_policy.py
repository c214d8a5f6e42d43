"""traces.policy: who may do what to which object, and what each actor may see."""

import pytest
from django.contrib.auth.models import AnonymousUser, User

from tests.conftest import user_in
from traces.errors import Forbidden, NotFound
from traces.models import Block, Dataset, Membership, Trace
from traces.policy import (
    Action,
    Actor,
    allows,
    datasets_readable,
    datasets_where,
    organization_readable,
    organizations_where,
    require,
)
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(org):
    return org


@pytest.fixture
def rival(rival_org):
    return rival_org


@pytest.fixture
def private(acme):
    return Dataset.objects.create(organization=acme, name="private")


@pytest.fixture
def public(rival):
    return Dataset.objects.create(organization=rival, name="public", is_public=True)


def person(org, role, name=None):
    return Actor(user=user_in(org, name or role, role))


def key(org, role):
    return Actor(api_key=api_key_create(organization=org, role=role).api_key)


@pytest.mark.parametrize(
    "role, allowed",
    [
        ("viewer", {Action.READ}),
        ("member", {Action.READ, Action.WRITE}),
        ("owner", {Action.READ, Action.WRITE, Action.MANAGE}),
    ],
)
@pytest.mark.parametrize("make", [person, key], ids=["session", "key"])
def test_each_role_does_what_it_may_in_its_organization(make, role, allowed, acme, private):
    actor = make(acme, role)
    trace = Trace.objects.create(organization=acme, dataset=private)
    for obj in (acme, private, trace):
        assert {a for a in Action if allows(actor, a, obj)} == allowed, obj
        for action in set(Action) - allowed - {Action.ADMIN}:
            with pytest.raises(Forbidden) as refused:
                require(actor, action, obj)
            assert refused.value.http_status == 403 and refused.value.code == "FORBIDDEN"
            assert refused.value.details == {"action": action.value, "role": role}


def test_anything_of_another_organization_is_not_found(acme, private, rival):
    outsider = person(rival, "owner")
    trace = Trace.objects.create(organization=acme, dataset=private)
    for obj, message in (
        (private, f"no dataset {private.pk!r}"),
        (trace, f"no trace {trace.pk!r}"),
        (acme, "no organization 'acme'"),
    ):
        for action in (Action.READ, Action.WRITE, Action.MANAGE):
            assert not allows(outsider, action, obj)
            with pytest.raises(NotFound) as refused:
                require(outsider, action, obj)
            assert refused.value.message == message


def test_a_public_dataset_is_readable_by_anyone_and_writable_by_no_outsider(public, acme):
    trace = Trace.objects.create(organization=public.organization, dataset=public)
    block = Block(trace=trace)
    for actor in (Actor(user=AnonymousUser()), Actor(), person(acme, "owner"), key(acme, "owner")):
        for obj in (public, trace, block):
            assert allows(actor, Action.READ, obj)
            for action in (Action.WRITE, Action.MANAGE):
                with pytest.raises(NotFound):
                    require(actor, action, obj)


def test_a_trace_outside_any_dataset_is_never_public(acme):
    trace = Trace.objects.create(organization=acme)
    assert not allows(Actor(), Action.READ, trace)
    assert allows(person(acme, "viewer"), Action.READ, trace)


def test_the_admin_is_for_active_superusers_only(acme):
    owner = person(acme, "owner")
    assert not allows(owner, Action.ADMIN)
    with pytest.raises(Forbidden):
        require(owner, Action.ADMIN)
    staff = User.objects.create(username="staff", is_staff=True)
    assert not allows(Actor(user=staff), Action.ADMIN)
    root = User.objects.create(username="root", is_staff=True, is_superuser=True)
    assert allows(Actor(user=root), Action.ADMIN)
    root.is_active = False
    assert not allows(Actor(user=root), Action.ADMIN)
    assert not allows(key(acme, "owner"), Action.ADMIN)


def test_what_an_actor_sees_and_changes(acme, rival, private, public):
    mine = Dataset.objects.create(organization=rival, name="rival-private")
    viewer = person(acme, "viewer")
    Membership.objects.create(user=viewer.user, organization=rival, role="member")
    assert set(datasets_readable(viewer)) == {private, public, mine}
    assert set(datasets_readable(Actor())) == {public}
    assert set(datasets_readable(key(acme, "viewer"))) == {private, public}
    assert list(organizations_where(viewer, Action.WRITE)) == [rival]
    assert list(organizations_where(viewer, Action.READ)) == [acme, rival]
    assert set(datasets_where(viewer, Action.WRITE)) == {public, mine}
    assert list(organizations_where(Actor(), Action.READ)) == []


def test_an_organization_is_known_to_its_people_and_by_its_public_datasets(acme, rival, public):
    stranger = person(None, "none", "stranger")
    assert organization_readable(stranger, "rival") == rival  # it has a public dataset
    assert organization_readable(person(acme, "viewer"), "acme") == acme
    for slug in ("acme", "nope"):
        with pytest.raises(NotFound) as refused:
            organization_readable(stranger, slug)
        assert refused.value.details == {"org": slug}


def test_roles_are_read_once_per_actor(acme, django_assert_num_queries):
    actor = person(acme, "member")
    with django_assert_num_queries(1):
        for _ in range(3):
            assert actor.role_in(acme.pk) == "member"
