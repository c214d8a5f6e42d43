"""explorer/render/json.py: JSON in its own key order, escaped, readable and coloured."""

from explorer.render.effort import JSON_PARSE_MAX_CHARS, Effort
from explorer.render.fold import Budget
from explorer.render.json import (
    highlight_json,
    json_html,
    parse_json_text,
    pretty_json,
    readable_json,
)


def test_json_keeps_key_order_and_escapes():
    value = {"zeta": 1, "alpha": {"<b>": "</pre><script>x</script>"}, "mid": [True, None]}
    text = pretty_json(value)
    assert text.index('"zeta"') < text.index('"alpha"') < text.index('"mid"')
    html = json_html(value, Budget.unlimited())
    assert "<script>" not in html and "&lt;/pre&gt;&lt;script&gt;" in html
    assert html.startswith('<pre class="code hl json">')
    assert '<span class="t">"zeta"</span>' in html
    assert '<span class="l">true</span>' in html


def test_json_escapes_bidi_and_controls():
    text = pretty_json({"k": "a\u202eb\x00c"})
    assert "\\u202e" in text and "\\u0000" in text
    assert "\u202e" not in text


def test_json_of_deep_values_does_not_fail():
    value: object = "leaf"
    for _ in range(200):
        value = [value]
    assert json_html(value, Budget.unlimited()).count("[") == 200


def test_parse_json_text():
    assert parse_json_text('  [1, {"a": 2}]', Effort()) == [1, {"a": 2}]
    assert parse_json_text('"just a string"', Effort()) is None
    assert parse_json_text("12", Effort()) is None
    assert parse_json_text("{bad", Effort()) is None
    assert parse_json_text('{"n": NaN}', Effort()) is None


def test_json_text_over_the_parse_cap_or_the_time_left_is_not_parsed():
    text = "[" + "0," * (JSON_PARSE_MAX_CHARS // 2) + "0]"
    assert parse_json_text(text, Effort()) is None
    assert parse_json_text(text[: JSON_PARSE_MAX_CHARS - 3] + "0]", Effort()) is not None
    assert parse_json_text("[1]", Effort(seconds=0)) is None


def test_strings_with_line_breaks_read_as_lines():
    text = readable_json({"new_str": "def f():\n    return 1\n", "escaped": "a\\nb"})
    assert text.splitlines() == [
        "{",
        '  "new_str": "def f():\\n',
        '        return 1\\n",',
        '  "escaped": "a\\\\nb"',
        "}",
    ]
    html = json_html({"k": "x\ny"}, Budget.unlimited())
    assert '<span class="s">"x\\n\n    y"</span>' in html


def test_json_highlighting_of_a_cut_preview():
    html = highlight_json('{\n  "key": "an unfinished <string')
    assert html.endswith('<span class="s">"an unfinished &lt;string</span>')
