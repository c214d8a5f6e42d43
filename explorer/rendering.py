"""Safe rendering of trace content for the trace page (DESIGN.md, "What a person sees").

Trace content is hostile input. Every string taken from a payload leaves this module
either escaped (text, JSON, code) or rendered from Markdown with raw HTML disabled and
then sanitized by nh3 with a small allow-list. Nothing from content becomes a style,
an event handler, a script, a remote image or a non-http(s)/mailto link.

The functions here return HTML fragments as `SafeString`s, and say whether they
folded a long payload to a preview (`Budget`), so that a 20 MB trace renders a page
of a few hundred kilobytes.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nh3
import orjson
from django.utils.html import escape as escape_attr
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Generic, Keyword, Literal, Name, Number, Operator, String
from pygments.util import ClassNotFound

from traces import jsontext

PREVIEW_CHARS = 1500
PREVIEW_LINES = 30
HIGHLIGHT_MAX_CHARS = 200_000  # larger code is shown as plain text (highlighting is slow)

RASTER_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
REF_RE = re.compile(
    r"^(?:data:(?P<mime>image/[A-Za-z0-9.+-]+);base64,|(?:local_)?base64_img: )?"
    r"te-image:sha256:(?P<sha>[0-9a-f]{64})$"
)
_OWN_IMAGE_URL = re.compile(r"^/t/[A-Za-z0-9_-]{1,64}/images/[0-9a-f]{64}$")
_HTTP_URL = re.compile(r"^https?://[^\s]+$", re.IGNORECASE)

# --- Text made visible -----------------------------------------------------------------

# C0 controls except tab and line feed, DEL, and C1 controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides and marks can make text read differently from what it is.
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _control_picture(match: re.Match) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"


def visible_text(text: str) -> str:
    """Text with line endings normalized (CRLF and a lone CR shown as breaks) and every
    control or bidi character replaced by a visible stand-in. Not yet HTML-escaped."""
    text = text.replace("\r\n", "\n").replace("\r", "\u240d\n")
    text = _CONTROLS.sub(_control_picture, text)
    return _BIDI.sub(lambda m: f"\u27e8U+{ord(m.group(0)):04X}\u27e9", text)


def esc(text: str) -> str:
    """Escape for an HTML text node."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def size_label(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    if n_bytes < 1024 * 1024:
        return f"{n_bytes / 1024:.0f} KB" if n_bytes >= 10 * 1024 else f"{n_bytes / 1024:.1f} KB"
    return f"{n_bytes / (1024 * 1024):.1f} MB"


# --- Folding ---------------------------------------------------------------------------


@dataclass
class Budget:
    """How much of a block's payload a preview may still show. `None` limits: no folding."""

    chars: int | None = PREVIEW_CHARS
    lines: int | None = PREVIEW_LINES
    folded: bool = False

    @classmethod
    def unlimited(cls) -> "Budget":
        return cls(chars=None, lines=None)

    @property
    def exhausted(self) -> bool:
        return self.chars is not None and (self.chars <= 0 or (self.lines or 0) <= 0)

    def take(self, text: str) -> str:
        """The part of `text` the budget allows (cut at a line end where possible)."""
        if self.chars is None or self.lines is None:
            return text
        if self.exhausted:
            self.folded = self.folded or bool(text)
            return ""
        cut = text[: self.chars]
        pos = -1
        for _ in range(self.lines):
            pos = cut.find("\n", pos + 1)
            if pos < 0:
                break
        else:
            cut = cut[: pos + 1]
        if len(cut) < len(text):
            self.folded = True
            last = cut.rfind("\n")
            if len(cut) == self.chars and last > len(cut) // 2:
                cut = cut[: last + 1]  # end the preview at a line end when one is near
        self.chars -= len(cut)
        self.lines -= cut.count("\n") + (0 if cut.endswith("\n") else 1)
        return cut


# --- Highlighting ----------------------------------------------------------------------

# Token types to a few short classes of trace.css (".hl .k" ...). Unlisted: no span.
_TOKEN_CLASSES: list[tuple[Any, str]] = [
    (Comment, "c"),
    (Keyword.Constant, "l"),
    (Keyword, "k"),
    (Name.Tag, "t"),
    (Name.Attribute, "a"),
    (Name.Builtin, "b"),
    (Name.Function, "f"),
    (Name.Class, "f"),
    (Name.Decorator, "f"),
    (String, "s"),
    (Number, "m"),
    (Literal, "m"),
    (Operator.Word, "k"),
    (Operator, "o"),
    (Generic.Deleted, "gd"),
    (Generic.Inserted, "gi"),
    (Generic.Heading, "gh"),
    (Generic.Subheading, "gh"),
]
HIGHLIGHT_CLASSES = frozenset(cls for _, cls in _TOKEN_CLASSES)
_class_cache: dict[Any, str] = {}


