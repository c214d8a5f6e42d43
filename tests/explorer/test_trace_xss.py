"""Trace content is hostile (DESIGN.md): nothing in it may execute in the viewer's browser.

A corpus of attacks goes into every place content can appear, through the real import
path; every page and fragment that shows the trace is then parsed and checked for
anything that could run: scripts, event handlers, dangerous URLs, styles, frames,
plugins, SVG/MathML, forms, <base>, <meta refresh>, and htmx attributes.
"""

import json
import re
from html.parser import HTMLParser

import pytest

from tests.explorer.conftest import import_traces
from traces.models import Block, Trace
from traces.services.traces import trace_patch

HTMX = {"HTTP_HX_REQUEST": "true"}

ATTACKS = [
    "<script>alert('s1')</script>",
    "<img src=x onerror=alert('s2')>",
    "[click](javascript:alert('s3'))",
    "[html](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<svg><script>alert('s4')</script></svg>",
    "<svg onload=alert('s5')>",
    "<a href=\"java&#115;cript:alert('s6')\">entity</a>",
    "[entity](java&#115;cript:alert('s7'))",
    "<div style=\"background:url(javascript:alert('s8'))\">css</div>",
    "</textarea><script>alert('s9')</script>",
    "{{ 7*7 }} {% debug %} {{ request.user }}",
    "\"><script>alert('s10')</script>",
    "'><img src=x onerror=alert('s11')>",
    "<iframe src=\"javascript:alert('s12')\"></iframe>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert('s13')>",
    '<base href="//evil.example/">',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(\'s14\')">',
    '<form action="//evil.example"><button>go</button></form>',
    '<object data="javascript:alert(\'s15\')"></object><embed src="javascript:alert(1)">',
    "![pic](javascript:alert('s16'))",
    "![pic](https://evil.example/track.png)",
    "[vb](vbscript:msgbox('s17'))",
    "<a href='JaVaScRiPt:alert(1)'>mixed case</a>",
    "<details open ontoggle=alert('s18')>",
    "[spaced](  javascript:alert('s19'))",
    "[tab](java\tscript:alert('s20'))",
    "<https://ok.example/?q=\"><script>alert('s21')</script>>",
    '<div hx-get="/keys/" hx-trigger="load" hx-on::load="alert(\'s22\')">htmx</div>',
    "<style>body{background:url(javascript:alert('s23'))}</style>",
    "```html\n<script>alert('s24')</script>\n```",
    "<noscript><p title=\"</noscript><img src=x onerror=alert('s25')>\"></noscript>",
    "\u202egnp.exe \x00 \x1b[31m red \x08",
    "<a href=\"data:text/html,<script>alert('s26')</script>\">data link</a>",
    "[x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
]
ALL = "\n\n".join(ATTACKS)
OBJECT = {attack: attack for attack in ATTACKS}
TOOL_NAMES = [
    "<script>alert('t1')</script>",
    "<img/src=x/onerror=alert('t2')>",
    "\"><svg/onload=alert('t3')>",
    "{{7*7}}",
]
BAD_URL = re.compile(r"^(javascript|vbscript|data|file):", re.IGNORECASE)
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "poster", "background",
                  "data", "srcset", "cite", "longdesc", "ping", "lowsrc", "dynsrc"}  # fmt: skip
FORBIDDEN_TAGS = {"iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math",
                  "base", "style", "template", "noscript", "textarea", "select",
                  "video", "audio", "source", "portal"}  # fmt: skip
# The page's own forms: logout, rewards, annotations, and go to block / row and
# find-in-trace (GET).
FORM_ACTION = re.compile(
    r"^/(accounts/logout/|t/[A-Za-z0-9_]+/((b/[A-Za-z0-9_]+/)?reward|outline)?"
    r"|t/[A-Za-z0-9_]+/annotations(/[A-Za-z0-9_]+/remove)?)$"
)
HX_TARGET = re.compile(
    r"^(#(body|raw|drawer)-[A-Za-z0-9_]+|#annotations|closest \.more-rows|#outline)$"
)
OWN_IMAGE = re.compile(r"^/t/[A-Za-z0-9_]+/images/[0-9a-f]{64}$")


