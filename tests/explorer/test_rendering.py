"""explorer/rendering.py: safe Markdown, JSON in its own key order, code, text, images,
folding."""

from html.parser import HTMLParser

import pytest

from explorer import rendering as r

SHA = "ab" * 32
CTX = r.Context(image_url=lambda sha: f"/t/tr_x/images/{sha}", image_types={SHA: "image/png"})


def md(text: str) -> str:
    return r.markdown_html(text, CTX)


# --- Markdown --------------------------------------------------------------------------


def test_markdown_renders_the_usual_things():
    html = md("# Title\n\n**bold** *em* `code`\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |")
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html and "<em>em</em>" in html
    assert "<code>code</code>" in html
    assert "<li>a</li>" in html
    assert "<td>1</td>" in html


def test_raw_html_is_text():
    html = md("<script>alert(1)</script> <img src=x onerror=alert(1)> <b>b</b>")
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "java&#115;cript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "data:image/svg+xml;base64,PHN2Zz4=",
        "file:///etc/passwd",
        "/admin/",
        "//evil.example/x",
        "ftp://example.com/x",
    ],
)
def test_only_http_and_mailto_links_survive(link):
    html = md(f"[click]({link})")
    assert "href" not in html, html


def test_safe_links_get_rel_and_a_new_tab():
    html = md("[site](https://example.com/a?b=1&c=2) and [mail](mailto:a@example.com)")
    assert 'href="https://example.com/a?b=1&amp;c=2"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert 'target="_blank"' in html
    assert 'href="mailto:a@example.com"' in html


def test_markdown_images_never_load_remote_urls():
    html = md("![tracker](https://evil.example/pixel.png) ![x](javascript:alert(1))")
    assert "<img" not in html
    assert "https://evil.example/pixel.png" in html  # shown as text


def test_markdown_image_of_a_stored_image_is_shown():
    html = md(f"![shot](data:image/png;base64,te-image:sha256:{SHA})")
    assert f'<img class="trace-img" src="/t/tr_x/images/{SHA}"' in html


def test_code_fence_is_highlighted_with_classes_only():
    html = md("```python\ndef f(x):\n    return 1  # note\n```")
    assert '<pre class="code hl"><code>' in html
    assert '<span class="k">def</span>' in html
    assert '<span class="c"># note</span>' in html
    assert "style=" not in html


def test_unknown_or_hostile_fence_language_is_plain_text():
    html = md('```"><script>alert(1)</script>\nplain <b>\n```')
    assert "<script" not in html and "plain &lt;b&gt;" in html
    assert "alert" not in html.split("<pre")[0] or "&lt;script" in html


def test_markdown_keeps_no_attribute_from_content():
    html = md('[a](https://x.example "t\\" onmouseover=\\"alert(1)")')

    class Attributes(HTMLParser):
        names: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.names.extend(name for name, _ in attrs)

    parser = Attributes()
    parser.feed(html)
    assert set(parser.names) == {"href", "title", "target", "rel"}


# --- JSON, text, code ------------------------------------------------------------------


def test_json_keeps_key_order_and_escapes():
    value = {"zeta": 1, "alpha": {"<b>": "</pre><script>x</script>"}, "mid": [True, None]}
    text = r.pretty_json(value)
    assert text.index('"zeta"') < text.index('"alpha"') < text.index('"mid"')
    html = r.json_html(value, r.Budget.unlimited())
    assert "<script>" not in html and "&lt;/pre&gt;&lt;script&gt;" in html
    assert html.startswith('<pre class="code hl json">')
    assert '<span class="t">"zeta"</span>' in html
    assert '<span class="l">true</span>' in html


def test_json_escapes_bidi_and_controls():
    text = r.pretty_json({"k": "a\u202eb\x00c"})
    assert "\\u202e" in text and "\\u0000" in text
    assert "\u202e" not in text


def test_json_of_deep_values_does_not_fail():
    value: object = "leaf"
    for _ in range(200):
        value = [value]
    assert r.json_html(value, r.Budget.unlimited()).count("[") == 200


def test_text_shows_controls_and_line_endings():
    html = r.text_html("a\r\nb\x08c\rd\x00e\x1b[0m\u202ef", r.Budget.unlimited())
    assert html == '<pre class="text">a\nb\u2408c\u240d\nd\u2400e\u241b[0m\u27e8U+202E\u27e9f</pre>'


def test_text_is_escaped():
    html = r.text_html("</pre><script>alert(1)</script>&amp;", r.Budget.unlimited())
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;" in html


def test_output_that_holds_json_is_pretty_printed():
    html, badges = r.output_html('{"b": 1, "a": [1, 2]}', r.Budget.unlimited(), CTX)
    assert 'class="code hl json"' in html
    assert html.index('"b"') < html.index('"a"')
    text, badges = r.output_html("plain\r\ntext", r.Budget.unlimited(), CTX)
    assert text.startswith('<pre class="text">') and badges == ["CRLF"]
    number, _ = r.output_html(42, r.Budget.unlimited(), CTX)
    assert '<span class="m">42</span>' in number
    not_json, _ = r.output_html("{not json", r.Budget.unlimited(), CTX)
    assert not_json.startswith('<pre class="text">')


