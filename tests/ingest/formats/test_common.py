"""What the benchmark adapters share (traces/ingest/formats/common.py)."""

import pytest

from traces.ingest.formats.common import LEFT_OUT, kept


def test_kept_keeps_every_value_whole_however_long_its_strings():
    long = "x" * 100_000
    values = {"a": long, "b": ["ok", long], "c": {"d": long, "e": 1}, "n": None}
    assert kept(values) == values


@pytest.mark.parametrize("limit", [1000, 4096])
def test_a_value_over_the_import_limit_is_left_out_and_named_with_its_size(settings, limit):
    settings.LIMIT_IMPORT_MESSAGE_BYTES = limit
    values = {"small": "s", "events": [{"x": "y" * limit}], "text": "é" * limit}
    out = kept(values)
    assert out == {
        "small": "s",
        LEFT_OUT: {
            "events": {"bytes": limit + 10, "limit_bytes": limit},
            "text": {"bytes": 2 * limit, "limit_bytes": limit},
        },
    }


def test_a_value_exactly_at_the_limit_is_kept(settings):
    settings.LIMIT_IMPORT_MESSAGE_BYTES = 10
    assert kept({"t": "0123456789"}) == {"t": "0123456789"}
