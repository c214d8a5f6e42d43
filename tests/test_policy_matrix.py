"""Who may do what, walked over every route (DESIGN.md, "Who may do what"; traces.policy).

Every unsafe route (each /v1 write, each page or fragment POST, uploads) and every read
route, for every kind of caller: nobody signed in, a member of another organization, a
viewer, a member and an owner, each by browser session and by API key, on a private and a
public dataset. A refusal must change nothing in the database; an allowed write must
change it. The routes come from the URL resolver: a new route the matrix does not know
fails `test_the_matrix_knows_every_route`.
"""

import base64
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from demo.generator import tiny_png
from tests.conftest import organization, user_in, written_for_the_module
from tests.otel.agent import genai_agent, recorded, request_bytes
from traces.models import (
    Annotation,
    ApiKey,
    Block,
    Dataset,
    Image,
    Label,
    Membership,
    Organization,
    Trace,
)
from traces.services.api_keys import api_key_create
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db

# The rule, written here on its own so that the policy module is checked, not copied.
MAY = {
    "viewer": {"read"},
    "member": {"read", "write"},
    "owner": {"read", "write", "manage"},
}
SIGN_IN = "sign-in page"
UNSAFE = ("post", "put", "patch", "delete")
# Routes outside the matrix, each with the reason.
NOT_IN_MATRIX = {
    "login": "signing in reads and writes no data (throttling: test_login_throttle.py)",
    "logout": "signing out reads and writes no data",
    "api-schema": "the API's description, no data",
    "api-docs": "the API's documentation page, no data",
    "healthz": "the health check answers whether the database does, no data",
    None: "the favicon redirect",
}

PNG_URL = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
EVENTS = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a gradient"},
    {"role": "assistant", "content": "A gradient."},
]


# --- Who asks ------------------------------------------------------------------------


@dataclass(frozen=True)
class Who:
    name: str
    way: str  # "none", "session" or "key"
    role: str | None  # None: no role in the dataset's organization

    def __str__(self) -> str:
        return self.name


WHO = [
    Who("anonymous", "none", None),
    *(Who(f"{role or 'outsider'} session", "session", role) for role in (None, *MAY)),
    *(Who(f"{role or 'outsider'} key", "key", role) for role in (None, *MAY)),
]


@dataclass
class World:
    """Organization acme, whose dataset `runs` holds one trace with an image, and an
    organization rival; a user and a key of each role in acme, and an outsider (an owner
    in rival) of each kind."""

    dataset: Dataset
    trace: Trace
    block: Block
    image: str
    victim_key: ApiKey
    label: Label
    annotation: Annotation
    users: dict[str, Any]
    secrets: dict[str, str]
    sessions: dict[str, dict[str, str]] = field(default_factory=dict)  # signed-in cookies

    def client(self, who: Who) -> APIClient:
        client = APIClient()
        slot = who.role or "outsider"
        if who.way == "session":
            client.cookies.load(self.sessions[slot])
        elif who.way == "key":
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.secrets[slot]}")
        return client


def build_world(public: bool) -> World:
    acme, rival = organization("acme"), organization("rival")
    users, secrets = {}, {}
    for role in MAY:
        users[role] = user_in(acme, role, role)
        secrets[role] = api_key_create(organization=acme, name=f"{role} key", role=role).secret
    users["outsider"] = user_in(rival, "outsider", "owner")
    secrets["outsider"] = api_key_create(organization=rival, role="owner").secret
    victim = api_key_create(organization=acme, name="victim").api_key
    data = json.dumps({"messages": EVENTS, "metadata": {"reward": 0}}).encode() + b"\n"
    result = trace_import(
        organization=acme, dataset_name="runs", files=[("runs.jsonl", io.BytesIO(data))]
    )
    dataset = result.dataset
    dataset.is_public = public
    dataset.save()
    trace = dataset.traces.get()
    block = trace.blocks.filter(sub_type="MESSAGE").order_by("created_at", "id").first()
    label = Label.objects.create(dataset=dataset, name="gave up")
    annotation = Annotation.objects.create(trace=trace, block=block, label=label, comment="c")
    image = Image.objects.get().sha256
    return World(dataset, trace, block, image, victim, label, annotation, users, secrets)


