"""Whether Markdown would show a text as written. Agent output is often code, logs, diffs
and whitespace tables: Markdown drops their indentation, collapses aligned columns, turns
`+`/`-` lines into lists and eats backslash escapes and entities. Such text is shown
preformatted instead; prose (and prose with fenced code) is still rendered as Markdown.

One pass over the lines, no backtracking pattern: linear in the text whatever it holds."""

import re

_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?: |$)")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_DIFF_START = ("@@ ", "+++ ", "--- a/", "diff --git ")
# A backslash before ASCII punctuation is an escape Markdown removes; an entity is decoded.
_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def markdown_keeps(text: str) -> bool:
    """True when rendering `text` as Markdown loses none of what was written."""
    fence: str | None = None
    in_list = False
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is not None:  # inside fenced code Markdown keeps every character
            if stripped.startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(stripped)
        if opened:
            fence = opened.group(1)[:3]
            continue
        if not stripped:
            continue
        if not _line_keeps(line, stripped, in_list):
            return False
        in_list = bool(_LIST_ITEM.match(stripped)) or (in_list and line[0] == " ")
    return True


def _line_keeps(line: str, stripped: str, in_list: bool) -> bool:
    if "\t" in line or line.startswith(_DIFF_START):
        return False
    if line[0] == " " and not (in_list or _LIST_ITEM.match(stripped)):
        return False  # indentation of code or of a layout
    if not stripped.startswith("|") and _aligned(stripped):
        return False  # columns aligned with spaces (a Markdown table's padding is kept)
    if "```" in stripped:
        return False  # a fence marker mid-line: Markdown pairs such runs as a code span
    if "\\" in stripped and _ESCAPE.search(stripped):
        return False
    return not ("&" in stripped and _ENTITY.search(stripped))


def _aligned(stripped: str) -> bool:
    """Three spaces in a row, or two after anything but the end of a sentence."""
    at = stripped.find("  ")
    while at >= 0:
        if stripped[at + 2 : at + 3] == " " or stripped[at - 1] not in ".!?:":
            return True
        at = stripped.find("  ", at + 2)
    return False