def chat_events() -> list[dict]:
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(OBJECT)},
        }
        for n, name in enumerate(TOOL_NAMES)
    ]
    calls.append(
        {"id": "call_raw", "type": "function", "function": {"name": "raw", "arguments": ALL}}
    )
    return [
        {"role": "<script>alert('r1')</script>", "content": ALL, "name": ATTACKS[1]},
        {"role": "{{ 7*7 }}", "content": ALL, "name": "{{ request }}"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": ALL},
                {"type": "image_url", "image_url": {"url": "javascript:alert('p1')"}},
                {"type": "image_url", "image_url": "data:text/html,<script>alert('p2')</script>"},
                {"type": "image", "image": "data:image/svg+xml,<svg onload=alert('p3')>"},
                {
                    "type": "image_url",
                    "image_url": {"url": 'https://e.example/x.png" onerror="alert(1)'},
                },
                {"type": "<b onmouseover=alert('p4')>", "<script>": ALL},
            ],
        },
        {"role": "assistant", "content": None, "reasoning_content": ALL, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_0", "content": ALL},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(OBJECT)},
        {"role": "tool", "tool_call_id": "call_2", "content": json.dumps([OBJECT, ATTACKS])},
        {"role": "tool", "tool_call_id": "call_3", "content": "x" * 3000 + ALL},
        {"role": "tool", "tool_call_id": "call_raw", "content": ATTACKS[0]},
    ]


def blocks_trace() -> dict:
    annotations = {**OBJECT, "reward": ATTACKS[1]}
    return {
        "name": "<script>alert('name')</script>{{ 7*7 }}",
        "metadata": {**OBJECT, "nested": {"deep": [OBJECT]}, "long": ALL * 3},
        "blocks": [
            {
                "id": "m",
                "sub_type": "MESSAGE",
                "payload": {"role": "user", "content": ALL, ATTACKS[0]: ATTACKS[1]},
                "metadata": OBJECT,
                "extra": annotations,
                "raw": {"event": OBJECT, "padding": "p" * 5000},
            },
            {
                "id": "th",
                "sub_type": "THINK",
                "parent_block_id": "m",
                "payload": {"text": ALL},
                "metadata": OBJECT,
                "raw": OBJECT,
            },
            {
                "id": "c",
                "sub_type": "TOOL_CALL",
                "parent_block_id": "m",
                "payload": {"call_id": ATTACKS[0], "name": TOOL_NAMES[1], "arguments": OBJECT},
                "extra": annotations,
            },
            {
                "id": "r",
                "sub_type": "TOOL_RESULT",
                "parent_block_id": "c",
                "payload": {"call_id": ATTACKS[0], "output": {"out": OBJECT, "list": ATTACKS}},
                "metadata": OBJECT,
                "extra": OBJECT,
                "raw": ALL,
            },
            {
                "id": "d",
                "sub_type": "TOOL_RESULT",
                "parent_block_id": "c",
                "payload": {"call_id": ATTACKS[0], "delta": ALL, "seq": 1},
            },
        ],
    }


class Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.scripts: list[str] = []
        self.in_script = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def _check(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script":
            self.scripts.append(attributes.get("src") or "")
            self.in_script = True
        if tag == "link" and not (
            attributes.get("rel") in ("stylesheet", "icon")
            and (attributes.get("href") or "").startswith("/static/")
        ):
            self.problems.append(f"<link {attributes}>")
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}> {attributes}")
        if tag == "meta" and ("http-equiv" in attributes or "content" in attributes):
            if attributes.get("name") not in ("viewport", "htmx-config"):
                self.problems.append(f"<meta {attributes}>")
        if tag == "meta" and attributes.get("name") == "htmx-config":
            config = json.loads(attributes["content"])
            assert config["allowScriptTags"] is False and config["allowEval"] is False
        if tag == "form" and not FORM_ACTION.match(attributes.get("action") or ""):
            self.problems.append(f"<form> {attributes}")
        src = attributes.get("src") or ""
        if tag == "img" and not (OWN_IMAGE.match(src) or src.startswith("/static/icons/")):
            self.problems.append(f"<img> {attributes}")
        for name, value in attrs:
            value = value or ""
            lowered = name.lower()
            if lowered.startswith("on"):
                self.problems.append(f"<{tag} {name}={value!r}>")
            if lowered in ("style", "srcdoc", "formaction"):
                self.problems.append(f"<{tag} {name}={value!r}>")
            if lowered in URL_ATTRIBUTES:
                squeezed = re.sub(r"[\x00-\x20\x7f]+", "", value)
                if BAD_URL.match(squeezed):
                    self.problems.append(f"<{tag} {name}={value!r}>")
                if (
                    tag == "a"
                    and lowered == "href"
                    and not re.match(r"^(/|#|https?://|mailto:)", value)
                ):
                    self.problems.append(f"<a href={value!r}>")
            if lowered.startswith(("hx-", "data-hx-")):
                self._check_htmx(tag, lowered, value)

    def _check_htmx(self, tag, name, value):
        if name in ("hx-get", "hx-post"):
            if not value.startswith("/t/"):
                self.problems.append(f"<{tag} {name}={value!r}>")
        elif name == "hx-target":
            if not HX_TARGET.match(value):
                self.problems.append(f"<{tag} {name}={value!r}>")
        elif name == "hx-swap":
            if value not in ("outerHTML", "innerHTML"):
                self.problems.append(f"<{tag} {name}={value!r}>")
        elif name == "hx-trigger":
            if value not in ("revealed", "toggle once"):  # more rows; a drawer opened
                self.problems.append(f"<{tag} {name}={value!r}>")
        elif name == "hx-headers":
            if tag != "body":
                self.problems.append(f"<{tag} {name}={value!r}>")
        elif name == "hx-swap-oob":
            if value != "true":
                self.problems.append(f"<{tag} {name}={value!r}>")
        else:
            self.problems.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.problems.append(f"inline script: {data[:80]!r}")
        self.text.append(data)


def check(html: str, *, page: bool) -> Checker:
    checker = Checker()
    checker.feed(html)
    checker.close()
    assert not checker.problems, "\n".join(checker.problems[:20])
    if page:
        assert checker.scripts == [
            "/static/js/trace.js",
            "/static/js/anchors.js",  # notes anchored to text
            "/static/vendor/htmx-2.0.11.min.js",
            "/static/js/app.js",
        ], checker.scripts
    else:
        assert checker.scripts == []
    # No comment, CDATA or processing instruction from content reaches the page.
    assert "<!--" not in html and "<![CDATA[" not in html
    return checker


@pytest.fixture
def hostile_traces(org, member) -> list[Trace]:
    traces = import_traces(org, "<script>alert('ds')</script>", [chat_events(), blocks_trace()])
    trace_patch(trace=traces[1], extra={**OBJECT, "note": ALL})
    return traces


def test_no_attack_runs_on_the_trace_page(member_client, hostile_traces):
    for trace in hostile_traces:
        response = member_client.get(f"/t/{trace.pk}/")
        assert response.status_code == 200
        html = response.content.decode()
        checker = check(html, page=True)
        text = "".join(checker.text)
        # The attacks are shown, as text.
        assert "<script>alert('s1')</script>" in text
        assert "{{ 7*7 }}" in text
        assert "alert('s9')" in text
        assert "<svg onload=alert('s5')>" in text