@pytest.fixture(scope="module")
def stored_world(django_db_setup, django_db_blocker):
    """The world, written once for the module (it took most of each case's time): every
    case runs in a transaction rolled back at its end, so none sees another's writes.
    Each user's session is made here too, once. Emptied when the module ends."""
    with written_for_the_module(django_db_blocker):
        world = build_world(public=False)
        for slot, user in world.users.items():
            client = APIClient()
            client.force_login(user)
            world.sessions[slot] = {name: c.value for name, c in client.cookies.items()}
        yield world


@pytest.fixture
def world_of(stored_world) -> Callable[[bool], World]:
    """The stored world for one case, its dataset made public or not. A case uses only the
    ids of its objects, which no rolled-back case changes, so they are not read again."""

    def read(public: bool) -> World:
        Dataset.objects.filter(pk=stored_world.dataset.pk).update(is_public=public)
        return stored_world

    return read


# Everything a write could change (a key's last use aside: any call notes it), read as the
# database holds it, without the ORM (two snapshots a case were a third of its time).
SNAPSHOT = {
    "organizations": (Organization, "*"),
    "memberships": (Membership, "*"),
    "datasets": (Dataset, "*"),
    "traces": (Trace, "*"),
    "blocks": (Block, "id, extra, updated_at"),
    "images": (Image, "id"),
    "keys": (ApiKey, "id, name, role, revoked_at"),
    "labels": (Label, "*"),
    "annotations": (Annotation, "*"),
}


def snapshot() -> dict[str, list]:
    with connection.cursor() as cursor:
        taken = {}
        for name, (model, columns) in SNAPSHOT.items():
            pk = model._meta.pk.column
            cursor.execute(f"SELECT {columns} FROM {model._meta.db_table} ORDER BY {pk}")
            taken[name] = cursor.fetchall()
        return taken


# --- What is asked -------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    route: str  # URL name
    method: str
    action: str | None  # read / write / manage of the dataset; None: anyone signed in
    send: Callable[[APIClient, World, bool], Any]
    ok: int
    label: str = ""
    anyone: bool = False  # answers everyone, signed in or not
    # A route with its own rule, given as the status for (who, public); None: the common one
    expect: Callable[["Who", bool], int | str] | None = None

    @property
    def api(self) -> bool:
        return self.route.startswith("api-") and self.route not in ("api-keys", "api-key-revoke")

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.route}{' ' + self.label if self.label else ''}"


def api(path: str) -> str:
    return f"/v1/organizations/acme/{path}"


def as_json(client: APIClient, method: str, url: str, body: Any):
    return client.generic(method.upper(), url, json.dumps(body), content_type="application/json")


def upload_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("more.json", json.dumps(EVENTS).encode())


MESSAGE = {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "more"}}
OTLP_BODY = request_bytes(recorded(genai_agent, {"service.name": "agent"}))


def otlp_rule(who: Who, public: bool) -> int:
    """OTLP takes an API key only (exporters send headers, never cookies), and writes into
    the key's own organization: an outsider's key writes into its own, a viewer's may not."""
    if who.way != "key":
        return 401
    return 403 if who.role == "viewer" else 200