def _token_class(ttype: Any) -> str:
    found = _class_cache.get(ttype)
    if found is None:
        found = ""
        for parent, cls in _TOKEN_CLASSES:
            if ttype in parent:
                found = cls
                break
        _class_cache[ttype] = found
    return found


_LANG_RE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_LANG_ALIASES = {"sh": "bash", "shell": "bash", "console": "bash", "py": "python", "js": "js"}
_lexer_cache: dict[str, Lexer | None] = {}


def lexer_for(lang: str) -> Lexer | None:
    lang = lang.lower()
    if not _LANG_RE.match(lang):
        return None
    if lang not in _lexer_cache:
        try:
            name = _LANG_ALIASES.get(lang, lang)
            _lexer_cache[lang] = get_lexer_by_name(name, stripnl=False, ensurenl=False)
        except ClassNotFound:
            _lexer_cache[lang] = None
    return _lexer_cache[lang]


def highlight(code: str, lexer: Lexer | None) -> str:
    """Escaped `code`, tokens wrapped in class-only spans. `code` is already visible_text."""
    if lexer is None or len(code) > HIGHLIGHT_MAX_CHARS:
        return esc(code)
    out: list[str] = []
    pending_cls, pending = "", []
    for ttype, value in lexer.get_tokens(code):
        cls = _token_class(ttype)
        if cls != pending_cls and pending:
            text = esc("".join(pending))
            out.append(f'<span class="{pending_cls}">{text}</span>' if pending_cls else text)
            pending = []
        pending_cls = cls
        pending.append(value)
    if pending:
        text = esc("".join(pending))
        out.append(f'<span class="{pending_cls}">{text}</span>' if pending_cls else text)
    return "".join(out)


# --- JSON ------------------------------------------------------------------------------


def pretty_json(value: Any) -> str:
    """Indented JSON in the value's own key order (never sorted); bidi characters
    escaped so they cannot reorder what is shown."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return _BIDI.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


# A `\n` escape (not an escaped backslash followed by n) inside a JSON string.
_NEWLINE_ESCAPE = re.compile(r'(?<!\\)((?:\\\\)*)\\n(?!")')


def readable_json(value: Any) -> str:
    """`pretty_json`, where a string's `\\n` escapes are followed by a real line break, so
    that code and text inside arguments and outputs read as lines; the escape itself
    stays visible."""
    lines = []
    for line in pretty_json(value).split("\n"):
        if "\\n" in line:
            indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
            line = _NEWLINE_ESCAPE.sub(rf"\1\\n\n{indent}", line)
        lines.append(line)
    return "\n".join(lines)


# Strings (a key when a colon follows), numbers and literals of JSON text. A string cut
# by a preview runs to the end.
_JSON_TOKEN = re.compile(
    r'(?P<str>"(?:[^"\\]|\\.)*(?:"|$))(?P<colon>:)?'
    r"|(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<lit>\btrue\b|\bfalse\b|\bnull\b)",
    re.DOTALL,
)


def highlight_json(text: str) -> str:
    out: list[str] = []
    pos = 0
    for match in _JSON_TOKEN.finditer(text):
        out.append(esc(text[pos : match.start()]))
        if match.group("str") is not None:
            cls = "t" if match.group("colon") else "s"
            out.append(f'<span class="{cls}">{esc(match.group("str"))}</span>')
            if match.group("colon"):
                out.append(":")
        else:
            cls = "m" if match.group("num") is not None else "l"
            out.append(f'<span class="{cls}">{match.group(0)}</span>')
        pos = match.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def json_html(value: Any, budget: Budget, *, css: str = "") -> str:
    text = readable_json(value)
    shown = budget.take(text)
    more = '<span class="fold-mark">…</span>' if len(shown) < len(text) else ""
    classes = f"code hl json {css}".strip()
    return f'<pre class="{classes}">{highlight_json(shown)}{more}</pre>'


def text_html(text: str, budget: Budget, *, css: str = "") -> str:
    shown = budget.take(text)
    more = '<span class="fold-mark">…</span>' if len(shown) < len(text) else ""
    classes = f"text {css}".strip()
    return f'<pre class="{classes}">{esc(visible_text(shown))}{more}</pre>'


def parse_json_text(text: str) -> Any:
    """The object or array a string holds, else None."""
    head = text[:64].lstrip()
    if not head or head[0] not in "[{":
        return None
    try:
        value = jsontext.loads(text)
    except (jsontext.JsonError, ValueError):
        return None
    return value if isinstance(value, dict | list) else None


# --- Images ----------------------------------------------------------------------------


@dataclass
class Context:
    """What rendering needs to know about the trace: how to name an image's URL, and the
    stored images' types (looked up once per request)."""

    image_url: Callable[[str], str]
    image_types: dict[str, str] = field(default_factory=dict)
    as_text: bool = False  # show Markdown sources as the text they are


