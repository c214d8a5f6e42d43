"""Numbers as a reader expects them: `0.1304`, not `0.13041750000000002`; `$0.1304` for a
cost, `3 min 50 s` for a duration, `1 759 244` for tokens. Only what a page shows
changes: what is stored and exported keeps every digit, and a page puts the exact value
in the title attribute (`metadata_number`).

In templates (a built-in of every template, explorer/settings.py):
`{{ n|number }}` (any number, grouped and rounded) and `{{ value|metric:key }}` (a
metadata value read by its key: a cost, a duration, tokens, an id).
"""

import math
import re
from typing import Any

from django import template

register = template.Library()

THIN_SPACE = "\u2009"  # between groups of digits: "1 759 244" (no locale's comma or dot)
GROUP_FROM = 10_000  # smaller integers are not grouped: "2025", "1567"
# Beyond these a float is shown in scientific notation (4 significant digits).
HUGE, TINY = 1e15, 1e-12
# A "duration" larger than this (in seconds: three years) is not one: an epoch time, say.
MAX_DURATION_SECONDS = 1e8

# What a metadata key says its number is (matched on the key in lower case). A duration
# in seconds unless the key ends in _ms; a key naming a moment (start_time, created_at,
# timestamp) is not a duration.
_COST = re.compile(r"cost|price|spend|(^|_)usd($|_)|dollars")
_DURATION = re.compile(
    r"(^|_)(duration|latency|elapsed|runtime|wall_?time|time_taken|seconds|secs)($|_)"
    r"|(^|_)(total|working|run|execution|exec|wall|agent|response|model)_time($|_)"
    r"|_(s|ms)$"
)
_MOMENT = re.compile(r"start|end|stamp|created|updated|(^|_)at$|date|epoch")
_MILLISECONDS = re.compile(r"(^|_)(ms|millis|milliseconds)$")
_TOKENS = re.compile(r"token")
# Integers that name something rather than count it: never grouped ("seed 4242424").
_NAMING = re.compile(r"(^|_)(id|ids|seed|epoch|trial|index|idx|year|port|version)$")


def grouped(n: int) -> str:
    """An integer with its thousands set apart by thin spaces: 1 759 244."""
    return f"{n:,}".replace(",", THIN_SPACE)


def _trimmed(text: str) -> str:
    """A fixed-point number without the zeros (and the point) that say nothing."""
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def number_text(value: int | float) -> str:
    """A number as a page shows it: an integer grouped from 10 000; a float with at most
    4 decimals (2 from 1 000 up, 4 significant digits below 1), grouped; a whole float as
    an integer; what is too large or too small for that in scientific notation."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return grouped(value) if abs(value) >= GROUP_FROM else str(value)
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size >= HUGE or (size and size < TINY):
        return f"{value:.4g}"
    if value == int(value):
        return number_text(int(value))
    if size >= 1:
        decimals = 4 if size < 1000 else 2
    else:
        decimals = 3 - math.floor(math.log10(size))  # 4 significant digits
    text = _trimmed(f"{value:,.{decimals}f}")
    return text.replace(",", THIN_SPACE) if size >= GROUP_FROM else text.replace(",", "")


def cost_text(cost: float | None) -> str:
    """A cost in dollars: $1,234.57 from $1 up, else to the hundredth of a cent ($0.1304),
    and a cost smaller than that to 2 significant digits ($0.000012)."""
    if cost is None:
        return ""
    if not math.isfinite(cost) or abs(cost) >= HUGE:  # no page of a hundred digits
        return f"${number_text(float(cost))}"
    if abs(cost) >= 1:
        return f"${cost:,.2f}"
    if cost and abs(cost) < 0.00005:
        return f"${_trimmed(f'{cost:.{1 - math.floor(math.log10(abs(cost)))}f}')}"
    return f"${_trimmed(f'{cost:.4f}')}"


def duration_text(seconds: float | None) -> str:
    """8.0 s, 3 min 50 s, 2 h 05 min (and 3e+20 s for what no run lasts)."""
    if seconds is None:
        return ""
    if not math.isfinite(seconds) or abs(seconds) >= MAX_DURATION_SECONDS:
        return f"{number_text(float(seconds))} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _kind(key: str) -> str:
    key = key.lower()
    if _COST.search(key):
        return "cost"
    if _TOKENS.search(key):
        return "tokens"
    if _DURATION.search(key) and not _MOMENT.search(key):
        return "milliseconds" if _MILLISECONDS.search(key) else "seconds"
    if _NAMING.search(key) or _MOMENT.search(key):
        return "name"
    return "number"


def metadata_number(key: Any, value: Any) -> str | None:
    """How a page shows a number of metadata under `key`, or None if `value` is not a
    number (a string, a bool, JSON...): its text as written is shown then."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    kind = _kind(str(key))
    if kind == "cost" and value >= 0:
        return cost_text(value)
    if kind in ("seconds", "milliseconds") and value >= 0:
        seconds = value / 1000 if kind == "milliseconds" else value
        if seconds < MAX_DURATION_SECONDS:
            return duration_text(seconds)
    if kind in ("tokens", "number") and isinstance(value, int):
        return grouped(value) if kind == "tokens" else number_text(value)
    if kind == "name":  # as written: "seed 4242424", "start_time 1752764458.49"
        return str(value)
    return number_text(value)


@register.filter
def number(value: Any) -> Any:
    """`{{ n|number }}`: a number as `number_text` shows it; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return number_text(value)


@register.filter
def metric(value: Any, key: Any) -> Any:
    """`{{ value|metric:key }}`: a metadata number read by its key; anything else as it is."""
    shown = metadata_number(key, value)
    return value if shown is None else shown


def tokens_text(trace: Any) -> tuple[str, str]:
    """The trace's tokens as the list shows them (the total, "" when unknown) and the
    detail for its title."""
    parts = (trace.input_tokens, trace.output_tokens)
    if parts == (None, None):
        return "", ""
    shown = [f"{label} {grouped(n)}" for label, n in zip(("in", "out"), parts, strict=True)
             if n is not None]  # fmt: skip
    return grouped(sum(n for n in parts if n is not None)), ", ".join(shown)
