"""A block's payload as HTML: a message's content (text, parts, images), a tool's output
or delta, a call's arguments. Each piece comes from the other modules of this package,
escaped or sanitized there."""

from collections.abc import Callable
from typing import Any

from django.utils.safestring import SafeString

from explorer.render.context import Context
from explorer.render.fold import Budget
from explorer.render.images import image_html, image_ref
from explorer.render.json import json_html, looks_like_json, parse_json_text
from explorer.render.markdown import markdown_block
from explorer.render.text import esc, text_html, visible_text

TextRenderer = Callable[[str, Budget, Context], str]

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
        return _parts_html(content, budget, ctx, markdown_block)
    return json_html(content, budget)


def _parts_html(parts: list, budget: Budget, ctx: Context, text: TextRenderer) -> str:
    out: list[str] = []
    for i, part in enumerate(parts):
        if budget.exhausted:
            budget.folded = True
            out.append(_more(len(parts) - i, "part"))
            break
        out.append(part_html(part, budget, ctx, text=text))
    if not parts:
        out.append('<p class="no-text">no parts</p>')
    return "".join(out)


def part_html(
    part: Any, budget: Budget, ctx: Context, *, text: TextRenderer = markdown_block
) -> str:
    """One part of a content list; its text through `text` (Markdown for a message's
    words, preformatted for a tool's output)."""
    if isinstance(part, str):
        return image_html(part, ctx) if image_ref(part) else text(part, budget, ctx)
    if isinstance(part, dict):
        kind = part.get("type")
        if kind in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            return text(part["text"], budget, ctx)
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
        parsed = parse_json_text(value, budget.effort)
        if parsed is not None:
            return json_html(parsed, budget), badges
        if looks_like_json(value) and not budget.effort.may_parse_json(value):
            badges.append("JSON shown as text")
        if value == "":
            return '<p class="no-text">empty output</p>', badges
        if "\r\n" in value:
            badges.append("CRLF")
        return text_html(value, budget), badges
    if isinstance(value, list) and value and all(map(_is_content_part, value)):
        # MCP and OpenAI tool results: a list of text (and image) parts, shown as the text
        # they hold, every space kept, rather than as the JSON that wraps it.
        return _parts_html(value, budget, ctx, _preformatted), badges
    return json_html(value, budget), badges


def _is_content_part(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    return (kind in _TEXT_PART_TYPES and isinstance(part.get("text"), str)) or (
        kind in _IMAGE_PART_TYPES
    )


def _preformatted(text: str, budget: Budget, ctx: Context | None = None) -> str:
    return text_html(text, budget)


def arguments_html(arguments: Any, budget: Budget) -> str:
    """A call's arguments: JSON, except that an object holding a multi-line string (code,
    a patch, a file) shows each argument by name with such strings as the lines they
    hold, every space kept, instead of one JSON string full of `\\n` escapes."""
    if isinstance(arguments, str):
        return text_html(arguments, budget, css="args-unparsed")
    if isinstance(arguments, dict) and any(_multiline(v) for v in arguments.values()):
        return _arguments_by_name(arguments, budget)
    return json_html(arguments, budget)


def _multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value


def _arguments_by_name(arguments: dict, budget: Budget) -> str:
    out = ['<div class="args">']
    for i, (name, value) in enumerate(arguments.items()):
        if budget.exhausted:
            budget.folded = True
            out.append(_more(len(arguments) - i, "argument"))
            break
        shown = (
            text_html(value, budget, css="arg-text")
            if _multiline(value)
            else json_html(value, budget)
        )
        label = esc(visible_text(str(name)))
        out.append(f'<div class="arg"><span class="arg-name">{label}</span>{shown}</div>')
    out.append("</div>")
    return "".join(out)


def _more(rest: int, noun: str) -> str:
    return f'<p class="fold-mark">{rest} more {noun}{"s" if rest != 1 else ""}…</p>'


def safe(html: str) -> SafeString:
    """Mark HTML built by this package safe for templates (a SafeString, as mark_safe
    makes of a str, without its check for lazy strings: a page marks hundreds)."""
    # Every piece of this package is escaped or sanitized.
    return SafeString(html)