def test_parse_json_text():
    assert r.parse_json_text('  [1, {"a": 2}]') == [1, {"a": 2}]
    assert r.parse_json_text('"just a string"') is None
    assert r.parse_json_text("12") is None
    assert r.parse_json_text("{bad") is None
    assert r.parse_json_text('{"n": NaN}') is None


def test_unparsed_arguments_are_shown_as_written():
    html = r.arguments_html("{'cmd': <ls>", r.Budget.unlimited())
    assert html == "<pre class=\"text args-unparsed\">{'cmd': &lt;ls&gt;</pre>"


# --- Content and images ----------------------------------------------------------------


def test_content_null_empty_string_and_parts():
    assert "no text" in r.content_html(None, r.Budget(), CTX)
    assert "empty" in r.content_html("", r.Budget(), CTX)
    html = r.content_html(
        [
            {"type": "text", "text": "**hi**"},
            {
                "type": "image_url",
                "image_url": {"url": f"data:image/png;base64,te-image:sha256:{SHA}"},
            },
            {"type": "image_url", "image_url": "https://example.com/a.png"},
            {"type": "image", "image": f"base64_img: te-image:sha256:{SHA}"},
            {"type": "audio", "data": "<x>"},
        ],
        r.Budget.unlimited(),
        CTX,
    )
    assert "<strong>hi</strong>" in html
    assert html.count(f'src="/t/tr_x/images/{SHA}"') == 2
    assert 'href="https://example.com/a.png"' in html and "remote image" in html
    assert '"audio"' in html and "&lt;x&gt;" in html


def test_images_other_than_raster_are_downloads():
    svg_sha = "cd" * 32
    html = r.image_html(f"data:image/svg+xml;base64,te-image:sha256:{svg_sha}", CTX)
    assert "<img" not in html and "download" in html
    # A type learnt from the store wins over the reference's.
    ctx = r.Context(image_url=CTX.image_url, image_types={svg_sha: "image/svg+xml"})
    html = r.image_html(f"base64_img: te-image:sha256:{svg_sha}", ctx)
    assert "<img" not in html


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "data:text/html,<script>", "https://x.example/a b", "vbscript:x", 7],
)
def test_image_html_refuses_what_is_not_an_image(url):
    html = r.image_html(url, CTX)
    assert html is None or ("<img" not in html and "href" not in html)


def test_inline_data_image_that_is_not_stored_is_not_shown():
    html = r.image_html("data:image/png;base64,iVBORw0KGgo=", CTX)
    assert "<img" not in html and "not shown" in html


# --- Folding ---------------------------------------------------------------------------


def test_budget_folds_by_lines_and_characters():
    lines = "\n".join(f"line {n}" for n in range(100))
    budget = r.Budget()
    shown = budget.take(lines)
    assert budget.folded
    assert shown.count("\n") == r.PREVIEW_LINES
    budget = r.Budget()
    one_line = "x" * 10_000
    assert len(budget.take(one_line)) == r.PREVIEW_CHARS and budget.folded
    budget = r.Budget()
    assert budget.take("short") == "short" and not budget.folded
    unlimited = r.Budget.unlimited()
    assert unlimited.take(one_line) == one_line and not unlimited.folded


def test_budget_is_shared_by_the_parts_of_a_block():
    budget = r.Budget()
    parts = [{"type": "text", "text": "word " * 400} for _ in range(5)]
    html = r.content_html(parts, budget, CTX)
    assert budget.folded
    assert "more parts" in html
    assert len(html) < 5_000


def test_markdown_preview_is_markdown_of_the_beginning():
    text = "# Head\n\n" + "\n".join(f"- item {n}" for n in range(100))
    budget = r.Budget()
    html = r.markdown_block(text, budget, CTX)
    assert budget.folded and "<h1>Head</h1>" in html and "item 99" not in html
    assert 'class="fold-mark"' in html


def test_size_label():
    assert r.size_label(10) == "10 B"
    assert r.size_label(2048) == "2.0 KB"
    assert r.size_label(300 * 1024) == "300 KB"
    assert r.size_label(3 * 1024 * 1024) == "3.0 MB"


def test_strings_with_line_breaks_read_as_lines():
    text = r.readable_json({"new_str": "def f():\n    return 1\n", "escaped": "a\\nb"})
    assert text.splitlines() == [
        "{",
        '  "new_str": "def f():\\n',
        '        return 1\\n",',
        '  "escaped": "a\\\\nb"',
        "}",
    ]
    html = r.json_html({"k": "x\ny"}, r.Budget.unlimited())
    assert '<span class="s">"x\\n\n    y"</span>' in html


def test_json_highlighting_of_a_cut_preview():
    html = r.highlight_json('{\n  "key": "an unfinished <string')
    assert html.endswith('<span class="s">"an unfinished &lt;string</span>')
