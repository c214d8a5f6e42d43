"""Fixtures and helpers of the datasets, dataset, upload and API keys page tests.

Not a conftest.py (someone else owns that file): test modules import what they use.
"""

import io
import json
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from traces.models import Dataset, Membership, Organization
from traces.services.imports import trace_import
from traces.services.organizations import organization_get_or_create

XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "javascript:alert(1)")


def jsonl(lines: list[Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def chat(user_text: str, *tools: str, answer: str = "Done.") -> list[dict[str, Any]]:
    """A chat trace: the user asks, the assistant calls `tools`, each answered, then ends."""
    events: list[dict[str, Any]] = [{"role": "user", "content": user_text}]
    if tools:
        calls = [
            {"id": f"call_{n}", "type": "function", "function": {"name": t, "arguments": "{}"}}
            for n, t in enumerate(tools)
        ]
        events.append({"role": "assistant", "content": None, "tool_calls": calls})
        for n, _ in enumerate(tools):
            events.append({"role": "tool", "tool_call_id": f"call_{n}", "content": "ok"})
    events.append({"role": "assistant", "content": answer})
    return events


def import_lines(
    org: Organization, name: str, traces: list[dict[str, Any]], metadata: dict | None = None
) -> Dataset:
    lines: list[Any] = [{"metadata": metadata}] if metadata is not None else []
    lines += traces
    result = trace_import(
        organization=org,
        dataset_name=name,
        files=[(f"{name}.jsonl", io.BytesIO(jsonl(lines)))],
        allow_duplicates=True,  # fixtures repeat identical runs as trials on purpose
    )
    return result.dataset


def user_in(org: Organization | None, username: str, role: str = "member"):
    user = get_user_model().objects.create_user(username=username, password="pw-" + username)
    if org is not None:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ui_org(db) -> Organization:
    return organization_get_or_create(slug="lab")


@pytest.fixture
def ui_rival(db) -> Organization:
    return organization_get_or_create(slug="rival-lab")


@pytest.fixture
def ui_member(ui_org):
    return user_in(ui_org, "ana", "member")


@pytest.fixture
def members_client(ui_member) -> Client:
    return client_for(ui_member)


@pytest.fixture
def viewers_client(ui_org) -> Client:
    return client_for(user_in(ui_org, "vic", "viewer"))


@pytest.fixture
def ui_owner(ui_org):
    return user_in(ui_org, "olivia", "owner")


@pytest.fixture
def owners_client(ui_owner) -> Client:
    return client_for(ui_owner)


@pytest.fixture
def tasks_dataset(ui_org) -> Dataset:
    """Two tasks: A with rewards 1, 0, 1 and B with 0, 0, 0 (6 traces), and the accuracy the
    benchmark reported."""
    traces = []
    for task, rewards in (("A", [1, 0, 1]), ("B", [0, 0, 0])):
        for trial, reward in enumerate(rewards):
            traces.append(
                {
                    "messages": chat(
                        f"Task {task}: please book flight {trial}", "search_flights", "book"
                    ),
                    "metadata": {
                        "name": f"task {task} trial {trial}",
                        "task_id": task,
                        "trial": trial,
                        "reward": reward,
                    },
                }
            )
    return import_lines(
        ui_org,
        "airline-run",
        traces,
        metadata={"accuracy": 0.4, "benchmark": "tau-bench", "model": "gpt-4o"},
    )


@pytest.fixture
def xss_dataset(ui_org) -> Dataset:
    """Everything a page shows from data holds a script, an event handler or a js: URL."""
    script, img, js = XSS
    traces = []
    for n, payload in enumerate(XSS):
        traces.append(
            {
                "messages": chat(f"{payload} hello", script, js, answer=img),
                "metadata": {
                    "name": f"{payload} trace",
                    "task_id": payload,
                    payload: payload,
                    "reward": n % 2,
                },
            }
        )
    metadata = {
        "accuracy": img,
        script: img,
        "javascript:": js,
        "nested": {"<b>": [script, js]},
        "long": img * 40,
    }
    dataset = import_lines(ui_org, f"{script} {img} {js}", traces, metadata=metadata)
    dataset.description = f"{script} {img}"
    dataset.save()
    return dataset


class _Audit(HTMLParser):
    URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "script":
            src = names.get("src") or ""
            if not src.startswith("/static/"):
                self.problems.append(f"<script> not from /static/: {attrs}")
        if tag == "style":
            self.problems.append("<style> element")
        for name, value in attrs:
            if name.startswith("on") or name.startswith("hx-on"):
                self.problems.append(f"event handler attribute {name}={value!r} on <{tag}>")
            if name == "style":
                self.problems.append(f"style attribute on <{tag}>")
            if name in self.URL_ATTRIBUTES and value is not None:
                if (
                    "".join(value.split())
                    .lower()
                    .startswith(("javascript:", "vbscript:", "data:text/html"))
                ):
                    self.problems.append(f"{name}={value!r} on <{tag}>")

    handle_startendtag = handle_starttag


def html_problems(html: str) -> list[str]:
    """What in `html` could run script or escape styles: any script not served from
    /static/, an on* attribute, a javascript: URL, a style attribute or element."""
    audit = _Audit()
    audit.feed(html)
    audit.close()
    return audit.problems
