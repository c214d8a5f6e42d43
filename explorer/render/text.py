"""Text made visible and escaped: line endings normalized, control and bidirectional
characters replaced by visible stand-ins, and human sizes."""

import re

from explorer.render.fold import Budget

# C0 controls except tab and line feed, DEL, and C1 controls.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides and marks can make text read differently from what it is.
BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
BIDI_CODES = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


def esc(text: str) -> str:
    """Escape for an HTML text node."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"


# One table for str.translate (C speed, whatever the number of controls).
VISIBLE_CONTROLS = {
    code: _picture(code)
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if code not in (0x09, 0x0A)
}
VISIBLE_MARKS = {
    **VISIBLE_CONTROLS, **{code: f"\u27e8U+{code:04X}\u27e9" for code in BIDI_CODES}
}


def visible_text(text: str) -> str:
    """Text with line endings normalized (CRLF and a lone CR shown as breaks) and every
    control or bidi character replaced by a visible stand-in. Not yet HTML-escaped."""
    text = text.replace("\r\n", "\n").replace("\r", "\u240d\n")
    if CONTROLS.search(text) or BIDI.search(text):
        text = text.translate(VISIBLE_MARKS)
    return text


def size_label(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    if n_bytes < 1024 * 1024:
        return f"{n_bytes / 1024:.0f} KB" if n_bytes >= 10 * 1024 else f"{n_bytes / 1024:.1f} KB"
    return f"{n_bytes / (1024 * 1024):.1f} MB"


def text_html(text: str, budget: Budget, *, css: str = "") -> str:
    shown = budget.take(text)
    more = '<span class="fold-mark">…</span>' if len(shown) < len(text) else ""
    classes = f"text {css}".strip()
    return f'<pre class="{classes}">{esc(visible_text(shown))}{more}</pre>'
