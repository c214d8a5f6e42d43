"""explorer/render/code.py: only allowed languages are highlighted, each within its size,
and none of them backtracks on crafted input; the lexers left out do."""

import pytest
from pygments.lexers import get_lexer_by_name
from pygments.lexers.shell import BashLexer

from explorer.render.code import (
    LANGUAGE_MAX_CHARS,
    BoundedBashLexer,
    Language,
    highlight,
    language_for,
)
from explorer.render.effort import HIGHLIGHT_MAX_CHARS, Effort
from explorer.render.markdown import markdown_html
from tests.explorer.pathological import CpuTimeExceeded, cpu_limit, lexer_inputs

SHORT = lexer_inputs(48)  # exponential backtracking shows long before 48 characters

# The slowest inputs the survey (tests/explorer/lexer_survey.py) found for each language,
# and the ones slow for many lexers; timed at each language's own size.
WORST_KNOWN = {
    "python": ["'\\n' alternating with a space"],
    "javascript": ["'{%' then escaped quotes", "'\\\\' then escaped quotes"],
    "typescript": ["words and dots", "'?' alternating with a letter"],
    "jsx": ["'<!--' then escaped quotes"],
    "tsx": ["'.' alternating with a letter", "words and dots"],
    "yaml": ["spaces then '\\t'", "run of '%'"],
    "toml": ['"\'\\\\" then backslashes'],
    "ini": ["'?' then spaces", "'0x' then spaces"],
    "html": ["'&' repeated"],
    "xml": ["'<<EOF\\n' then a word"],
    "css": ["'{{' then a word"],
    "go": ['\'"""\' then escaped quotes'],
    "rust": ["'/' repeated"],
    "java": ["'::' then lines", "';' then lines", "'{%' then lines"],
    "kotlin": ["run of '/'"],
    "c": ["'$' then lines", "'%' then lines", "'?' then lines", "'::' then lines"],
    "cpp": ['"\'" then lines', "'<!--' then lines", "'--' then lines"],
    "diff": ["Jinja macro (pygments#2355)", "run of '-'"],
    "ruby": ["'<<EOF\\n' then escapes"],
}
WORST_FOR_MANY = [
    "run of '\\n'", "'\\n' alternating with a space", "'\"' then backslashes", "spaces then '!'",
]  # fmt: skip


def lex(language: Language, text: str) -> None:
    for _ in language.lexer.get_tokens(text):
        pass


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LANGUAGE_MAX_CHARS))
def test_no_allowed_language_backtracks_on_short_crafted_input(name):
    language = language_for(name)
    assert language is not None
    for label, text in SHORT:
        with cpu_limit(0.05, f"{name} on {label}"):
            lex(language, text)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LANGUAGE_MAX_CHARS))
def test_each_allowed_language_meets_its_worst_known_input_in_a_tenth_of_a_second(name):
    language = language_for(name)
    assert language is not None and language.max_chars <= HIGHLIGHT_MAX_CHARS
    inputs = dict(lexer_inputs(language.max_chars))
    for label in [*WORST_KNOWN.get(name, []), *WORST_FOR_MANY]:
        # A tenth of a second, measured; the limit leaves room for a loaded machine.
        with cpu_limit(0.25, f"{name} on {label} ({language.max_chars} characters)"):
            lex(language, inputs[label])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("bash", "$'" + "\\" * 56),  # each backslash costs ~1.4x: 40 took 0.09 s here, 56 minutes
        ("scala", '"' + "\\" * 48),
        ("tads3", "//" + "\\" * 48),
        ("chapel", "'" + "\\" * 48),
    ],
)
def test_the_lexers_left_out_do_backtrack_and_are_not_used(name, text):
    pygments_lexer = get_lexer_by_name(name, stripnl=False, ensurenl=False)
    with pytest.raises(CpuTimeExceeded), cpu_limit(0.1, f"Pygments' {name} lexer"):
        for _ in pygments_lexer.get_tokens(text):
            pass
    # In a trace, the same code is shown at once: plain, or through the bounded lexer.
    with cpu_limit(0.05, f"a {name} code block in a trace"):
        html = markdown_html(f"```{name}\n{text}\n```")
    assert "\\" * 40 in html


def test_the_bounded_bash_lexer_gives_the_same_tokens_as_pygments():
    samples = [
        "echo $'tab\\there' $'\\101\\x41' $'quote\\'s' && ls -la | grep -v '^d' > out.txt",
        'for f in *.py; do python "$f" --flag=$((1 + 2)) 2>&1; done\n# comment\n',
        'cat <<EOF\nheredoc $HOME\nEOF\nexport A="b c"; [[ -f a ]] || exit 1',
    ]
    ours = BoundedBashLexer(stripnl=False, ensurenl=False)
    theirs = BashLexer(stripnl=False, ensurenl=False)
    for sample in samples:
        assert list(ours.get_tokens(sample)) == list(theirs.get_tokens(sample))


def test_only_allowed_names_find_a_language():
    assert language_for("Python") is language_for("py") is language_for("python3")
    assert isinstance(language_for("shell").lexer, BoundedBashLexer)
    for name in ("scala", "tads3", "csharp", "fish", "docker", "rst", "", "python python"):
        assert language_for(name) is None, name


def test_code_over_its_language_size_is_plain_text():
    c = language_for("c")
    assert c is not None
    code = "int x;\n" * (c.max_chars // 7 + 1)
    assert len(code) > c.max_chars
    assert highlight(code, c, Effort()) == code.replace("<", "&lt;")
    assert '<span class="k">int</span>' in highlight(code[: c.max_chars], c, Effort())


def test_a_page_highlights_at_most_its_share_of_characters():
    python = language_for("python")
    code = "def f():\n    return 1\n" * 40  # 880 characters
    effort = Effort(highlight_chars=2 * len(code))
    shown = [highlight(code, python, effort) for _ in range(3)]
    assert ['<span class="k">def</span>' in html for html in shown] == [True, True, False]


def test_no_highlighting_once_the_response_has_spent_its_time():
    python = language_for("python")
    assert highlight("def f(): pass", python, Effort(seconds=0)) == "def f(): pass"
