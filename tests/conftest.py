"""The one set of fixtures for organizations, people and their roles, and API keys.

Every test that needs an organization, a user with a role, a signed-in client or a key takes
it from here (or makes one more with `organization`, `user_in`, `client_for`, `key_client`):

- organizations: `org` (slug `acme`) and `rival_org` (slug `rival`, another tenant);
- people of `org`, one per role: `viewer`, `member`, `owner`; and `outsider`, a member of
  `rival_org` only. Each has the password PASSWORD (the browser tests sign in with it);
- signed-in page clients: `viewer_client`, `member_client`, `owner_client`, `outsider_client`;
- API clients with a key of `org`: `api` (member key, its secret is `key`), `viewer_api`,
  `owner_api`; `other_api` holds a key of `rival_org`.

The names of the end of this file are the names tests used before there was one set; each is
the same object as its canonical fixture, so tests written against them keep running.
"""

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from traces.models import Membership, Organization
from traces.services.api_keys import api_key_create
from traces.services.organizations import organization_get_or_create

# `runs` and `stored_tau2`: a dataset of real runs, imported once for a module;
# tests/db_template.py: the SQLite test database migrated once, then copied;
# tests/live_server.py: the live server without Nagle's 40 ms a response.
pytest_plugins = ["tests.real_runs", "tests.db_template", "tests.live_server"]

FIXTURES = Path(__file__).parent / "fixtures"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PASSWORD = "correct horse battery staple"


# --- how the suite runs ----------------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked `postgres` is skipped on any other database."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason=f"PostgreSQL only (this run: {connection.vendor})")
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def fast_password_hashing() -> None:
    """Tests make hundreds of users: hashing each password with production's PBKDF2 (a
    million rounds) cost most of a test's setup. No test checks the hash's strength."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True, scope="session")
def static_files_indexed_once() -> Iterator[None]:
    """WhiteNoise indexes every file under STATIC_ROOT when its middleware starts, and each
    test client starts the middleware anew: about 20 ms a client, a third of the quick
    suite's time. No test changes the static files, so a directory is indexed once for each
    set of the settings that shape its index (a test that overrides one gets a new index)."""
    from django.conf import settings
    from whitenoise.base import WhiteNoise

    scan = WhiteNoise.update_files_dictionary
    indexed: dict[tuple, dict] = {}

    def update_files_dictionary(self, root: str, prefix: str) -> None:
        shaping = [n for n in dir(settings) if n.startswith(("WHITENOISE_", "STATIC"))]
        key = (root, prefix, settings.DEBUG, *((n, repr(getattr(settings, n))) for n in shaping))
        if key not in indexed:
            before = dict(self.files)
            scan(self, root, prefix)
            indexed[key] = {u: f for u, f in self.files.items() if before.get(u) is not f}
        self.files.update(indexed[key])

    WhiteNoise.update_files_dictionary = update_files_dictionary
    yield
    WhiteNoise.update_files_dictionary = scan


@contextmanager
def written_for_the_module(django_db_blocker) -> Iterator[None]:
    """For a module-scoped fixture whose data its tests only read: what the block writes
    is kept across the module's tests (each runs in a transaction rolled back at its end,
    so none sees another's writes) and flushed when the module ends."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        try:
            yield
        finally:
            call_command("flush", interactive=False, verbosity=0)


# --- the one way to make organizations, people, clients and keys ---------------------------


def organization(slug: str) -> Organization:
    """The organization `slug`, made on first use (as the import command does)."""
    return organization_get_or_create(slug=slug)


def user_in(org: Organization | None, username: str, role: str = "member", **fields):
    """A user with PASSWORD, with `role` in `org` (no membership at all when `org` is None).
    `fields` go to create_user (is_staff=True, is_superuser=True...)."""
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **fields)
    if org is not None:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


make_user = user_in  # the name the trace page tests import


def client_for(user) -> Client:
    """A page client signed in as `user`."""
    client = Client()
    client.force_login(user)
    return client


def key_client(org: Organization, role: str = "member", name: str | None = None) -> APIClient:
    """An API client holding a new key of `org` with `role`."""
    secret = api_key_create(organization=org, name=name or role, role=role).secret
    return bearer(secret)


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def as_file(data: bytes | str, name: str = "upload.json") -> tuple[str, io.BytesIO]:
    if isinstance(data, str):
        data = data.encode()
    return name, io.BytesIO(data)


# --- organizations --------------------------------------------------------------------------


@pytest.fixture
def org(db) -> Organization:
    return organization("acme")


@pytest.fixture
def rival_org(db) -> Organization:
    """Another tenant: what is its and not public answers 404 to `org`'s people."""
    return organization("rival")


# --- people of `org` by role, and one outsider ----------------------------------------------


@pytest.fixture
def viewer(org):
    return user_in(org, "vera", "viewer")


@pytest.fixture
def member(org):
    """alice: the browser tests sign in with her name and PASSWORD."""
    return user_in(org, "alice", "member")


@pytest.fixture
def owner(org):
    return user_in(org, "otto", "owner")


@pytest.fixture
def outsider(rival_org):
    """Signed in somewhere else: a member of `rival_org`, of no role in `org`."""
    return user_in(rival_org, "oscar", "member")


@pytest.fixture
def viewer_client(viewer) -> Client:
    return client_for(viewer)


@pytest.fixture
def member_client(member) -> Client:
    return client_for(member)


@pytest.fixture
def owner_client(owner) -> Client:
    return client_for(owner)


@pytest.fixture
def outsider_client(outsider) -> Client:
    return client_for(outsider)


# --- API keys ----------------------------------------------------------------------------------


@pytest.fixture
def key(org) -> str:
    """The secret of a member key of `org`."""
    return api_key_create(organization=org, name="tests").secret


@pytest.fixture
def api(key) -> APIClient:
    """A member key of `org`: reads and writes, but does not manage datasets."""
    return bearer(key)


@pytest.fixture
def viewer_api(org) -> APIClient:
    return key_client(org, "viewer")


@pytest.fixture
def owner_api(org) -> APIClient:
    return key_client(org, "owner")


@pytest.fixture
def other_api(rival_org) -> APIClient:
    """A member key of `rival_org`."""
    return key_client(rival_org, "member")


# --- the names tests used before the one set (each the same object as its canonical one) ---


@pytest.fixture
def ui_org(org):
    return org


@pytest.fixture
def ui_rival(rival_org):
    return rival_org


@pytest.fixture
def ui_member(member):
    return member


@pytest.fixture
def ui_owner(owner):
    return owner


@pytest.fixture
def members_client(member_client):
    return member_client


@pytest.fixture
def viewers_client(viewer_client):
    return viewer_client


@pytest.fixture
def owners_client(owner_client):
    return owner_client


@pytest.fixture
def trace_member(member):
    return member


@pytest.fixture
def trace_client(member_client):
    return member_client


@pytest.fixture
def trace_viewer_client(viewer_client):
    return viewer_client


@pytest.fixture
def trace_outsider_client(outsider_client):
    return outsider_client


@pytest.fixture
def readers_may_stage(monkeypatch) -> None:
    """The forked part readers of an import may write their rows with SQLite, as they do
    in a process without another thread (traces/forked.py `alone`). A test runs beside
    pytest-xdist's own thread (execnet's), which calls no SQLite, so none could hold one
    of its locks at a fork."""
    from traces import forked

    monkeypatch.setattr(forked, "alone", lambda: True)