WRITES = [
    Case("api-datasets", "post", "write", lambda c, w, p: as_json(c, "post", api("datasets"), {"name": "new"}), 201),  # noqa: E501
    Case("api-dataset", "patch", "write", lambda c, w, p: as_json(c, "patch", api(f"datasets/{w.dataset.pk}"), {"description": "d", "metadata": {"k": 1}}), 200, "description"),  # noqa: E501
    Case("api-dataset", "patch", "manage", lambda c, w, p: as_json(c, "patch", api(f"datasets/{w.dataset.pk}"), {"is_public": not p}), 200, "visibility"),  # noqa: E501
    Case("api-dataset", "patch", "manage", lambda c, w, p: as_json(c, "patch", api(f"datasets/{w.dataset.pk}"), {"name": "renamed"}), 200, "rename"),  # noqa: E501
    Case("api-dataset", "delete", "manage", lambda c, w, p: c.delete(api(f"datasets/{w.dataset.pk}")), 204),  # noqa: E501
    Case("api-dataset-upload", "post", "write", lambda c, w, p: c.post(api(f"datasets/{w.dataset.pk}/upload"), {"files": upload_file()}), 201),  # noqa: E501
    Case("api-traces", "post", "write", lambda c, w, p: as_json(c, "post", api("traces"), {"dataset": w.dataset.pk, "name": "t"}), 201),  # noqa: E501
    Case("api-traces", "post", "write", lambda c, w, p: as_json(c, "post", api("traces"), {"dataset": "brand-new"}), 201, "new dataset"),  # noqa: E501
    Case("api-trace", "patch", "write", lambda c, w, p: as_json(c, "patch", api(f"traces/{w.trace.pk}"), {"extra": {"reward": 1}}), 200),  # noqa: E501
    Case("api-trace", "delete", "write", lambda c, w, p: c.delete(api(f"traces/{w.trace.pk}")), 204),  # noqa: E501
    Case("api-blocks", "post", "write", lambda c, w, p: as_json(c, "post", api(f"traces/{w.trace.pk}/blocks"), MESSAGE), 201),  # noqa: E501
    Case("api-blocks-batch", "post", "write", lambda c, w, p: as_json(c, "post", api(f"traces/{w.trace.pk}/blocks:batch"), {"blocks": [MESSAGE]}), 201),  # noqa: E501
    Case("api-block", "patch", "write", lambda c, w, p: as_json(c, "patch", api(f"blocks/{w.block.pk}"), {"extra": {"reward": 1}}), 200),  # noqa: E501
    Case("api-labels", "post", "write", lambda c, w, p: as_json(c, "post", api(f"datasets/{w.dataset.pk}/labels"), {"name": "wrong tool"}), 201),  # noqa: E501
    Case("api-label", "delete", "manage", lambda c, w, p: c.delete(api(f"datasets/{w.dataset.pk}/labels/{w.label.pk}")), 204),  # noqa: E501
    Case("api-annotations", "post", "write", lambda c, w, p: as_json(c, "post", api(f"traces/{w.trace.pk}/annotations"), {"label": "gave up", "comment": "why"}), 201),  # noqa: E501
    Case("api-annotation", "delete", "write", lambda c, w, p: c.delete(api(f"annotations/{w.annotation.pk}")), 204),  # noqa: E501
    Case("dataset-edit", "post", "write", lambda c, w, p: c.post(reverse("dataset-edit", args=[w.dataset.pk]), {"name": "runs", "description": "d", "metadata": '{"k": 1}'}), 302, "description"),  # noqa: E501
    Case("dataset-edit", "post", "manage", lambda c, w, p: c.post(reverse("dataset-edit", args=[w.dataset.pk]), {"name": "renamed", "description": "", "metadata": ""}), 302, "rename"),  # noqa: E501
    Case("dataset-delete", "post", "manage", lambda c, w, p: c.post(reverse("dataset-delete", args=[w.dataset.pk]), {"confirm": "runs"}), 302),  # noqa: E501
    Case("dataset-label-add", "post", "write", lambda c, w, p: c.post(reverse("dataset-label-add", args=[w.dataset.pk]), {"name": "wrong tool"}), 302),  # noqa: E501
    Case("dataset-label-add", "post", "write", lambda c, w, p: c.post(reverse("dataset-label-add", args=[w.dataset.pk]), {"name": "wrong tool"}, HTTP_HX_REQUEST="true"), 200, "through htmx"),  # noqa: E501
    Case("dataset-label-remove", "post", "manage", lambda c, w, p: c.post(reverse("dataset-label-remove", args=[w.dataset.pk, w.label.pk])), 302),  # noqa: E501
    Case("trace-annotate", "post", "write", lambda c, w, p: c.post(reverse("trace-annotate", args=[w.trace.pk]), {"label": "gave up", "block": w.block.pk}), 302),  # noqa: E501
    Case("trace-annotate", "post", "write", lambda c, w, p: c.post(reverse("trace-annotate", args=[w.trace.pk]), {"comment": "why"}, HTTP_HX_REQUEST="true"), 200, "through htmx"),  # noqa: E501
    Case("trace-anchor", "post", "write", lambda c, w, p: c.post(reverse("trace-anchor", args=[w.trace.pk]), {"address": "messages[0].content:0-2", "comment": "here"}), 302),  # noqa: E501
    Case("trace-anchor", "post", "write", lambda c, w, p: c.post(reverse("trace-anchor", args=[w.trace.pk]), {"address": "messages[0].content:L0", "comment": "here"}, HTTP_HX_REQUEST="true"), 200, "through htmx"),  # noqa: E501
    Case("annotation-remove", "post", "write", lambda c, w, p: c.post(reverse("annotation-remove", args=[w.trace.pk, w.annotation.pk])), 302),  # noqa: E501
    Case("dataset-visibility", "post", "manage", lambda c, w, p: c.post(reverse("dataset-visibility", args=[w.dataset.pk]), {"public": "0" if p else "1"}), 302),  # noqa: E501
    Case("upload", "post", "write", lambda c, w, p: c.post(reverse("upload"), {"dataset": w.dataset.pk, "files": upload_file()}), 302),  # noqa: E501
    Case("upload", "post", "write", lambda c, w, p: c.post(reverse("upload"), {"organization": "acme", "name": "fresh", "files": upload_file()}), 302, "new dataset"),  # noqa: E501
    Case("upload", "post", "write", lambda c, w, p: c.post(reverse("upload"), {"dataset": w.dataset.pk, "files": upload_file()}, HTTP_HX_REQUEST="true"), 200, "through htmx"),  # noqa: E501
    Case("api-keys", "post", "manage", lambda c, w, p: c.post(reverse("api-keys"), {"organization": "acme", "name": "k", "role": "owner"}), 201),  # noqa: E501
    Case("api-key-revoke", "post", "manage", lambda c, w, p: c.post(reverse("api-key-revoke", args=[w.victim_key.pk])), 302),  # noqa: E501
    Case("trace-reward", "post", "write", lambda c, w, p: c.post(reverse("trace-reward", args=[w.trace.pk]), {"action": "up"}), 302),  # noqa: E501
    Case("block-reward", "post", "write", lambda c, w, p: c.post(reverse("block-reward", args=[w.trace.pk, w.block.pk]), {"action": "up"}), 302),  # noqa: E501
    Case("otlp-traces", "post", "write", lambda c, w, p: c.generic("POST", reverse("otlp-traces"), OTLP_BODY, content_type="application/x-protobuf"), 200, expect=otlp_rule),  # noqa: E501
]  # fmt: skip

