"""NUL (U+0000) anywhere in a URL never answers 500, on either database.

Every route the URL resolver knows (pages, htmx fragments, /v1, the admin) is requested
with NUL in each path segment (with every method), and with NUL in each query parameter
it reads: the parameters are found by recording which keys each view reads from
request.GET, the ones its links and the OpenAPI schema name, and the admin's filters.
PostgreSQL refuses NUL in text parameters, so there an unguarded lookup is a 500.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import pytest
from django.contrib.contenttypes.models import ContentType
from django.http import QueryDict
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.generators import SchemaGenerator

from tests.conftest import user_in
from tests.explorer.conftest import blocks_trace, import_traces
from traces.models import ApiKey, Block, Image, Trace
from traces.services.annotations import annotation_create, label_create
from traces.services.api_keys import api_key_create

# slow: sweeps every route with NUL in every place
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=False)]

NUL = "\x00"
METHODS = ("get", "post", "patch", "delete")
# Read through request.GET.items() or lists(), which the recorder does not see.
INDIRECT_PARAMS = {"metadata.task_id", "metadata." + NUL, NUL}
# The whole page, and the htmx fragments of the pages that have them.
HEADER_VARIANTS = (
    {},
    {"HX-Request": "true", "HX-Target": "traces"},
    {"HX-Request": "true", "HX-Target": "groups"},
)


def _routes(
    patterns, namespace: str = "", prefix: str = ""
) -> Iterator[tuple[str, list[str], str]]:
    """(name to reverse, names of the URL's arguments, the whole pattern) of every route;
    an unnamed route is named by its pattern."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _routes(entry.url_patterns, inner, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            pattern = entry.pattern
            names = (
                list(pattern.converters)
                if hasattr(pattern, "converters") and pattern.converters
                else list(pattern.regex.groupindex)
            )
            whole = prefix + str(pattern)
            yield (namespace + entry.name if entry.name else whole), names, whole


def _fill(whole: str, arguments: dict[str, str]) -> str:
    """The URL of an unnamed route: its pattern with the arguments put in."""
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: quote(arguments[m.group(1)]), whole)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: quote(arguments[m.group(1)]), path)
    return "/" + path.replace("^", "").replace("$", "")


@pytest.fixture
def world(org) -> dict[str, Any]:
    user = user_in(org, "nul-admin", "owner", is_staff=True, is_superuser=True)
    [trace] = import_traces(org, "nul-sweep", [blocks_trace()])
    image = Image.objects.get()
    created = api_key_create(organization=org, name="nul sweep", created_by=user)
    block = Block.objects.filter(trace=trace).first()
    label = label_create(dataset=trace.dataset, name="gave up")
    annotation = annotation_create(trace=trace, label="gave up", block_id=block.pk)
    return {
        "label_id": label.pk,
        "annotation_id": annotation.pk,
        "user": user,
        "trace": trace,
        "block": block,
        "image": image,
        "key": created.secret,
        "key_id": created.api_key.pk,
    }


def _object_id(name: str, world: dict[str, Any]) -> str:
    """A real primary key for an admin route named after its model (or whose pattern
    names it)."""
    name = re.sub(r"^admin/(\w+)/(\w+)/.*", r"admin:\1_\2_", name)
    model_of = {
        "traces_organization": lambda: world["trace"].organization_id,
        "traces_dataset": lambda: world["trace"].dataset_id,
        "traces_trace": lambda: world["trace"].pk,
        "traces_block": lambda: world["block"].pk,
        "traces_image": lambda: world["image"].pk,
        "traces_apikey": lambda: world["key_id"],
        "traces_label": lambda: world["label_id"],
        "traces_annotation": lambda: world["annotation_id"],
        "auth_user": lambda: world["user"].pk,
        "auth_group": lambda: world["user"].pk,
    }
    for prefix, value in model_of.items():
        if name.startswith(f"admin:{prefix}_"):
            return str(value())
    return str(world["trace"].pk)


def _arguments(name: str, names: list[str], world: dict[str, Any]) -> dict[str, str] | None:
    values = {
        "org": "acme",
        "dataset_id": world["trace"].dataset_id,
        "trace_id": world["trace"].pk,
        "block_id": world["block"].pk,
        "key_id": world["key_id"],
        "label_id": world["label_id"],
        "annotation_id": world["annotation_id"],
        "sha256": world["image"].sha256,
        "image_id": str(world["image"].pk),
        "app_label": "traces",
        "content_type_id": str(ContentType.objects.get_for_model(Trace).pk),
        "object_id": _object_id(name, world),
        "id": str(world["user"].pk),
        "url": "nothing-here",
        # Invariant Explorer's /api/v1 (traces/invariant): names, not ids
        "dataset_name": "nul-sweep",
        "username": "acme",
        "name": "nul-sweep",
    }
    if name.startswith("admin:auth_"):
        values["app_label"] = "auth"
    if not set(names) <= set(values):
        return None
    return {key: values[key] for key in names}


