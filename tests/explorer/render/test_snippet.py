"""explorer/render/snippet.py: a search hit's piece of stored JSON as a reader's line."""

import pytest

from explorer.render.snippet import snippet
from traces.selectors.search import SearchHit


def hit(piece: str, *, cut_before: bool = True, cut_after: bool = True) -> SearchHit:
    return SearchHit("tb_x", "MESSAGE", piece, cut_before, cut_after)


@pytest.mark.parametrize(
    "piece",
    [
        'tent":"I\'m absolutely furious about the fee',  # cut inside the key "content"
        '":"I\'m absolutely furious about the fee',  # cut at the key's closing quote
        ', "content": "I\'m absolutely furious about the fee',
    ],
)
def test_a_piece_cut_in_or_after_a_key_shows_only_its_value(piece):
    assert snippet(hit(piece)) == "…I'm absolutely furious about the fee…"


def test_a_piece_that_starts_the_block_keeps_its_first_word():
    # Not cut: a word followed by a colon and a quote is text, not the end of a key.
    assert snippet(hit('{"role":"user","content":"fee"}', cut_before=False)) == "user fee…"


def test_json_text_inside_a_value_keeps_its_quotes_without_a_backslash():
    """A tool's JSON answer is a string in the payload: its quotes are escaped. The end
    of its values was taken for JSON's own punctuation and left a backslash behind
    (`"2026-12-31\\ "last_plan_change_date"`, researcher review)."""
    piece = r'"content": "{\"contract_end_date\": \"2026-12-31\", \"last_plan\": \"x\"}"'
    shown = snippet(hit(piece))
    assert "\\" not in shown
    assert '"contract_end_date": "2026-12-31", "last_plan": "x"' in shown