def image_ref(value: Any) -> tuple[str, str | None] | None:
    """(sha256, mime given by the reference) when `value` is a whole stored-image reference."""
    if not isinstance(value, str) or len(value) > 200:
        return None
    match = REF_RE.match(value)
    return (match.group("sha"), match.group("mime")) if match else None


def image_html(value: Any, ctx: Context) -> str | None:
    """HTML for an image value (a stored reference or a URL), or None if it is not one."""
    if isinstance(value, dict):
        value = value.get("url", value.get("data"))
    if not isinstance(value, str):
        return None
    ref = image_ref(value)
    if ref is not None:
        sha, mime = ref
        mime = ctx.image_types.get(sha) or mime or "application/octet-stream"
        url = escape_attr(ctx.image_url(sha))
        if mime in RASTER_TYPES:
            return (
                f'<a class="img-link" href="{url}" target="_blank" rel="noopener" '
                f'title="Open the full image">'
                f'<img class="trace-img" src="{url}" alt="image ({escape_attr(mime)})" '
                f'loading="lazy"></a>'
            )
        return (
            f'<a class="file-link" href="{url}" download>'
            f"image ({esc(mime)}), not shown: download</a>"
        )
    if _HTTP_URL.match(value):
        url = escape_attr(value)
        label = esc(value if len(value) <= 120 else value[:117] + "…")
        return (
            f'<a class="remote-img" href="{url}" target="_blank" '
            f'rel="noopener noreferrer nofollow" title="Remote image, not loaded">'
            f'<span class="badge">remote image</span> {label}</a>'
        )
    if value.startswith("data:"):
        kind = esc(value[5 : value.find(";")] if ";" in value[:80] else "data")
        return (
            f'<span class="inline-data"><span class="badge">inline {kind}</span> '
            f"not shown ({size_label(len(value))})</span>"
        )
    return None


# --- Markdown --------------------------------------------------------------------------

_MD_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "b", "i", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr",
    "th", "td", "img", "span",
}  # fmt: skip


def _allowed_attribute(tag: str, attr: str, value: str) -> str | None:
    if tag == "img" and attr == "src" and not _OWN_IMAGE_URL.match(value):
        return None
    if tag == "a" and attr == "href":
        if not (_OWN_IMAGE_URL.match(value) or re.match(r"^(https?:|mailto:)", value, re.I)):
            return None
    return value


def _relative_url(url: str) -> str | None:
    return url if _OWN_IMAGE_URL.match(url) else None


CLEANER = nh3.Cleaner(
    tags=_MD_TAGS,
    clean_content_tags={"script", "style"},
    attributes={"a": {"href", "title"}, "img": {"src", "alt", "title"}, "ol": {"start"}},
    attribute_filter=_allowed_attribute,
    allowed_classes={
        "span": set(HIGHLIGHT_CLASSES) | {"badge", "md-image"},
        "pre": {"code", "hl"},
        "img": {"trace-img"},
        "a": {"img-link", "remote-img"},
    },
    set_tag_attribute_values={"a": {"target": "_blank"}},
    link_rel="noopener noreferrer nofollow",
    url_schemes={"http", "https", "mailto"},
    url_relative=_relative_url,
    strip_comments=True,
)


def _md_highlight(code: str, lang: str, _attrs: str) -> str:
    code_html = highlight(code, lexer_for(lang) if lang else None)
    return f'<pre class="code hl"><code>{code_html}</code></pre>'


