import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.db import connection

from traces.models import Block, Dataset, Membership, Organization, Trace

pytestmark = pytest.mark.slow  # runs a benchmark

VERDICT = r"\(target <= {target}\) (PASS|FAIL)$"


@pytest.mark.django_db(transaction=True)
def test_ui_benchmark_runs_at_a_tiny_size() -> None:
    out = StringIO()
    call_command(
        "benchmark", "ui", "--scale", "0.002", "--trace-blocks", "10", "--dataset-traces", "500",
        stdout=out, stderr=StringIO(),
    )  # fmt: skip
    text = out.getvalue()
    vendor = connection.vendor
    assert re.search(rf"^benchmark ui: database {vendor}, scale 0\.002,", text, re.M), text
    # The two traces: 10 and 1,000 blocks (1,000 and 100,000 by default): blocks, payloads,
    # import s, shown, floor ms, first ms, page ms, ratio, peak MB, HTML MB.
    number = r" +[\d.]+"
    rows = re.findall(rf"^ +(\d+){number} MB{number} +(\d+){number * 6}$", text, re.M)
    assert [int(blocks) for blocks, _ in rows] == [10, 1000], text
    assert all(int(shown) > 0 for _, shown in rows), text
    for line in (
        r"ratio trace page/floor: 10 blocks \d+\.\d\d "
        + VERDICT.format(target=r"3\.0")[:-1]
        + r"; 1000 blocks \d+\.\d\d "
        + VERDICT.format(target=r"3\.0"),
        r"trace page HTML: \d+\.\d\d MB " + VERDICT.format(target=r"1\.5"),
        r"ratio trace page 1000/10 blocks: \d+\.\d\d " + VERDICT.format(target=r"1\.5"),
        r"ratio dataset page/raw SQL: \d+\.\d\d " + VERDICT.format(target=r"2\.0"),
    ):
        assert re.search(f"^{line}", text, re.M), (line, text)
    assert re.search(r"^dataset page .*: 500 traces, 2000 blocks", text, re.M), text
    figures = re.findall(
        r"^  (page|groups fragment|traces fragment) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ "
        + VERDICT.format(target=r"3\.0"),
        text,
        re.M,
    )
    assert len(figures) == 3, text
    assert re.search(r"^  its htmx fragments: groups [\d.]+ ms, traces [\d.]+ ms$", text, re.M)
    search = re.search(
        r"^search 'segfault' over 2000 blocks: (\d+) traces match \((\d+) ", text, re.M
    )
    assert search and search[1] == search[2], text
    if vendor == "postgresql":
        uses = r"^uses index: (yes|no) \(block_search_document; target yes\) (PASS|FAIL)$"
        assert re.search(uses, text, re.M), text
    else:
        assert re.search(r"^note: the search targets are PostgreSQL's", text, re.M), text
        assert re.search(r"^uses index: no \(SQLite scans; .*\) N/A$", text, re.M), text
    assert not Organization.objects.exists()
    assert not Dataset.objects.exists()
    assert not Trace.objects.exists()
    assert not Block.objects.exists()
    assert not Membership.objects.exists()
    assert not get_user_model().objects.exists()
    assert not Session.objects.exists()