def test_content_reaches_each_place(member_client, hostile_traces):
    chat, blocks = hostile_traces
    chat_text = "".join(check(member_client.get(f"/t/{chat.pk}/").content.decode(), page=True).text)
    for name in TOOL_NAMES:
        assert name in chat_text
    assert "<script>alert('r1')</script>" in chat_text  # a role
    assert "arguments are not JSON" in chat_text
    html = member_client.get(f"/t/{blocks.pk}/").content.decode()
    blocks_text = "".join(check(html, page=True).text)
    assert "<script>alert('name')</script>{{ 7*7 }}" in blocks_text  # the trace's name
    assert "<script>alert('ds')</script>" in blocks_text  # the dataset's name
    # A part past the fold is in the block's full view.
    full = "".join(
        "".join(check(member_client.get(f"/t/{chat.pk}/b/{b.pk}/full", **HTMX).content.decode(),
                      page=False).text)
        for b in Block.objects.filter(trace=chat, sub_type="MESSAGE")
    )  # fmt: skip
    assert "<b onmouseover=alert('p4')>" in full
    assert "javascript:alert('p1')" in full


@pytest.mark.slow  # every fragment and block page of the whole corpus
def test_no_attack_runs_in_fragments_and_block_pages(member_client, hostile_traces):
    for trace in hostile_traces:
        for block in Block.objects.filter(trace=trace):
            base = f"/t/{trace.pk}/b/{block.pk}"
            partial = member_client.get(f"{base}/full", **HTMX)
            assert partial.status_code == 200
            check(partial.content.decode(), page=False)
            for target in (f"raw-{block.pk}", f"drawer-{block.pk}"):
                part = member_client.get(f"{base}/full", HTTP_HX_TARGET=target, **HTMX)
                assert part.status_code == 200
                check(part.content.decode(), page=False)
            whole = member_client.get(f"{base}/full")
            assert whole.status_code == 200
            check(whole.content.decode(), page=True)
        chunk = member_client.get(f"/t/{trace.pk}/?after=0", **HTMX)
        check(chunk.content.decode(), page=False)


def test_no_attack_runs_in_reward_answers(member_client, hostile_traces):
    trace = hostile_traces[1]
    block = Block.objects.filter(trace=trace, sub_type="TOOL_CALL").get()
    for url in (f"/t/{trace.pk}/reward", f"/t/{trace.pk}/b/{block.pk}/reward"):
        for attack in ATTACKS[:3]:
            bad = member_client.post(url, {"action": "set", "value": attack}, **HTMX)
            assert bad.status_code == 422
            check(bad.content.decode(), page=False)
            no_js = member_client.post(url, {"action": "set", "value": attack})
            assert no_js.status_code == 422
            check(no_js.content.decode(), page=True)
        good = member_client.post(url, {"action": "up"}, **HTMX)
        assert good.status_code == 200
        check(good.content.decode(), page=False)


def test_viewer_page_is_safe_too(viewer_client, hostile_traces):
    for trace in hostile_traces:
        html = viewer_client.get(f"/t/{trace.pk}/").content.decode()
        check(html, page=True)


@pytest.mark.parametrize(
    "bad",
    [
        "<script>alert(1)</script>",
        '<script src="/static/evil.js"></script>',
        "<img src=x onerror=alert(1)>",
        '<img src="/t/tr_1/images/' + "a" * 64 + '" onload="x()">',
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" jav&#x09;ascript:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        '<a href="vbscript:x">x</a>',
        '<div style="color:red">x</div>',
        "<iframe></iframe>",
        "<svg></svg>",
        "<math></math>",
        "<object></object>",
        "<embed>",
        '<form action="https://evil.example"></form>',
        '<base href="/">',
        '<meta http-equiv="refresh" content="0">',
        "<style>x{}</style>",
        '<div hx-get="/keys/">x</div>',
        '<div hx-on:click="x()">x</div>',
        '<img src="https://evil.example/x.png">',
        '<link rel="stylesheet" href="https://evil.example/x.css">',
    ],
)
def test_the_checker_sees_each_attack(bad):
    """The checks above would fail on any of these."""
    with pytest.raises(AssertionError):
        check(f"<p>{bad}</p>", page=False)