def _md_image(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = token.attrGet("src") or ""
    ctx: Context | None = env.get("ctx") if isinstance(env, dict) else None
    ref = image_ref(src)
    if ref is not None and ctx is not None:
        return image_html(src, ctx) or ""
    # Never load an image named by content: show what it named.
    label = esc(alt or "image")
    return (
        f'<span class="md-image"><span class="badge">image</span> {label} {esc(src[:200])}</span>'
    )


def _markdown() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "breaks": True},
    ).enable(["table", "strikethrough"])
    md.options["highlight"] = _md_highlight
    md.add_render_rule("image", _md_image)
    # markdown-it would accept data:image/... links; only our own references are images.
    return md


MARKDOWN = _markdown()


def markdown_html(text: str, ctx: Context | None = None) -> str:
    """Markdown rendered with raw HTML off, then sanitized."""
    text = _CONTROLS.sub(_control_picture, text.replace("\r\n", "\n"))
    rendered = MARKDOWN.render(text, {"ctx": ctx})
    return CLEANER.clean(rendered)


def markdown_block(text: str, budget: Budget, ctx: Context | None = None) -> str:
    if ctx is not None and ctx.as_text:
        return text_html(text, budget, css="as-text")
    shown = budget.take(text)
    if not shown:
        return ""
    html = markdown_html(shown, ctx)
    more = '<p class="fold-mark">…</p>' if len(shown) < len(text) else ""
    return f'<div class="md">{html}{more}</div>'


# --- Payload parts ---------------------------------------------------------------------

_TEXT_PART_TYPES = {"text", "input_text", "output_text"}
_IMAGE_PART_TYPES = {"image_url", "image", "input_image"}


def content_html(content: Any, budget: Budget, ctx: Context) -> str:
    """A message's content: null, a string (Markdown), a list of parts, or other JSON."""
    if content is None:
        return '<p class="no-text">no text</p>'
    if isinstance(content, str):
        if content == "":
            return '<p class="no-text">empty text</p>'
        image = image_html(content, ctx) if image_ref(content) else None
        return image or markdown_block(content, budget, ctx)
    if isinstance(content, list):
        out: list[str] = []
        for i, part in enumerate(content):
            if budget.exhausted:
                budget.folded = True
                rest = len(content) - i
                out.append(f'<p class="fold-mark">{rest} more part{"s" if rest != 1 else ""}…</p>')
                break
            out.append(part_html(part, budget, ctx))
        if not content:
            out.append('<p class="no-text">no parts</p>')
        return "".join(out)
    return json_html(content, budget)


def part_html(part: Any, budget: Budget, ctx: Context) -> str:
    if isinstance(part, str):
        return image_html(part, ctx) if image_ref(part) else markdown_block(part, budget, ctx)
    if isinstance(part, dict):
        kind = part.get("type")
        if kind in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            return markdown_block(part["text"], budget, ctx)
        if kind in _IMAGE_PART_TYPES:
            value = part.get(kind) if kind != "input_image" else part.get("image_url")
            if value is None:
                value = part.get("url", part.get("source"))
            if isinstance(value, dict) and "url" not in value and "data" in value:
                value = value["data"]
            found = image_html(value, ctx)
            if found is not None:
                return f'<div class="part part-image">{found}</div>'
    return f'<div class="part part-json">{json_html(part, budget)}</div>'


def output_html(value: Any, budget: Budget, ctx: Context) -> tuple[str, list[str]]:
    """A tool's output (or delta): JSON when it is or holds an object/array, else text.
    Returns the HTML and badges (plain strings) worth showing beside it."""
    badges: list[str] = []
    if isinstance(value, str):
        if image_ref(value):
            return image_html(value, ctx) or "", badges
        parsed = parse_json_text(value)
        if parsed is not None:
            return json_html(parsed, budget), badges
        if value == "":
            return '<p class="no-text">empty output</p>', badges
        if "\r\n" in value:
            badges.append("CRLF")
        return text_html(value, budget), badges
    return json_html(value, budget), badges


def arguments_html(arguments: Any, budget: Budget) -> str:
    if isinstance(arguments, str):
        return text_html(arguments, budget, css="args-unparsed")
    return json_html(arguments, budget)


def safe(html: str) -> SafeString:
    """Mark HTML built by this module safe for templates."""
    return mark_safe(html)  # noqa: S308 -- every piece above is escaped or sanitized
