"""A block's payload as HTML: a message's content (text, parts, images), a tool's output
or delta, a call's arguments. Each piece comes from the other modules of this package,
escaped or sanitized there."""

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from explorer.render.context import Context
from explorer.render.fold import Budget
from explorer.render.images import image_html, image_ref
from explorer.render.json import json_html, looks_like_json, parse_json_text
from explorer.render.markdown import markdown_block
from explorer.render.text import text_html

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
    return json_html(value, budget), badges


def arguments_html(arguments: Any, budget: Budget) -> str:
    if isinstance(arguments, str):
        return text_html(arguments, budget, css="args-unparsed")
    return json_html(arguments, budget)


def safe(html: str) -> SafeString:
    """Mark HTML built by this package safe for templates."""
    return mark_safe(html)  # noqa: S308 -- every piece of this package is escaped or sanitized
