"""explorer/render/content.py: a block's payload: message content and its parts, tool
outputs, arguments."""

from explorer.render.content import arguments_html, content_html, output_html
from explorer.render.effort import JSON_PARSE_MAX_CHARS
from explorer.render.fold import Budget
from tests.explorer.render.sample import CTX, SHA


def test_content_null_empty_string_and_parts():
    assert "no text" in content_html(None, Budget(), CTX)
    assert "empty" in content_html("", Budget(), CTX)
    html = content_html(
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
        Budget.unlimited(),
        CTX,
    )
    assert "<strong>hi</strong>" in html
    assert html.count(f'src="/t/tr_x/images/{SHA}"') == 2
    assert 'href="https://example.com/a.png"' in html and "remote image" in html
    assert '"audio"' in html and "&lt;x&gt;" in html


def test_output_that_holds_json_is_pretty_printed():
    html, badges = output_html('{"b": 1, "a": [1, 2]}', Budget.unlimited(), CTX)
    assert 'class="code hl json"' in html
    assert html.index('"b"') < html.index('"a"')
    text, badges = output_html("plain\r\ntext", Budget.unlimited(), CTX)
    assert text.startswith('<pre class="text">') and badges == ["CRLF"]
    number, _ = output_html(42, Budget.unlimited(), CTX)
    assert '<span class="m">42</span>' in number
    not_json, _ = output_html("{not json", Budget.unlimited(), CTX)
    assert not_json.startswith('<pre class="text">')


def test_output_of_json_text_over_the_parse_cap_is_plain_text_with_a_badge():
    text = "[" + "0," * (JSON_PARSE_MAX_CHARS // 2) + "0]"
    html, badges = output_html(text, Budget.unlimited(), CTX)
    assert html.startswith('<pre class="text">[0,0,') and badges == ["JSON shown as text"]


def test_unparsed_arguments_are_shown_as_written():
    html = arguments_html("{'cmd': <ls>", Budget.unlimited())
    assert html == "<pre class=\"text args-unparsed\">{'cmd': &lt;ls&gt;</pre>"


def test_budget_is_shared_by_the_parts_of_a_block():
    budget = Budget()
    parts = [{"type": "text", "text": "word " * 400} for _ in range(5)]
    html = content_html(parts, budget, CTX)
    assert budget.folded
    assert "more parts" in html
    assert len(html) < 5_000
