"""Rendering in bounded time (explorer/render/effort.py): no trace content, however
crafted, makes a formatter or a page take long. Each check runs under a CPU-time limit
that interrupts a runaway regex instead of waiting for it."""

import pytest
from django.utils import timezone

from explorer.render.context import Context
from explorer.render.effort import (
    JSON_PARSE_MAX_CHARS,
    JSON_RICH_MAX_CHARS,
    MARKDOWN_INLINE_MAX_CHARS,
    MARKDOWN_MAX_CHARS,
    Effort,
)
from explorer.render.fold import Budget
from explorer.render.json import json_html
from explorer.render.markdown import markdown_html
from explorer.render.text import text_html
from explorer.trace_page import CHUNK_BLOCKS
from tests.explorer.conftest import import_traces
from tests.explorer.pathological import cpu_limit, json_inputs, lexer_inputs, markdown_inputs
from traces.models import Block, Dataset, Trace

pytestmark = pytest.mark.slow  # CPU budgets measured on the worst content

CTX = Context(image_url=lambda sha: f"/t/tr_x/images/{sha}")
TOOL_RESULT_BYTES = 2 * 1024 * 1024  # the largest payload a trace may hold


@pytest.mark.parametrize(("name", "text"), markdown_inputs(MARKDOWN_MAX_CHARS))
def test_markdown_of_crafted_text_renders_in_half_a_second(name, text):
    with cpu_limit(0.5, f"Markdown of {name}"):
        html = markdown_html(text, CTX, Effort())
    assert html