READS = [
    Case("api-whoami", "get", "read", lambda c, w, p: c.get(api("whoami")), 200),
    Case("api-datasets", "get", "read", lambda c, w, p: c.get(api("datasets")), 200),
    Case("api-dataset", "get", "read", lambda c, w, p: c.get(api(f"datasets/{w.dataset.pk}")), 200),  # noqa: E501
    Case("api-dataset-export", "get", "read", lambda c, w, p: c.get(api(f"datasets/{w.dataset.pk}/export")), 200),  # noqa: E501
    Case("api-traces", "get", "read", lambda c, w, p: c.get(api(f"traces?dataset={w.dataset.pk}")), 200),  # noqa: E501
    Case("api-trace", "get", "read", lambda c, w, p: c.get(api(f"traces/{w.trace.pk}")), 200),
    Case("api-blocks", "get", "read", lambda c, w, p: c.get(api(f"traces/{w.trace.pk}/blocks")), 200),  # noqa: E501
    Case("api-blocks-stitched", "get", "read", lambda c, w, p: c.get(api(f"traces/{w.trace.pk}/blocks.stitched")), 200),  # noqa: E501
    Case("api-block", "get", "read", lambda c, w, p: c.get(api(f"blocks/{w.block.pk}")), 200),
    Case("api-labels", "get", "read", lambda c, w, p: c.get(api(f"datasets/{w.dataset.pk}/labels")), 200),  # noqa: E501
    Case("api-annotations", "get", "read", lambda c, w, p: c.get(api(f"traces/{w.trace.pk}/annotations")), 200),  # noqa: E501
    Case("api-compare-traces", "get", "read", lambda c, w, p: c.get(api("compare/traces"), {"a": w.trace.pk, "b": w.trace.pk}), 200),  # noqa: E501
    Case("api-compare-datasets", "get", "read", lambda c, w, p: c.get(api("compare/datasets"), {"a": w.dataset.pk, "b": w.dataset.pk}), 200),  # noqa: E501
    Case("compare-traces", "get", "read", lambda c, w, p: c.get(reverse("compare-traces"), {"a": w.trace.pk, "b": w.trace.pk}), 200),  # noqa: E501
    Case("compare-traces", "get", "read", lambda c, w, p: c.get(reverse("compare-traces"), {"a": w.trace.pk, "b": w.trace.pk, "from": 0}, HTTP_HX_REQUEST="true"), 200, "steps fragment"),  # noqa: E501
    Case("compare-datasets", "get", "read", lambda c, w, p: c.get(reverse("compare-datasets"), {"a": w.dataset.pk, "a_where": "reward=0", "b_where": "reward=1"}), 200, "slices"),  # noqa: E501
    Case("datasets", "get", None, lambda c, w, p: c.get(reverse("datasets")), 200, anyone=True),
    Case("dataset", "get", "read", lambda c, w, p: c.get(reverse("dataset", args=[w.dataset.pk])), 200),  # noqa: E501
    Case("dataset", "get", "read", lambda c, w, p: c.get(reverse("dataset", args=[w.dataset.pk]), {"group": "task"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="groups"), 200, "groups fragment"),  # noqa: E501
    Case("dataset", "get", "read", lambda c, w, p: c.get(reverse("dataset", args=[w.dataset.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="traces"), 200, "traces fragment"),  # noqa: E501
    Case("dataset-edit", "get", "write", lambda c, w, p: c.get(reverse("dataset-edit", args=[w.dataset.pk])), 200),  # noqa: E501
    Case("dataset-delete", "get", "manage", lambda c, w, p: c.get(reverse("dataset-delete", args=[w.dataset.pk])), 200),  # noqa: E501
    Case("dataset-export", "get", "read", lambda c, w, p: c.get(reverse("dataset-export", args=[w.dataset.pk])), 200),  # noqa: E501
    Case("trace", "get", "read", lambda c, w, p: c.get(reverse("trace", args=[w.trace.pk])), 200),  # noqa: E501
    Case("trace", "get", "read", lambda c, w, p: c.get(reverse("trace", args=[w.trace.pk]), {"after": 0}, HTTP_HX_REQUEST="true"), 200, "chunk fragment"),  # noqa: E501
    Case("trace-outline", "get", "read", lambda c, w, p: c.get(reverse("trace-outline", args=[w.trace.pk])), 200),  # noqa: E501
    Case("trace-outline", "get", "read", lambda c, w, p: c.get(reverse("trace-outline", args=[w.trace.pk]), {"q": "hello"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="outline"), 200, "search fragment"),  # noqa: E501
    Case("block-full", "get", "read", lambda c, w, p: c.get(reverse("block-full", args=[w.trace.pk, w.block.pk])), 200),  # noqa: E501
    Case("block-full", "get", "read", lambda c, w, p: c.get(reverse("block-full", args=[w.trace.pk, w.block.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"raw-{w.block.pk}"), 200, "raw fragment"),  # noqa: E501
    Case("trace-image", "get", "read", lambda c, w, p: c.get(reverse("trace-image", args=[w.trace.pk, w.image])), 200),  # noqa: E501
    Case("upload", "get", None, lambda c, w, p: c.get(reverse("upload")), 200),
    Case("api-keys", "get", None, lambda c, w, p: c.get(reverse("api-keys")), 200),
    Case("api-key-revoke", "get", "manage", lambda c, w, p: c.get(reverse("api-key-revoke", args=[w.victim_key.pk])), 200),  # noqa: E501
]  # fmt: skip


def expected(case: Case, who: Who, public: bool) -> int | str:
    """The status the rule gives: for nobody, a read of public data is ok (pages and API
    alike: DESIGN.md, a public dataset is readable by anyone, signed in or not), another
    API read is 404 as for an outsider, an API write 401, and a page the sign-in page; 404
    outside the organization unless it is a read of public data, 403 for a role too low.
    A key is not a way into the pages: there it is nobody."""
    if case.expect is not None:
        return case.expect(who, public)
    if who.way == "none" or (who.way == "key" and not case.api):
        if case.api:
            if case.method in UNSAFE:
                return 401
            return case.ok if public else 404
        return case.ok if case.anyone or (case.action == "read" and public) else SIGN_IN
    if case.action is None:
        return case.ok
    if who.role is None:
        return case.ok if case.action == "read" and public else 404
    return case.ok if case.action in MAY[who.role] else 403


def outcome(response) -> int | str:
    location = response.get("Location", "") if response.status_code == 302 else ""
    return SIGN_IN if location.startswith("/accounts/login/") else response.status_code


def ids(values) -> list[str]:
    return [str(v) for v in values]


# --- The matrix ----------------------------------------------------------------------


def matrix(cases: list[Case]) -> list:
    """Every case for every caller on a private and a public dataset. `make test-fast` walks
    each route once for each role (anonymous, outsider, viewer, member, owner), the way in
    (session or key) and the dataset's visibility taking turns from route to route and role
    to role, so each route meets both ways and both visibilities; the rest is `slow`."""
    roles = list(dict.fromkeys(who.role or who.way for who in WHO))
    params = []
    for i, case in enumerate(cases):
        for who in WHO:
            k = roles.index(who.role or who.way)
            way = "session" if (i + k) % 2 else "key"
            for public in (False, True):
                quick = public == bool((i + k) // 2 % 2) and who.way in (way, "none")
                marks = () if quick else (pytest.mark.slow,)
                name = f"{case}-{who}-{'public' if public else 'private'}"
                params.append(pytest.param(case, who, public, marks=marks, id=name))
    return params


ERROR_CODES = {401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND"}


def ask(case: Case, who: Who, public: bool, world: World) -> tuple[Any, int | str, dict]:
    """Send the case's request as `who`; check the status (and the API's error code)."""
    before = snapshot()
    response = case.send(world.client(who), world, public)
    want = expected(case, who, public)
    assert outcome(response) == want, response.content[:500]
    if case.api and want in ERROR_CODES:
        assert response.json()["error"]["code"] == ERROR_CODES[want]
    return response, want, before


@pytest.mark.parametrize(("case", "who", "public"), matrix(WRITES))
def test_writes(case: Case, who: Who, public: bool, world_of) -> None:
    _, want, before = ask(case, who, public, world_of(public))
    if want == case.ok:
        assert snapshot() != before, "an allowed write changed nothing"
    else:
        assert snapshot() == before, "a refused write changed the database"


@pytest.mark.parametrize(("case", "who", "public"), matrix(READS))
def test_reads(case: Case, who: Who, public: bool, world_of) -> None:
    response, want, before = ask(case, who, public, world_of(public))
    assert snapshot() == before
    if case.route in ("datasets", "api-datasets") and want == 200:
        # A list shows the dataset exactly when its reader may read it.
        readable = public or (who.role is not None and (who.way == "session" or case.api))
        assert (b'"runs"' in response.content or b">runs<" in response.content) == readable


# --- The matrix knows every route ---------------------------------------------------


def _named_patterns(patterns, prefix="") -> list[tuple[str | None, URLPattern]]:
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue  # superusers only: tests/admin/test_admin_access.py
            found += _named_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            found.append((pattern.name, pattern))
    return found


def _methods(name: str | None, pattern: URLPattern) -> set[str]:
    """The methods a route answers: a DRF view's handlers, or, for a function view, every
    method that is not answered 405 for a caller who is not signed in."""
    view_class = getattr(pattern.callback, "cls", None)
    if view_class is not None:
        return {m for m in ("get", *UNSAFE) if hasattr(view_class, m)}
    if name is None:
        return set()
    kwargs = {key: "x" for key in pattern.pattern.converters}
    url = reverse(name, kwargs=kwargs)
    client = APIClient()
    return {m for m in ("get", *UNSAFE) if getattr(client, m)(url).status_code != 405}


def test_the_matrix_knows_every_route() -> None:
    routes = set()
    for name, pattern in _named_patterns(get_resolver().url_patterns):
        if name in NOT_IN_MATRIX:
            continue
        routes |= {(name, method) for method in _methods(name, pattern)}
    known = {(c.route, c.method) for c in WRITES + READS + EXPLORER}
    assert routes - known == set(), "routes the matrix does not walk: add them to it"
    assert known - routes == set(), "the matrix names routes that do not exist"
    assert {m for _, m in routes} >= {"get", "post", "patch", "delete"}


# --- Invariant Explorer's /api/v1 (traces/invariant) ----------------------------------
# Its clients expect 401 where /v1 answers 404 or 403, and {"detail": ...} errors. An
# operation acts on the acme dataset's objects, or in the caller's own namespace (a key's
# organization; a user's first organization where their role allows it): for the
# outsider, an owner in rival, that is rival.


def on_dataset(action: str, denied: int = 401) -> Callable[[Who, bool], int]:
    def expect(who: Who, public: bool) -> int:
        if action == "read" and public:
            return 200
        if who.way == "none":
            return 401
        if who.role is None:
            return denied
        return 200 if action in MAY[who.role] else denied

    return expect


def in_home(action: str) -> Callable[[Who, bool], int]:
    def expect(who: Who, public: bool) -> int:
        if who.way == "none":
            return 401
        return 200 if who.role is None or action in MAY[who.role] else 401

    return expect


def always(status: int) -> Callable[[Who, bool], int]:
    return lambda who, public: status


def metadata_of_acme(who: Who, public: bool) -> int:
    if who.way == "none":
        return 401
    return 200 if public or who.role is not None else 403


@dataclass(frozen=True)
class ExplorerCase:
    route: str
    method: str
    send: Callable[[APIClient, World, bool], Any]
    expect: Callable[[Who, bool], int]
    label: str = ""

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.route}{' ' + self.label if self.label else ''}"


def inv(path: str) -> str:
    return f"/api/v1/{path}"


def explorer_jsonl() -> SimpleUploadedFile:
    return SimpleUploadedFile("x.jsonl", json.dumps(EVENTS).encode() + b"\n")


PUSH = {"messages": [EVENTS], "annotations": None, "metadata": None, "dataset": "pushed"}
NOTE = {"content": "c", "address": "messages[0]"}

EXPLORER = [
    ExplorerCase("inv-push", "post", lambda c, w, p: as_json(c, "post", inv("push/trace"), PUSH), in_home("write")),  # noqa: E501
    ExplorerCase("inv-append", "post", lambda c, w, p: as_json(c, "post", inv(f"trace/{w.trace.uuid}/messages"), {"messages": [{"role": "user", "content": "more"}]}), on_dataset("write", denied=404)),  # noqa: E501
    ExplorerCase("inv-trace", "delete", lambda c, w, p: c.delete(inv(f"trace/{w.trace.uuid}")), on_dataset("write")),  # noqa: E501
    ExplorerCase("inv-annotate", "post", lambda c, w, p: as_json(c, "post", inv(f"trace/{w.trace.uuid}/annotate"), NOTE), on_dataset("write")),  # noqa: E501
    ExplorerCase("inv-annotation", "put", lambda c, w, p: as_json(c, "put", inv(f"trace/{w.trace.uuid}/annotation/{w.annotation.uuid}"), {"content": "x"}), always(401), "not the author"),  # noqa: E501
    ExplorerCase("inv-annotation", "delete", lambda c, w, p: c.delete(inv(f"trace/{w.trace.uuid}/annotation/{w.annotation.uuid}")), always(401), "not the author"),  # noqa: E501
    ExplorerCase("inv-dataset-create", "post", lambda c, w, p: as_json(c, "post", inv("dataset/create"), {"name": "made"}), in_home("write")),  # noqa: E501
    ExplorerCase("inv-dataset-upload", "post", lambda c, w, p: c.post(inv("dataset/upload"), {"name": "uploaded", "file": explorer_jsonl()}), in_home("write")),  # noqa: E501
    ExplorerCase("inv-dataset", "delete", lambda c, w, p: c.delete(inv(f"dataset/byid/{w.dataset.uuid}")), on_dataset("manage")),  # noqa: E501
    ExplorerCase("inv-dataset-byuser", "delete", lambda c, w, p: c.delete(inv("dataset/byuser/acme/runs")), on_dataset("manage")),  # noqa: E501
    ExplorerCase("inv-metadata", "put", lambda c, w, p: as_json(c, "put", inv("dataset/metadata/runs"), {"metadata": {"benchmark": "b"}}), lambda who, p: 401 if who.way == "none" or who.role == "viewer" else 404 if who.role is None else 200),  # noqa: E501
    ExplorerCase("inv-key-create", "post", lambda c, w, p: c.post(inv("keys/create")), in_home("manage")),  # noqa: E501
    ExplorerCase("inv-signup", "post", lambda c, w, p: c.post(inv("user/signup")), always(404), "outside test mode"),  # noqa: E501
    ExplorerCase("inv-health", "get", lambda c, w, p: c.get(inv("")), always(200)),
    ExplorerCase("inv-root", "get", lambda c, w, p: c.get("/api/v1"), always(200)),
    ExplorerCase("inv-identity", "get", lambda c, w, p: c.get(inv("user/identity")), in_home("read")),  # noqa: E501
    ExplorerCase("inv-snippets", "get", lambda c, w, p: c.get(inv("trace/snippets")), in_home("read")),  # noqa: E501
    ExplorerCase("inv-trace", "get", lambda c, w, p: c.get(inv(f"trace/{w.trace.uuid}")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-annotations", "get", lambda c, w, p: c.get(inv(f"trace/{w.trace.uuid}/annotations")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-image", "get", lambda c, w, p: c.get(inv(f"trace/image/runs/{w.trace.uuid}/{w.image}.png")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-list", "get", lambda c, w, p: c.get(inv("dataset/list?kind=any")), always(200)),  # noqa: E501
    ExplorerCase("inv-dataset", "get", lambda c, w, p: c.get(inv(f"dataset/byid/{w.dataset.uuid}")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-byuser", "get", lambda c, w, p: c.get(inv("dataset/byuser/acme/runs")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-traces", "get", lambda c, w, p: c.get(inv(f"dataset/byid/{w.dataset.uuid}/traces")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-byuser-traces", "get", lambda c, w, p: c.get(inv("dataset/byuser/acme/runs/traces")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-download", "get", lambda c, w, p: c.get(inv(f"dataset/byid/{w.dataset.uuid}/download")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-dataset-download-annotated", "get", lambda c, w, p: c.get(inv(f"dataset/byid/{w.dataset.uuid}/download/annotated")), on_dataset("read")),  # noqa: E501
    ExplorerCase("inv-metadata", "get", lambda c, w, p: c.get(inv("dataset/metadata/runs?owner_username=acme")), metadata_of_acme),  # noqa: E501
]  # fmt: skip


def explorer_matrix() -> list:
    """Every Explorer case for every caller, both visibilities; the quick run takes each
    case's callers by the same turns as `matrix`."""
    return [
        pytest.param(*p.values, marks=p.marks, id=p.id.replace(str(p.values[0]), str(c), 1))
        for c, p in zip(
            [c for c in EXPLORER for _ in WHO for _ in (0, 1)], matrix(EXPLORER), strict=True
        )
    ]


@pytest.mark.parametrize(("case", "who", "public"), explorer_matrix())
def test_explorer_api(case: ExplorerCase, who: Who, public: bool, world_of) -> None:
    world = world_of(public)
    before = snapshot()
    response = case.send(world.client(who), world, public)
    want = case.expect(who, public)
    assert response.status_code == want, getattr(response, "content", b"")[:500]
    if want >= 400:
        assert "detail" in response.json()
    changed = snapshot() != before
    assert changed == (want == 200 and case.method in UNSAFE), "a write's change is wrong"
