"""Markdown from trace content: rendered with raw HTML off, then sanitized by nh3 with a
small allow-list; plain preformatted text when it is too long for the effort left."""

import re

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from explorer.render.code import HIGHLIGHT_CLASSES, highlight, language_for
from explorer.render.context import Context
from explorer.render.effort import Effort
from explorer.render.fidelity import markdown_keeps
from explorer.render.fold import Budget
from explorer.render.images import OWN_IMAGE_URL, image_html, image_ref
from explorer.render.text import BIDI, CONTROLS, VISIBLE_MARKS, esc, text_html, visible_text

_MD_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "b", "i", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr",
    "th", "td", "img", "span",
}  # fmt: skip


def _allowed_attribute(tag: str, attr: str, value: str) -> str | None:
    if tag == "img" and attr == "src" and not OWN_IMAGE_URL.match(value):
        return None
    if tag == "a" and attr == "href":
        if not (OWN_IMAGE_URL.match(value) or re.match(r"^(https?:|mailto:)", value, re.I)):
            return None
    return value


def _relative_url(url: str) -> str | None:
    return url if OWN_IMAGE_URL.match(url) else None


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


def _md_fence(self, tokens, idx, options, env) -> str:
    """A fenced code block, highlighted if its language is allowed and the effort left
    allows it."""
    token = tokens[idx]
    info = unescapeAll(token.info).strip() if token.info else ""
    lang = info.split(maxsplit=1)[0] if info else ""
    effort = env.get("effort") if isinstance(env, dict) else None
    code_html = highlight(token.content, language_for(lang) if lang else None, effort or Effort())
    return f'<pre class="code hl"><code>{code_html}</code></pre>\n'


def _bounded_inline(state: StateCore) -> None:
    """markdown-it's `inline` rule (emphasis, links, code spans... of each paragraph,
    heading or table cell) for the runs the effort left allows; the others stay text."""
    effort = state.env.get("effort") if isinstance(state.env, dict) else None
    effort = effort or Effort()
    for token in state.tokens:
        if token.type != "inline":
            continue
        if token.children is None:
            token.children = []
        if effort.may_parse_inline(token.content):
            state.md.inline.parse(token.content, state.md, state.env, token.children)
            continue
        for n, line in enumerate(token.content.split("\n")):
            if n:
                token.children.append(Token("softbreak", "br", 0))
            text = Token("text", "", 0)
            text.content = line
            token.children.append(text)


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
    md.core.ruler.at("inline", _bounded_inline)
    md.add_render_rule("fence", _md_fence)
    md.add_render_rule("image", _md_image)
    # markdown-it would accept data:image/... links; only our own references are images.
    return md


MARKDOWN = _markdown()


def markdown_html(text: str, ctx: Context | None = None, effort: Effort | None = None) -> str:
    """Markdown rendered with raw HTML off, then sanitized; plain preformatted text when
    it is too long for the effort left (explorer/render/effort.py)."""
    effort = effort or Effort()
    text = text.replace("\r\n", "\n")
    if not effort.may_parse_markdown(text):
        return f'<pre class="text">{esc(visible_text(text))}</pre>'
    if CONTROLS.search(text) or BIDI.search(text):  # no bidi control reorders the text
        text = text.translate(VISIBLE_MARKS)
    rendered = MARKDOWN.render(text, {"ctx": ctx, "effort": effort})
    return CLEANER.clean(rendered)


def markdown_block(text: str, budget: Budget, ctx: Context | None = None) -> str:
    if ctx is not None and ctx.as_text:
        return text_html(text, budget, css="as-text")
    shown = budget.take(text)
    if not shown:
        return ""
    if not markdown_keeps(shown):
        more = '<span class="fold-mark">…</span>' if len(shown) < len(text) else ""
        return f'<pre class="text as-written">{esc(visible_text(shown))}{more}</pre>'
    html = markdown_html(shown, ctx, budget.effort)
    more = '<p class="fold-mark">…</p>' if len(shown) < len(text) else ""
    return f'<div class="md">{html}{more}</div>'