def _urls(world: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    found = []
    for name, names, whole in _routes(get_resolver().url_patterns):
        arguments = _arguments(name, names, world)
        assert arguments is not None, f"the sweep does not know the arguments of {name}"
        if name == whole:
            url = _fill(whole, arguments)
        else:
            try:
                url = reverse(name, kwargs=arguments)
            except Exception as exc:  # noqa: BLE001 - a route the sweep cannot build is a bug
                raise AssertionError(f"cannot build {name} with {arguments}: {exc}") from None
        found.append((name, url, arguments))
    return found


def _client(world: dict[str, Any], *, bearer: bool = False) -> Client:
    client = Client(raise_request_exception=False)
    if bearer:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {world['key']}"
    else:
        client.force_login(world["user"])
    return client


def _request(client: Client, method: str, url: str, headers=None, **query: str):
    if query:
        url = f"{url}?{urlencode(query)}"
    if method == "get":
        return client.get(url, headers=headers)
    return getattr(client, method)(url, data=b"{}", content_type="application/json")


@contextmanager
def _recording_query_keys() -> Iterator[set[str]]:
    """Every key a view reads from a QueryDict (request.GET) while the block runs."""
    seen: set[str] = set()
    with pytest.MonkeyPatch.context() as patch:
        for method in ("get", "__getitem__", "getlist", "__contains__"):
            original = getattr(QueryDict, method)

            def recorder(self, key, *args, _original=original, **kwargs):
                if isinstance(key, str):
                    seen.add(key)
                return _original(self, key, *args, **kwargs)

            patch.setattr(QueryDict, method, recorder)
        yield seen


def _link_params(html: bytes) -> set[str]:
    """The query parameters the page's own links use (the admin's filters, pagination)."""
    keys = set()
    for href in re.findall(rb'href="([^"]*\?[^"]*)"', html):
        query = urlsplit(href.decode(errors="replace").replace("&amp;", "&")).query
        keys.update(key for key, _ in parse_qsl(query, keep_blank_values=True))
    return keys


def _schema_params() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        parameter["name"].replace("<key>", "task_id")
        for operations in schema["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
    }


def _body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def _answers(response) -> str:
    return f"{response.status_code}: {_body(response)[:300]!r}"


def test_nul_in_any_path_segment_never_answers_500(world):
    clients = {"session": _client(world), "bearer": _client(world, bearer=True)}
    failures = []
    for name, url, arguments in _urls(world):
        for argument, value in arguments.items():
            quoted = quote(str(value), safe="")
            assert quoted in url, (name, argument)
            nul_url = url.replace(quoted, quote(f"{value}{NUL}", safe=""), 1)
            for method in METHODS:
                for how, client in clients.items():
                    if how == "bearer" and not url.startswith("/v1/"):
                        continue
                    response = _request(client, method, nul_url)
                    if response.status_code >= 500:
                        failures.append(
                            f"{method.upper()} {name} {how} {argument}: {_answers(response)}"
                        )
    assert not failures, "\n".join(failures)


def _header_variants(url: str) -> tuple[dict[str, str], ...]:
    """The site's pages have htmx fragments; the admin and /v1 do not."""
    return ({},) if url.startswith(("/v1/", "/admin/")) else HEADER_VARIANTS


def _params_read(client: Client, url: str) -> set[str]:
    """The query parameters a page or an operation reads, whole page or htmx fragment."""
    params: set[str] = set()
    for headers in _header_variants(url):
        with _recording_query_keys() as seen:
            response = client.get(url, headers=headers)
        params |= seen | _link_params(_body(response))
    return params


def test_nul_in_any_query_parameter_never_answers_500(world):
    client = _client(world)
    schema_params = _schema_params()
    failures = []
    swept: set[str] = set()
    for name, url, _ in _urls(world):
        params = _params_read(client, url) | INDIRECT_PARAMS
        if url.startswith("/v1/"):
            params |= schema_params
        swept |= params
        for param in sorted(params):
            for headers in _header_variants(url):
                response = _request(client, "get", url, headers, **{param: f"x{NUL}y"})
                if response.status_code >= 500:
                    failures.append(f"GET {name} {headers} ?{param}=…NUL: {_answers(response)}")
    # The sweep found the parameters the pages read (or it would prove nothing).
    assert {"q", "dataset", "cursor", "meta", "focus", "page", "limit", "format"} <= swept
    assert not failures, "\n".join(failures)


def test_the_sweep_reaches_the_views(world):
    """A sweep that only met 404s from the resolver would prove nothing: the valid URLs
    it builds answer as the pages and operations themselves."""
    client = _client(world)
    statuses = {name: client.get(url).status_code for name, url, _ in _urls(world)}
    for name in ("datasets", "dataset", "trace", "block-full", "api-traces", "api-block",
                 "admin:traces_dataset_changelist", "admin:traces_trace_change"):  # fmt: skip
        assert statuses[name] == 200, (name, statuses[name])
    assert ApiKey.objects.filter(pk=world["key_id"], revoked_at__isnull=True).exists()