def test_markdown_too_long_to_parse_is_plain_text():
    text = "**bold** " * (MARKDOWN_MAX_CHARS // 9 + 1)
    html = markdown_html(text, CTX, Effort())
    assert html.startswith('<pre class="text">') and "<strong>" not in html


def test_markdown_keeps_its_blocks_but_not_the_inline_formatting_of_a_long_paragraph():
    paragraph = "**bold** " * (MARKDOWN_INLINE_MAX_CHARS // 9 + 1)
    html = markdown_html(f"# Title\n\n{paragraph}\n\n- **item**", CTX, Effort())
    assert "<h1>Title</h1>" in html and "<li><strong>item</strong></li>" in html
    assert "<p>**bold** **bold** " in html


def test_markdown_is_plain_text_once_the_response_has_spent_its_time():
    html = markdown_html("# Title\n\n**bold**", CTX, Effort(seconds=0))
    assert html == '<pre class="text"># Title\n\n**bold**</pre>'


@pytest.mark.parametrize(("name", "text"), json_inputs(TOOL_RESULT_BYTES))
def test_json_of_crafted_strings_renders_in_a_few_tenths_of_a_second(name, text):
    for value in ([text], {"key": text, "more": [text[:1000]] * 3}):
        with cpu_limit(0.4, f"JSON of {name}, in full"):
            json_html(value, Budget.unlimited())
        with cpu_limit(0.1, f"JSON of {name}, as a preview"):
            json_html(value, Budget())


def test_json_too_long_to_colour_is_plain_text():
    value = {"key": "x" * JSON_RICH_MAX_CHARS}
    assert '<span class="t">' not in json_html(value, Budget.unlimited())
    assert '<span class="t">' in json_html(value, Budget())  # its preview is short


@pytest.mark.parametrize("char", ["\x01", "\u202e", "\r", "\x85"])
def test_text_of_control_characters_renders_at_c_speed(char):
    text = char * (TOOL_RESULT_BYTES // len(char.encode()))
    with cpu_limit(0.5, f"text of {char!r}"):
        html = text_html(text, Budget.unlimited())
    assert len(html) > len(text)


# --- A whole page ------------------------------------------------------------------------


def worst_trace() -> list[dict]:
    """A chat trace of 150 rows holding the worst content found: Markdown paragraphs of
    brackets, code blocks that backtrack (Bash's exponential rule, C and Python's
    quadratic inputs at their size), tool calls and results of crafted JSON."""
    bash = "```bash\n$'" + "\\" * 62 + "\n```\n\n"
    c_code = "```c\n$" + "\n" * 690 + "```\n\n"
    python = "```python\n" + dict(lexer_inputs(1400))["'\\n' alternating with a space"] + "```"
    brackets = ("[*" * 300 + "\n\n") * 2
    json_text = dict(json_inputs(1200))
    events = []
    for n in range(150):
        events.append({"role": "user", "content": brackets + bash})
        calls = [
            {
                "id": f"call_{n}_{k}",
                "type": "function",
                "function": {"name": "run", "arguments": {"q": json_text["quotes"]}},
            }
            for k in range(2)
        ]
        events.append({"role": "assistant", "content": c_code + python, "tool_calls": calls})
        for k in range(2):
            events.append(
                {"role": "tool", "tool_call_id": f"call_{n}_{k}", "content": json_text["exponents"]}
            )
    return events


def warm_up(org, client) -> None:
    """What the first page of a process costs whatever it shows (templates compiled...)."""
    trace = import_traces(org, "ordinary", [[{"role": "user", "content": "**hi**"}]])[0]
    assert client.get(f"/t/{trace.pk}/").status_code == 200


def test_a_page_of_the_worst_content_renders_in_under_a_second_of_cpu(org, member_client):
    trace = import_traces(org, "worst", [worst_trace()])[0]
    warm_up(org, member_client)
    with cpu_limit(1.0, "the trace page"):
        response = member_client.get(f"/t/{trace.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="row"' in html and 'class="more-rows"' in html


def test_the_full_view_of_the_largest_crafted_block_renders_in_under_a_second(
    org, member_client
):
    text = dict(markdown_inputs(60_000))["paragraphs of brackets"]  # the 64 KB limit
    output = dict(json_inputs(TOOL_RESULT_BYTES // 2))["quotes"]
    events = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c", "content": '{"out": "' + output + '"}'},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "d", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "d", "content": "\u202e" * (TOOL_RESULT_BYTES // 3)},
    ]  # fmt: skip
    trace = import_traces(org, "worst-full", [events])[0]
    warm_up(org, member_client)
    for block in trace.blocks.filter(sub_type__in=["MESSAGE", "TOOL_RESULT"]):
        with cpu_limit(1.0, f"the full view of a {block.sub_type}"):
            response = member_client.get(f"/t/{trace.pk}/b/{block.pk}/full")
        assert response.status_code == 200


@pytest.fixture
def busy_turn(org):
    """One assistant turn that made 3,000 tool calls, each answered."""
    calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for n in range(3000)
    ]
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": f"call_{n}", "content": "ok"} for n in range(3000)),
        {"role": "assistant", "content": "done"},
    ]
    return import_traces(org, "busy", [events])[0]


def test_a_turn_of_thousands_of_tool_calls_opens_in_under_a_second(org, member_client, busy_turn):
    warm_up(org, member_client)
    with cpu_limit(1.0, "the trace page"):
        response = member_client.get(f"/t/{busy_turn.pk}/")
    html = response.content.decode()
    first = html.count('class="cell cell-act"')
    assert 0 < first <= CHUNK_BLOCKS // 2
    more = f"/t/{busy_turn.pk}/?after=1&amp;acts={first}"
    assert f'hx-get="{more}"' in html
    assert f"More of row 2 (acts {first + 1}–3000), then the next rows" in html
    assert f'href="/t/{busy_turn.pk}/?after=1&amp;acts={first}#row-1-{first}"' in html

    with cpu_limit(1.0, "the next chunk"):
        chunk = member_client.get(more.replace("&amp;", "&"), HTTP_HX_REQUEST="true")
    body = chunk.content.decode()
    assert f'<div class="row" id="row-1-{first}">' in body
    assert f"Row 2 continued: acts {first + 1}&ndash;" in body
    assert body.count('class="cell cell-act"') > 0 and "call_0<" not in body


def test_a_permalink_to_the_last_call_of_a_long_turn_opens_beside_it(member_client, busy_turn):
    last = busy_turn.blocks.get(sub_type="TOOL_CALL", call_id="call_2999")
    with cpu_limit(1.0, "the page around a block"):
        response = member_client.get(f"/t/{busy_turn.pk}/?focus={last.pk}")
    html = response.content.decode()
    assert f'id="{last.pk}"' in html
    assert "Row 2 continued: acts 2998&ndash;3000 of 3000" in html
    assert "done<" in html  # and the rows after it


# --- Tool outputs that are JSON text (harden F1) ----------------------------------------

# JSON text whose parsing allocates the most per character: about 0.4 µs a character to
# parse and walk, so that one 2 MB output took 0.8 s of CPU before it was capped.
def empty_lists(n_chars: int) -> str:
    return "[" + "[]," * (n_chars // 3 - 1) + "[]]"


def tool_turns(outputs: list[str]) -> list[dict]:
    """A chat trace where each output answers a tool call of its own turn."""
    events: list[dict] = []
    for n, output in enumerate(outputs):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        events += [
            {"role": "user", "content": f"step {n}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": output},
        ]
    return events


CRAFTED_JSON_TEXT_TRACES = {
    "many big JSON-text outputs": [empty_lists(TOOL_RESULT_BYTES - 16)] * 4,
    "many outputs just under the parse cap": [empty_lists(JSON_PARSE_MAX_CHARS - 3)] * 60,
    "deeply nested JSON text": ["[" * 1000 + "]" * 1000, "[" * 250 + "]" * 250] * 60,
    "a huge single line": [
        '{"out": "' + "a" * (TOOL_RESULT_BYTES - 16) + '"}', "x" * (TOOL_RESULT_BYTES - 16),
    ],
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CRAFTED_JSON_TEXT_TRACES))
def test_a_page_of_crafted_json_text_outputs_renders_in_under_a_second_of_cpu(
    name, org, trace_client
):
    trace = import_traces(org, "json-text", [tool_turns(CRAFTED_JSON_TEXT_TRACES[name])])[0]
    warm_up(org, trace_client)
    with cpu_limit(1.0, f"the trace page of {name}"):
        response = trace_client.get(f"/t/{trace.pk}/")
    assert response.status_code == 200
    assert 'class="row"' in response.content.decode()


def test_the_full_view_of_a_big_json_text_output_is_plain_text_in_under_a_second(
    org, trace_client
):
    trace = import_traces(org, "json-full", [tool_turns([empty_lists(TOOL_RESULT_BYTES - 16)])])[0]
    block = trace.blocks.get(sub_type="TOOL_RESULT")
    warm_up(org, trace_client)
    with cpu_limit(1.0, "the full view of a big JSON-text output"):
        response = trace_client.get(f"/t/{trace.pk}/b/{block.pk}/full")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<pre class="text">[[],[],' in html and "JSON shown as text" in html


def test_json_text_under_the_parse_cap_is_still_formatted(org, trace_client):
    trace = import_traces(org, "json-small", [tool_turns(['{"ok": [1, 2]}'])])[0]
    html = trace_client.get(f"/t/{trace.pk}/").content.decode()
    assert '<span class="t">&quot;ok&quot;</span>' in html or '<span class="t">"ok"</span>' in html


def test_a_page_of_big_structured_outputs_decodes_what_it_may_in_under_a_second(
    org, trace_client
):
    """Outputs stored as JSON arrays, not text (harden F1): the page decoded every block
    of the trace (8 outputs of 1.8 MB took 2.5 s); it now decodes the blocks it shows,
    the large ones while it has time, and links to the rest. The rows are written as
    they are stored (an import of such outputs takes a minute)."""
    dataset = Dataset.objects.create(organization=org, name="structured")
    trace = Trace.objects.create(organization=org, dataset=dataset, name="big outputs")
    big = [[] for _ in range(600_000)]
    now = timezone.now()

    def block(sub_type, block_type, payload, parent=None, call_id=None):
        return Block.objects.create(
            trace=trace, sub_type=sub_type, block_type=block_type, payload=payload,
            parent=parent, call_id=call_id, created_at=now, updated_at=now,
        )  # fmt: skip

    for n in range(8):
        message = block("MESSAGE", "MESSAGE", {"role": "assistant", "content": None})
        call = block(
            "TOOL_CALL", "ACT", {"call_id": f"c{n}", "name": "f", "arguments": {}}, message,
            f"c{n}",
        )
        block("TOOL_RESULT", "OBSERVE", {"call_id": f"c{n}", "output": big}, call, f"c{n}")
    warm_up(org, trace_client)
    with cpu_limit(1.0, "the trace page of big structured outputs"):
        response = trace_client.get(f"/t/{trace.pk}/")
    html = response.content.decode()
    assert response.status_code == 200 and "open it alone" in html
    result = trace.blocks.filter(sub_type="TOOL_RESULT").order_by("id").last()
    assert f'href="/t/{trace.pk}/b/{result.pk}/full"' in html
