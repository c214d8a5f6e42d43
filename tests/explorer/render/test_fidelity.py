"""explorer/render/fidelity.py and its use: text Markdown would change is shown as written
(issue 11 item 3); prose still reads as Markdown."""

import json

import pytest

from explorer.render.content import arguments_html, output_html
from explorer.render.fidelity import markdown_keeps
from explorer.render.fold import Budget
from explorer.render.markdown import markdown_block
from tests.conftest import SHARED_DATA
from tests.explorer.render.sample import CTX


@pytest.mark.parametrize(
    "text",
    [
        "def f(x):\n    return x + 1\n",
        "name      reward\nalpha     1.0\nbeta      0.0",
        "@@ -1,3 +1,3 @@\n-old line\n+new line",
        "diff --git a/x b/x\n--- a/x\n+++ b/x",
        "col\tcol2\n1\t2",
        r"path C:\new\* and \_escaped\_",
        "Tom &amp; Jerry",
        "  indented first line of a log",
        # Who&When (hand-crafted-1): fence markers written mid-sentence pair up as one
        # code span, and both ``` vanish
        "Python code (provided to it quoted in ```python code blocks), or sh shell "
        "scripts (provided to it quoted in ```sh code blocks).",
    ],
)
def test_it_keeps_code_logs_diffs_and_tables_as_written(text):
    assert not markdown_keeps(text)
    html = markdown_block(text, Budget.unlimited(), CTX)
    assert html.startswith('<pre class="text as-written">')


@pytest.mark.parametrize(
    "text",
    [
        "I will **check** the order, then call `get_order`.",
        "Steps:\n\n- look up the user\n  - by email\n- cancel\n\n1. one\n2. two",
        "Here is the fix:\n\n```python\ndef f(x):\n\treturn   x\n```\n\nDone.  Next step.",
        "| name  | reward |\n|-------|--------|\n| a     | 1      |",
    ],
)
def test_it_renders_prose_lists_fences_and_tables_as_markdown(text):
    assert markdown_keeps(text)
    assert markdown_block(text, Budget.unlimited(), CTX).startswith('<div class="md">')


def test_code_as_written_keeps_every_space_and_is_escaped():
    html = markdown_block("if x:\n    y = '<b>'  # two  spaces", Budget.unlimited(), CTX)
    assert "    y = '&lt;b&gt;'  # two  spaces" in html


def test_a_long_text_is_checked_in_linear_time():
    # A pathological line: many backslashes and spaces; one pass over it.
    text = ("\\" * 50_000 + " " * 50_000 + "&" * 50_000) * 4
    assert not markdown_keeps(text)


def test_real_swe_agent_code_argument_shows_as_the_lines_it_holds():
    traj = json.loads((SHARED_DATA / "swe-agent" / "demo_function_calling.traj").read_text())
    arguments = next(
        json.loads(call["function"]["arguments"])
        for step in traj["history"]
        for call in step.get("tool_calls") or []
        if "\\n" in call["function"]["arguments"]
    )
    html = arguments_html(arguments, Budget.unlimited())
    assert html.startswith('<div class="args">')
    assert '<span class="arg-name">text</span><pre class="text arg-text">' in html
    assert "from marshmallow.fields import TimeDelta\nfrom datetime import timedelta\n" in html
    assert "\\n" not in html


def test_single_line_arguments_stay_json_in_their_own_order():
    html = arguments_html({"b": "x", "a": 2}, Budget.unlimited())
    assert html.startswith('<pre class="code hl json">') and html.index('"b"') < html.index('"a"')


def test_arguments_by_name_fold_within_the_budget():
    arguments = {f"file{i}": "line\n" * 100 for i in range(20)}
    budget = Budget()
    html = arguments_html(arguments, budget)
    assert budget.folded and "more arguments…" in html


def test_arguments_names_are_escaped():
    html = arguments_html({"<img src=x>": "a\nb"}, Budget.unlimited())
    assert "<img" not in html and "&lt;img src=x&gt;" in html


def test_an_output_of_text_parts_shows_the_text_not_the_json_around_it():
    parts = [
        {"type": "text", "text": "total 8\n-rw-r--r--  1 root  root  12 a.py"},
        {"type": "text", "text": "    indented"},
    ]
    html, _ = output_html(parts, Budget.unlimited(), CTX)
    assert html.count('<pre class="text">') == 2
    assert "-rw-r--r--  1 root  root  12 a.py" in html and "    indented" in html
    assert '"type"' not in html


def test_an_output_list_that_is_not_all_parts_stays_json():
    html, _ = output_html([{"type": "text", "text": "a"}, 3], Budget.unlimited(), CTX)
    assert html.startswith('<pre class="code hl json">')
