"""Data and helpers of the site page tests: traces and datasets to show, and HTML audits.

People, organizations and their clients come from tests/conftest.py, the one set."""

import base64
import io
import json
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest

from demo.generator import tiny_png
from tests.conftest import client_for, make_user, user_in  # noqa: F401 (imported from here)
from traces.models import Dataset, Organization, Trace
from traces.services.imports import trace_import

PNG = tiny_png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
LONG_OUTPUT = "\n".join(f"line {n}: " + "x" * 60 for n in range(400))  # ~27 KB


def jsonl_bytes(lines: list[Any]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def import_traces(org: Organization, dataset: str, traces: list[Any]) -> list[Trace]:
    """Import `traces` (event arrays, block arrays or trace objects) through trace_import."""
    data = jsonl_bytes(traces)
    result = trace_import(
        organization=org,
        dataset_name=dataset,
        files=[(f"{dataset}.jsonl", io.BytesIO(data))],
        allow_duplicates=True,  # fixtures repeat identical runs as trials on purpose
    )
    return list(Trace.objects.filter(dataset=result.dataset).order_by("index"))


def blocks_trace() -> dict[str, Any]:
    """A spec/004 block trace with every kind of block, an image, a long output, unparsed
    arguments and streamed deltas."""
    return {
        "name": "checkout flow",
        "metadata": {"task_id": "task-7", "reward": 1},
        "blocks": [
            {
                "id": "m1",
                "sub_type": "MESSAGE",
                "payload": {"role": "system", "content": "Be **brief**."},
            },
            {
                "id": "m2",
                "sub_type": "MESSAGE",
                "payload": {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in this picture?"},
                        {"type": "image_url", "image_url": {"url": PNG_URL}},
                        {"type": "image_url", "image_url": "https://example.com/remote.png"},
                    ],
                },
            },
            {"id": "m3", "sub_type": "MESSAGE", "payload": {"role": "assistant", "content": None}},
            {
                "id": "t1",
                "sub_type": "THINK",
                "parent_block_id": "m3",
                "payload": {"text": "Look it up."},
            },
            {
                "id": "c1",
                "sub_type": "TOOL_CALL",
                "parent_block_id": "m3",
                "payload": {
                    "call_id": "call_search",
                    "name": "search_catalog",
                    "arguments": {"zeta": 1, "alpha": "two", "mid": [3]},
                },
            },
            {
                "id": "r1",
                "sub_type": "TOOL_RESULT",
                "parent_block_id": "c1",
                "payload": {"call_id": "call_search", "output": LONG_OUTPUT},
            },
            {
                "id": "c2",
                "sub_type": "TOOL_CALL",
                "parent_block_id": "m3",
                "payload": {"call_id": "call_stream", "name": "stream_logs", "arguments": {}},
            },
            {
                "id": "d1",
                "sub_type": "TOOL_RESULT",
                "parent_block_id": "c2",
                "payload": {
                    "call_id": "call_stream",
                    "delta": "part one\r\nback\x08space",
                    "seq": 0,
                },
            },
            {
                "id": "d2",
                "sub_type": "TOOL_RESULT",
                "parent_block_id": "c2",
                "payload": {"call_id": "call_stream", "delta": '{"done": true}', "seq": 1},
            },
            {
                "id": "m4",
                "sub_type": "MESSAGE",
                "payload": {"role": "assistant", "content": "A gradient."},
            },
        ],
    }


def chat_trace_unparsed() -> list[dict[str, Any]]:
    """A chat trace whose tool arguments are not JSON (kept as the model wrote them)."""
    return [
        {"role": "user", "content": "run it", "name": "alice"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_bad",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "{'cmd': ls"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_bad", "content": "file.txt"},
        {"role": "Orchestrator (thought)", "content": "All good."},
    ]


class PageParser(HTMLParser):
    """Every element with its attributes and its ancestors' classes, to tell which lane
    (and which call/result pair) a block sits in."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        # (tag, attributes, ancestors as (class, element index))
        self.elements: list[tuple[str, dict[str, str], tuple[tuple[str, int], ...]]] = []
        self.stack: list[tuple[str, str, int]] = []
        self.texts: dict[int, list[str]] = {}  # element index -> its direct text

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        ancestors = tuple((cls, serial) for _, cls, serial in self.stack)
        self.elements.append((tag, attributes, ancestors))
        if tag not in self.VOID:
            self.stack.append((tag, attributes.get("class", ""), len(self.elements) - 1))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self.stack:
            self.texts.setdefault(self.stack[-1][2], []).append(data)

    def find(self, element_id: str) -> tuple[str, dict[str, str], tuple[tuple[str, int], ...]]:
        for element in self.elements:
            if element[1].get("id") == element_id:
                return element
        raise AssertionError(f"no element with id {element_id!r}")

    def _nearest(self, element_id: str, names: tuple[str, ...]) -> tuple[str, int] | None:
        for cls, serial in reversed(self.find(element_id)[2]):
            for name in names:
                if name in cls.split():
                    return name, serial
        return None

    def lane_of(self, element_id: str) -> str:
        found = self._nearest(element_id, ("cell-message", "cell-act", "cell-observe"))
        return found[0] if found else ""

    def pair_of(self, element_id: str) -> int | None:
        found = self._nearest(element_id, ("pair",))
        return found[1] if found else None

    def row_of(self, element_id: str) -> int | None:
        found = self._nearest(element_id, ("row",))
        return found[1] if found else None

    def ids(self) -> list[str]:
        return [a["id"] for _, a, _ in self.elements if "id" in a]

    def all(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a, _ in self.elements if t == tag]


def parse(html: str | bytes) -> PageParser:
    parser = PageParser()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return parser


@pytest.fixture
def imported_trace(org) -> Trace:
    return import_traces(org, "trace-page-blocks", [blocks_trace()])[0]


@pytest.fixture
def imported_chat_traces(org) -> list[Trace]:
    return import_traces(org, "trace-page-chat", [chat_trace_unparsed(), chat_trace_unparsed()])


@pytest.fixture
def trace_importer(org) -> Callable[..., list[Trace]]:
    def run(traces: list[Any], dataset: str = "trace-page-extra", organization=None):
        return import_traces(organization or org, dataset, traces)

    return run


# --- the datasets, dataset, upload and keys pages ---------------------------------------

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


@pytest.fixture
def tasks_dataset(org) -> Dataset:
    return airline_dataset(org)


def airline_dataset(org: Organization) -> Dataset:
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
        org,
        "airline-run",
        traces,
        metadata={"accuracy": 0.4, "benchmark": "tau-bench", "model": "gpt-4o"},
    )


@pytest.fixture
def xss_dataset(org) -> Dataset:
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
    dataset = import_lines(org, f"{script} {img} {js}", traces, metadata=metadata)
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
