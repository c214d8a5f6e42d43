"""JSON as the trace page shows it: indented in the value's own key order (never sorted),
a string's `\\n` escapes followed by real line breaks, coloured, folded to a preview."""

import re
from typing import Any

import orjson

from explorer.render.effort import Effort
from explorer.render.fold import Budget
from explorer.render.text import BIDI, BIDI_CODES, esc
from traces import jsontext

# Bidi characters inside JSON text, as the escapes JSON has for them.
_JSON_BIDI = {code: f"\\u{code:04x}" for code in BIDI_CODES}


def _indented(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _bidi_escaped(text: str) -> str:
    return text.translate(_JSON_BIDI) if BIDI.search(text) else text


def pretty_json(value: Any) -> str:
    """Indented JSON in the value's own key order (never sorted); bidi characters
    escaped so they cannot reorder what is shown."""
    return _bidi_escaped(_indented(value))


# A `\n` escape (not an escaped backslash followed by n) inside a JSON string.
_NEWLINE_ESCAPE = re.compile(r'(?<!\\)((?:\\\\)*)\\n(?!")')


def _readable(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        if "\\n" in line:
            indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
            line = _NEWLINE_ESCAPE.sub(rf"\1\\n\n{indent}", line)
        lines.append(line)
    return "\n".join(lines)


def readable_json(value: Any) -> str:
    """`pretty_json`, where a string's `\\n` escapes are followed by a real line break, so
    that code and text inside arguments and outputs read as lines; the escape itself
    stays visible."""
    return _readable(pretty_json(value))


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
    """`value` as readable, coloured JSON, folded to what `budget` allows. Only the part a
    preview shows is made readable and coloured (breaking lines after `\\n` escapes only
    adds characters, so it comes from as many characters of the pretty text); JSON too
    large for the effort left is shown plain."""
    text = _indented(value)
    cut = budget.chars is not None and len(text) > max(budget.chars, 0)
    # Only what is shown is searched for bidi characters (an escape is longer than the
    # character, so the head holds at least what the preview shows).
    head = _bidi_escaped(text[: max(budget.chars or 0, 0)] if cut else text)
    rich = budget.effort.may_colour_json(head)
    if rich:
        head = _readable(head)
    shown = budget.take(head)
    more = cut or len(shown) < len(head)
    budget.folded = budget.folded or more
    mark = '<span class="fold-mark">…</span>' if more else ""
    classes = f"code hl json {css}".strip() if rich else f"code json {css}".strip()
    return f'<pre class="{classes}">{highlight_json(shown) if rich else esc(shown)}{mark}</pre>'


def looks_like_json(text: str) -> bool:
    head = text[:64].lstrip()
    return bool(head) and head[0] in "[{"


def parse_json_text(text: str, effort: Effort) -> Any:
    """The object or array a string holds, else None; None too when the text is larger
    than `effort` lets a response parse (it is then shown as plain text)."""
    if not looks_like_json(text) or not effort.may_parse_json(text):
        return None
    try:
        value = jsontext.loads(text)
    except (jsontext.JsonError, ValueError):
        return None
    return value if isinstance(value, dict | list) else None
