"""A search hit's piece of a block's stored JSON text as a reader's line, the words searched
marked: the trace list's "where it matches" and the trace page's find-in-trace."""

import re

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from explorer.render.text import visible_text
from traces.selectors.search import SearchHit

_JSON_KEY = re.compile(r'(?<!\\)"?\s*[{,]?\s*"[A-Za-z_][\w-]{0,40}"\s*:\s*"?')
_JSON_PUNCTUATION = re.compile(r'(?<!\\)"\s*[,}\]]+\s*|[{\[]\s*"?')
# The end of a key the piece was cut in: `tent":"` of "content".
_CUT_KEY = re.compile(r'^[\w-]{0,40}"\s*:\s*"?')


def snippet(hit: SearchHit) -> str:
    """A hit's piece of stored JSON text as a reader's line: escapes of JSON read back,
    spaces collapsed, an ellipsis where it is cut."""
    text = hit.piece
    # JSON's keys and brackets are not what the reader looks for: the values are.
    if hit.cut_before:
        text = _CUT_KEY.sub("", text)
    text = _JSON_KEY.sub(" ", text)
    text = _JSON_PUNCTUATION.sub(" ", text)
    for escaped, plain in (("\\n", " "), ("\\t", " "), ('\\"', '"'), ("\\\\", "\\")):
        text = text.replace(escaped, plain)
    text = visible_text(" ".join(text.split()))  # no bidi control reorders the line
    return ("…" if hit.cut_before else "") + text + ("…" if hit.cut_after else "")


def highlighted(text: str, words: list[str]) -> SafeString:
    """`text` escaped, each occurrence of the words (in any case) in <mark>."""
    words = [w for w in words if w]
    if not words:
        return conditional_escape(text)
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)),
                         re.IGNORECASE)  # fmt: skip
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(conditional_escape(text[last : match.start()]))
        out.append(format_html("<mark>{}</mark>", match.group()))
        last = match.end()
    out.append(conditional_escape(text[last:]))
    return mark_safe("".join(out))  # noqa: S308 (every piece escaped above)
