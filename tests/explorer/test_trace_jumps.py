"""The trace page reads only what it shows, and a reader jumps anywhere: go to block n or
row n, a permalink opens the page at its block, the outline lists the whole trace a page
of turns at a time, and find-in-trace lists the blocks that match."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.explorer.test_trace_view import page_url
from traces.models import Block, Trace

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def tool_trace(trace_importer) -> Trace:
    """300 turns; every third an assistant turn calling a tool, whose output is a flagged
    tool error every thirtieth turn; the word NEEDLE in turn 250's output."""
    events = []
    for n in range(300):
        if n % 3 == 1:
            call_id = f"call_{n}"
            events.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": f"tool_{n % 7}", "arguments": "{}"}},
            ]})  # fmt: skip
            output = f"output of turn {n}" + (" NEEDLE" if n == 250 else "")
            result = {"role": "tool", "tool_call_id": call_id, "content": output}
            if n % 30 == 1:  # a tool error as the log flags it (the outline counts those)
                result.update(content=f"Error: turn {n} failed", is_error=True)
            events.append(result)
        else:
            events.append({"role": "user", "content": f"turn number {n}"})
    return trace_importer([events], dataset="jumps")[0]


def _block_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if '"traces_block"' in q["sql"]]


def test_the_first_response_reads_only_a_range_of_the_stored_order(trace_client, tool_trace):
    with CaptureQueriesContext(connection) as queries:
        html = trace_client.get(page_url(tool_trace)).content.decode()
    assert "turn number 0<" in html
    reads = _block_reads(queries)
    assert reads, "the page read no blocks"
    for sql in reads:  # a range of the stitched order or blocks by id, never the whole trace
        by_id = '"id" =' in sql or '"id" IN (' in sql
        assert '"turn" >=' in sql or '"number" =' in sql or by_id, sql
        # ... in the stored stitched order (block_stitched_order), never by creation
        order = sql.split("ORDER BY")[-1] if "ORDER BY" in sql else ""
        assert order.lstrip().startswith('"turn"') or '"created_at"' not in order, sql


def test_the_header_counts_come_from_the_trace_row(trace_client, tool_trace):
    html = trace_client.get(page_url(tool_trace)).content.decode()
    assert "<b>300</b> messages" in html and "<b>100</b> calls" in html
    assert "<b>100</b> results" in html


def test_go_to_block_n_opens_the_page_at_that_block(trace_client, tool_trace):
    block = Block.objects.get(trace=tool_trace, number=380)
    html = trace_client.get(page_url(tool_trace), {"block": 380}).content.decode()
    assert f'id="{block.pk}"' in html
    assert "Show from the first row" in html
    assert "turn number 0<" not in html
    assert 'title="Permalink to block 380"' in html


def test_go_to_a_block_or_row_that_is_not_there_opens_the_first_rows(trace_client, tool_trace):
    for query in ({"block": 10_000}, {"block": "x"}, {"row": "nope"}):
        response = trace_client.get(page_url(tool_trace), query)
        assert response.status_code == 200
        assert "turn number 0<" in response.content.decode()


@pytest.mark.parametrize("query", ["after=100000", "row=100000&acts=1", "after=1&acts=99999"])
def test_a_place_past_the_trace_opens_at_a_row_it_has(trace_client, tool_trace, query):
    # URLs made by hand: after the last row, or after the last act of a row.
    html = trace_client.get(f"{page_url(tool_trace)}?{query}").content.decode()
    assert "This trace has no blocks" not in html and 'class="row"' in html


def test_go_to_a_block_past_the_last_says_so(trace_client, tool_trace):
    total = tool_trace.block_count
    for asked in (total + 1, 0):
        html = trace_client.get(page_url(tool_trace), {"block": asked}).content.decode()
        assert f"There is no block {asked}: this trace has {total} (numbered from 1)." in html
    html = trace_client.get(page_url(tool_trace), {"block": total}).content.decode()
    assert "There is no block" not in html
    block = Block.objects.get(trace=tool_trace, number=5)
    focused = {"focus": block.pk, "block": total + 1}  # the block asked for by id goes first
    assert (
        "There is no block" not in trace_client.get(page_url(tool_trace), focused).content.decode()
    )


@pytest.mark.parametrize(
    "asked, said",
    [
        ("1234567890123", "There is no block 123456789012…: this trace has {total}"),
        ("-3", "“-3” is not a block number: this trace has {total} blocks"),
        ("٣", "“٣” is not a block number"),  # a digit of another script
        ("<b>x</b>", "“&lt;b&gt;x&lt;/b&gt;” is not a block number"),
        ("\u202ex" * 30, "is not a block number"),
    ],
)
def test_go_to_what_is_not_a_block_number_says_so(trace_client, tool_trace, asked, said):
    html = trace_client.get(page_url(tool_trace), {"block": asked}).content.decode()
    assert said.format(total=tool_trace.block_count) in html
    assert 'id="row-0"' in html  # the page opens at its first rows
    assert "\u202e" not in html


