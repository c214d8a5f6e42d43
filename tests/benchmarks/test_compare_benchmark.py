import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from traces.models import Block, Organization, Trace


@pytest.mark.slow  # runs a benchmark (seconds), as the other benchmarks' tests
@pytest.mark.django_db(transaction=True)
def test_compare_benchmark_runs_at_a_tiny_size_and_cleans_up() -> None:
    out = StringIO()
    call_command("benchmark", "compare", "--scale", "0.01", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert re.search(rf"^benchmark compare: database {connection.vendor}, scale 0\.01,", text, re.M)
    found = re.search(
        r"^traces: (\d+) and (\d+) blocks; (\d+) aligned steps, (\d+) identical", text, re.M
    )
    assert found, text
    blocks_a, blocks_b, steps, same = map(int, found.groups())
    assert blocks_a == 100 and blocks_b >= 100
    assert max(blocks_a, blocks_b) <= steps <= blocks_a + blocks_b and same < steps
    assert re.search(r"^floor \(both traces' signature rows.*: [\d.]+ ms for \d+ rows$", text, re.M)
    for name in ("API", "page"):
        assert re.search(
            rf"^ratio {name}/floor: [\d.]+ \(target <= 3\.0\) (PASS|FAIL)$", text, re.M
        )
    assert not Organization.objects.exists()
    assert not Trace.objects.exists()
    assert not Block.objects.exists()
    assert not get_user_model().objects.exists()
