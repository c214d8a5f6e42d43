"""Pathological inputs for the regexes that trace content meets (Pygments lexers, the
Markdown parser, the JSON highlighter): the shapes that make a backtracking regex engine
take exponential or polynomial time.

Used by tests/explorer/render/test_effort.py and by tests/explorer/lexer_survey.py (the
script that chose the highlighting allow-list of explorer/render/code.py).
"""

import signal
import string
from contextlib import contextmanager

# Every printable ASCII punctuation character, and the blanks.
SPECIALS = string.punctuation + " \t\n"

# What opens a string, a comment, an interpolation or a block in common languages.
OPENERS = (
    '"', "'", "`", '"""', "'''", "/*", "//", "#", "--", ";", "<!--", "(*", "{-", "%",
    'r"', "b'", 'f"', "${", "#{", '@"', "$'", "q(", "<<EOF\n", "<", "</", "[[", "{{", "{%",
    "\\", "/", "=~ /", "s/", "?", "::", "@", "$", "&", "0x", "1e", "'\\",
)  # fmt: skip


def lexer_inputs(n: int) -> list[tuple[str, str]]:
    """(name, text) pairs of about `n` characters each: runs of each special character,
    unclosed strings and comments (with runs of backslashes, the classic Pygments ReDoS),
    deep nesting, and long words followed by what makes a rule fail at the end."""
    half = max(1, n // 2)
    found: dict[str, str] = {}
    for c in SPECIALS:
        name = repr(c)
        found[f"run of {name}"] = c * n
        found[f"{name} then a word"] = c + "a" * n
        found[f"{name} then backslashes"] = c + "\\" * n
        found[f"{name} alternating with a letter"] = (c + "a") * half
        found[f"{name} alternating with a space"] = (c + " ") * half
        found[f"a word then {name}"] = "a" * n + c
        found[f"capitals then {name}"] = "A" * n + c
        found[f"digits then {name}"] = "1" * n + c
        found[f"spaces then {name}"] = " " * n + c
        found[f"word and spaces then {name}"] = "a " * half + c
    for opener in OPENERS:
        name = repr(opener)
        found[f"{name} then backslashes"] = opener + "\\" * n
        found[f"{name} then escapes"] = opener + "\\a" * half
        found[f"{name} then escaped quotes"] = opener + '\\"' * half
        found[f"{name} then a word"] = opener + "a" * n
        found[f"{name} then spaces"] = opener + " " * n
        found[f"{name} then lines"] = opener + "\n" * n
        found[f"{name} repeated"] = opener * max(1, n // len(opener))
        found[f"{name} then a word and a space, repeated"] = (opener + "a ") * max(
            1, n // (len(opener) + 2)
        )
    third = max(1, n // 3)
    found.update(
        {
            "nested parentheses": "(" * n,
            "nested brackets": "[" * n,
            "nested braces": "{" * n,
            "mixed nesting": "([{" * third,
            "tags without end": "<a " * third,
            "words and dots": "a." * half,
            "words and digits": "a1" * half,
            "numbers with exponents": "1e" * half,
            "words and colons": "a:" * half,
            "words and dashes": "a-" * half,
            "a call never closed": "a " * half + "(",
            "looks like XML (pygments#2931)": "<" * third + " " * third + ">" * third + "<",
            "GUID-like (pygments#3064)": "a" * n + "-",
            "unterminated string of escaped backslashes": '"' + "\\\\" * half,
            "comment of backslashes (pygments#3311)": "//" + "\\" * n,
            "Jinja macro (pygments#2355)": "{% macro a(" + "(" * n + ")%}" + " " * n,
            "whitespace then a bang": "a" + " " * n + "!",
            "tabs then a letter": "\t" * n + "x",
            "numbers and dots": "1." * half,
            "backslash-newline": "\\\n" * half,
            "lines of one char": "a\n" * half,
            "quoted quotes": "'\"" * half,
        }
    )
    return list(found.items())


def markdown_inputs(n: int) -> list[tuple[str, str]]:
    """Markdown that is slow for naive parsers: delimiter runs, deep nesting, unclosed
    constructs, long lines."""
    half, third = max(1, n // 2), max(1, n // 3)
    cases = {
        "asterisks": "*" * n,
        "alternating asterisks": "*a" * half,
        "underscores": "_a" * half,
        "backticks": "`" * n,
        "backtick runs of growing length": " ".join("`" * i for i in range(1, 200))
        * max(1, n // 20_000),
        "open brackets": "[" * n,
        "brackets and parentheses": "[a](" * third,
        "link openers": "[a]" * third,
        "images never closed": "![" * half,
        "angle brackets": "<" * n,
        "autolinks never closed": "<a:" * third,
        "nested block quotes": ">" * n + " a",
        "nested lists": "".join(" " * (2 * i) + "- a\n" for i in range(min(n // 20, 500))),
        "emphasis never closed": "**a " * third,
        "backslashes": "\\" * n,
        "entities": "&#" * half,
        "html-like": "<a " * third,
        "a table of pipes": "|" * n + "\n" + "|-" * half,
        "many table rows": "| a | b |\n|---|---|\n" + "| x | y |\n" * (n // 10),
        "fences never closed": "```\n" + "a\n" * half,
        "fence openers": "```\n" * (n // 4),
        "link reference definitions": "[a]: <" * third,
        "one long line": "a " * half,
        "long words": "a" * n,
        "headings": "#" * n,
        "setext underlines": "a\n=\n" * (n // 4),
        "emphasis mix": "*_" * half,
        "links in links": "[" * third + "a" + "](b)" * third,
        "quotes in titles": '[a](b "' + '\\"' * half,
        "tildes": "~" * n,
        "paragraphs of brackets": ("[*" * 1000 + "\n\n") * max(1, n // 2002),
        "paragraphs of images never closed": ("![" * 1000 + "\n\n") * max(1, n // 2002),
    }
    return list(cases.items())


def json_inputs(n: int) -> list[tuple[str, str]]:
    """Text that `highlight_json` and `readable_json` may meet (it is shown cut, so a
    string may be unclosed)."""
    half = max(1, n // 2)
    return [
        ("quotes", '"' * n),
        ("backslashes in a string", '"' + "\\" * n),
        ("escaped quotes", '"' + '\\"' * half),
        ("escaped newlines", '"' + "\\n" * half),
        ("escaped backslashes then n", '"' + "\\\\" * half + "n"),
        ("digits", "1" * n),
        ("exponents", "1e" * half),
        ("decimals", "1." * half),
        ("minus signs", "-" * n),
        ("literals", "truefalsenull" * max(1, n // 13)),
        ("brackets", "[" * n),
        ("colons", ":" * n),
    ]


class CpuTimeExceeded(AssertionError):
    pass


@contextmanager
def cpu_limit(seconds: float, what: str = "this"):
    """Fail once the process has spent `seconds` of CPU time inside the block, instead of
    waiting for a backtracking regex to end (Python's regex engine checks for signals while
    it matches, so the timer's exception interrupts it). Main thread only."""

    def expired(signum, frame):
        raise CpuTimeExceeded(f"{what} took more than {seconds} s of CPU")

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
