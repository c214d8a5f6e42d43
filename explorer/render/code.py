"""Code highlighting with Pygments, for an allow-list of languages checked against
crafted input, within the bounds of explorer/render/effort.py. Every other language is
shown as plain preformatted text.

How the allow-list was chosen (Pygments 2.21.0; run the survey again on an upgrade):
`python -m tests.explorer.lexer_survey --size 40` timed every one of Pygments' 602 lexers
on the inputs of tests/explorer/pathological.py (runs of each special character, unclosed
strings and comments, runs of backslashes, deep nesting, the known Pygments ReDoS inputs).
27 took over 0.05 s on 40 characters, most because they backtrack exponentially (a few
more characters take minutes): ansys, bash, cddl, chapel, docker, factor, fancy, fish,
jlcon, maple, matlabsession, mcschema, ncl, pan, pug, registry, rego, rell,
restructuredtext, scala, scaml, slurm, smithy, tads3, tcsh, tnt, urbiscript. The languages
agents' traces commonly hold were then timed on the same inputs at 1,500 and 5,000
characters: most are quadratic on some input, so each allowed language has a size up to
which its worst known input takes well under 0.1 s (LANGUAGE_MAX_CHARS: at most 0.06 s on
these 2-core machines, median of five, a quarter of the test's limit; CI had found Java's
1,000 characters over 0.25 s on a loaded run, so the steepest were cut); C# (0.48 s on
1,500 characters) was left out. Bash, the language agents use most, is allowed through a
copy of Pygments' lexer with its one exponential rule rewritten.
tests/explorer/render/test_code.py checks each allowed language on every input, and on its
worst known inputs at its size.
"""

import re
from dataclasses import dataclass
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.lexers.shell import BashLexer
from pygments.token import Comment, Generic, Keyword, Literal, Name, Number, Operator, String

from explorer.render.effort import Effort
from explorer.render.text import esc

# --- Lexers ----------------------------------------------------------------------------

# `$'...'` strings: Pygments' alternatives `\\\\`, `\\[0-7]+` and `\\.` all match at a
# backslash, so an unclosed `$'` followed by n backslashes is tried in ~2^n ways (62 bytes:
# hours). `\\.|[^'\\]` matches exactly the same strings in one way.
_BASH_SLOW = r"(?s)\$'(\\\\|\\[0-7]+|\\.|[^'\\])*'"
_BASH_FAST = r"(?s)\$'(?:\\.|[^'\\])*'"


class BoundedBashLexer(BashLexer):
    """Pygments' BashLexer with its exponential `$'...'` rule rewritten."""

    name = "Bash (bounded)"
    aliases: list[str] = []
    filenames: list[str] = []
    tokens = {
        "data": [
            (_BASH_FAST, *rule[1:]) if rule[0] == _BASH_SLOW else rule
            for rule in BashLexer.tokens["data"]
        ]
    }


# The languages highlighted, each with the most characters of code it highlights: its
# worst known input at that size takes at most 0.06 s here (most lexers are quadratic on
# some input; C, C++ and Java steeply so: 1,500 characters of C take 0.36 s).
LANGUAGE_MAX_CHARS: dict[str, int] = {
    "python": 1500, "javascript": 1500, "typescript": 1000, "jsx": 1500, "tsx": 1000,
    "json": 1500, "yaml": 1000, "toml": 1500, "ini": 1000, "html": 1500, "xml": 1500,
    "css": 1500, "scss": 1500, "sql": 1500, "postgresql": 1500, "go": 1500, "rust": 1500,
    "kotlin": 1500, "swift": 1500, "java": 700, "cpp": 800, "c": 400, "bash": 1500,
    "diff": 1000, "ruby": 1500, "php": 1500,
}  # fmt: skip

# Language names a fenced code block may give (lower case), other than the names above.
ALIASES: dict[str, str] = {
    "py": "python", "python3": "python", "py3": "python",
    "js": "javascript", "mjs": "javascript", "node": "javascript", "ts": "typescript",
    "jsonl": "json", "yml": "yaml", "cfg": "ini", "svg": "xml", "postgres": "postgresql",
    "golang": "go", "rs": "rust", "kt": "kotlin", "h": "c", "c++": "cpp", "cc": "cpp",
    "hpp": "cpp", "rb": "ruby", "patch": "diff",
    "udiff": "diff", "sh": "bash", "shell": "bash", "zsh": "bash", "console": "bash",
    "shell-session": "bash", "terminal": "bash",
}  # fmt: skip


@dataclass(frozen=True)
class Language:
    lexer: Lexer
    max_chars: int


_LANG_RE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_languages: dict[str, Language] = {}


def _make_lexer(name: str) -> Lexer:
    if name == "bash":
        return BoundedBashLexer(stripnl=False, ensurenl=False)
    return get_lexer_by_name(name, stripnl=False, ensurenl=False)


def language_for(lang: str) -> Language | None:
    """The allowed language a fenced code block's language name names, else None."""
    lang = lang.lower()
    if not _LANG_RE.match(lang):
        return None
    name = ALIASES.get(lang, lang)
    if name not in LANGUAGE_MAX_CHARS:
        return None
    if name not in _languages:
        _languages[name] = Language(_make_lexer(name), LANGUAGE_MAX_CHARS[name])
    return _languages[name]


# --- Highlighting ----------------------------------------------------------------------

# Each short class of trace.css (".hl .k" ...) and the token types it marks; a token takes
# the class of its nearest listed type (Keyword.Constant is "l", other keywords "k").
# Unlisted: no span.
_CLASS_TOKENS: dict[str, tuple[Any, ...]] = {
    "c": (Comment,),
    "l": (Keyword.Constant,),
    "k": (Keyword, Operator.Word),
    "t": (Name.Tag,),
    "a": (Name.Attribute,),
    "b": (Name.Builtin,),
    "f": (Name.Function, Name.Class, Name.Decorator),
    "s": (String,),
    "m": (Number, Literal),
    "o": (Operator,),
    "gd": (Generic.Deleted,),
    "gi": (Generic.Inserted,),
    "gh": (Generic.Heading, Generic.Subheading),
}
_TOKEN_CLASS = {ttype: cls for cls, ttypes in _CLASS_TOKENS.items() for ttype in ttypes}
HIGHLIGHT_CLASSES = frozenset(_CLASS_TOKENS)
_class_cache: dict[Any, str] = {}


def _token_class(ttype: Any) -> str:
    found = _class_cache.get(ttype)
    if found is None:
        nearest = ttype
        while nearest not in _TOKEN_CLASS and nearest.parent is not None:
            nearest = nearest.parent
        found = _class_cache[ttype] = _TOKEN_CLASS.get(nearest, "")
    return found


def highlight(code: str, language: Language | None, effort: Effort) -> str:
    """Escaped `code`, tokens wrapped in class-only spans when its language is allowed, it
    is short enough for it, and `effort` allows it; else escaped only. `code` is already
    visible text."""
    if language is None or len(code) > language.max_chars or not effort.may_highlight(code):
        return esc(code)
    out: list[str] = []
    pending_cls, pending = "", []
    for ttype, value in language.lexer.get_tokens(code):
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