def test_go_to_row_n_counts_rows_from_one(trace_client, tool_trace):
    html = trace_client.get(page_url(tool_trace), {"row": 201}).content.decode()
    assert "turn number 200<" in html and "turn number 199<" not in html
    assert 'id="row-200"' in html


def test_go_to_a_row_past_the_last_opens_at_the_last(trace_client, tool_trace):
    rows = tool_trace.block_counts["MESSAGE"]
    html = trace_client.get(page_url(tool_trace), {"row": rows + 1000}).content.decode()
    assert f'id="row-{rows - 1}"' in html
    assert "This trace has no blocks" not in html


def test_label_this_block_opens_the_page_at_the_block_and_its_form(trace_client, tool_trace):
    block = Block.objects.get(trace=tool_trace, turn=250, step__gt=0)
    html = trace_client.get(page_url(tool_trace), {"focus": block.pk}).content.decode()
    link = f"{page_url(tool_trace)}?annotate={block.pk}&amp;focus={block.pk}#annotations"
    assert f'<a class="label-this" href="{link}"' in html
    opened = trace_client.get(link.replace("&amp;", "&").split("#")[0]).content.decode()
    assert f'id="{block.pk}"' in opened and f'value="{block.pk}"' in opened  # the form's block


def test_a_permalink_opens_the_page_at_its_block(trace_client, tool_trace):
    block = Block.objects.get(trace=tool_trace, turn=250, step__gt=0)
    html = trace_client.get(page_url(tool_trace), {"focus": block.pk}).content.decode()
    assert f'id="{block.pk}"' in html and "NEEDLE" in html
    assert f'href="{page_url(tool_trace)}?focus={block.pk}#{block.pk}"' in html


def test_the_outline_lists_turns_with_tools_and_errors_a_page_at_a_time(trace_client, tool_trace):
    url = f"{page_url(tool_trace)}outline"
    html = trace_client.get(url, **HTMX).content.decode()
    entries = re.findall(r'data-outline-row="(\d+)"', html)
    assert entries == [str(n) for n in range(200)]
    assert "turn number 0" in html and "tool_1" in html
    assert html.count("1 error") == 7  # turns 1, 31, ... 181
    assert f"{url}?after=200" in html
    rest = trace_client.get(url, {"after": 200}, **HTMX).content.decode()
    assert re.findall(r'data-outline-row="(\d+)"', rest) == [str(n) for n in range(200, 300)]
    assert "?after=400" not in rest  # the last page: no next one
    page = trace_client.get(url)  # without JavaScript: a page of its own
    assert page.status_code == 200 and "Back to the trace" in page.content.decode()


def test_the_outline_opens_where_the_page_opened_and_leads_back(trace_client, tool_trace):
    """After "go to row 251" the Outline button opens rows 201- (researcher review: it
    opened at row 1), which lead back to rows 1-200."""
    url = f"{page_url(tool_trace)}outline"
    jumped = trace_client.get(page_url(tool_trace), {"row": 251}).content.decode()
    assert f'href="{url}?after=200"' in jumped
    at_start = trace_client.get(page_url(tool_trace)).content.decode()
    assert f'href="{url}"' in at_start
    rest = trace_client.get(url, {"after": 200}, **HTMX).content.decode()
    assert f'href="{url}?after=0"' in rest and "Rows 1–200</a>" in rest
    first = trace_client.get(url, **HTMX).content.decode()
    assert "outline?after=0" not in first  # the first page leads nowhere back


def test_find_in_trace_links_each_hit_to_the_page_at_its_block(trace_client, tool_trace):
    url = f"{page_url(tool_trace)}outline"
    html = trace_client.get(url, {"q": "NEEDLE"}, **HTMX).content.decode()
    block = Block.objects.get(trace=tool_trace, turn=250, step__gt=0)
    assert f'href="{page_url(tool_trace)}?focus={block.pk}#{block.pk}"' in html
    assert "1</b> block matching" in html
    none = trace_client.get(url, {"q": "absent-word"}, **HTMX).content.decode()
    assert "No block matches." in none


def test_find_in_trace_shows_where_each_block_matches(trace_client, tool_trace):
    """Each hit shows a piece of its block around the word, the word marked (a list of
    "row 251 · block 380 · tool_result" told the reader nothing of the match)."""
    url = f"{page_url(tool_trace)}outline"
    html = trace_client.get(url, {"q": "needle"}, **HTMX).content.decode()
    [piece] = re.findall(r'<span class="hit-snippet small">(.*?)</span>', html)
    assert piece.endswith("output of turn 250 <mark>NEEDLE</mark>"), piece
    hostile = trace_client.get(url, {"q": "<b>turn"}, **HTMX).content.decode()
    assert "<b>turn" not in hostile  # the search text is shown escaped, never as markup


def test_the_outline_of_a_trace_of_another_organization_is_a_404(trace_outsider_client, tool_trace):
    response = trace_outsider_client.get(f"{page_url(tool_trace)}outline")
    assert response.status_code == 404
