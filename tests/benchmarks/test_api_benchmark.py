import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from benchmarks.api_bench import database_url
from traces.models import ApiKey, Block, Dataset, Organization, Trace

pytestmark = pytest.mark.slow  # runs a benchmark

RATIO = r"\d+\.\d\d \(target {sign} {target}\) (PASS|FAIL)"


def test_database_url_names_the_same_database() -> None:
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": "/tmp/a b.sqlite3"}
    assert database_url(sqlite) == "sqlite:////tmp/a b.sqlite3"
    postgres = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "test_apibench",
        "USER": "postgres",
        "PASSWORD": "p@ss",
        "HOST": "127.0.0.1",
        "PORT": 5432,
        "OPTIONS": {"sslmode": "disable"},
    }
    assert database_url(postgres) == (
        "postgres://postgres:p%40ss@127.0.0.1:5432/test_apibench?sslmode=disable"
    )
    with pytest.raises(RuntimeError):
        database_url({"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})


@pytest.mark.django_db(transaction=True)
def test_api_benchmark_runs_at_a_tiny_size() -> None:
    # The server is a child process: it must find what this test's database holds.
    assert "test" in str(connection.settings_dict["NAME"])
    out = StringIO()
    call_command(
        "benchmark",
        "api",
        "--requests", "20",
        "--batch-blocks", "2000",
        "--stitched-blocks", "500",
        "--explorer-clients", "3",
        "--explorer-requests", "2",
        "--explorer-images", "6",
        stdout=out,
        stderr=StringIO(),
    )  # fmt: skip
    text = out.getvalue()
    assert f"database {connection.vendor}" in text, text
    for line in (
        r"ratio one-block POST/whoami median: " + RATIO.format(sign="<=", target=r"3\.0"),
        r"ratio one-block POST/whoami p99: " + RATIO.format(sign="<=", target=r"3\.0"),
        r"ratio blocks:batch/floor: " + RATIO.format(sign=">=", target=r"0\.5"),
        r"ratio blocks\.stitched/floor: " + RATIO.format(sign="<=", target=r"3\.0"),
    ):
        assert re.search(f"^{line}$", text, re.M), (line, text)
    assert re.search(r"on 1 keep-alive connection\(s\)$", text, re.M), text
    sent = re.search(r"blocks:batch +\d+ requests, (\d+) blocks", text, re.M)
    floor = re.search(r"import floor +(\d+) blocks", text, re.M)
    assert sent and floor and int(sent[1]) == int(floor[1]) >= 2000, text
    assert re.search(r"^stitched: a 500-block trace", text, re.M), text
    assert re.search(r"^  6 requests in [\d.]+ s, 0 failed$", text, re.M), text
    assert re.search(r"^explorer push p99: [\d.]+ s \(target < 5 s\) PASS$", text, re.M), text
    assert not Organization.objects.exists()
    assert not ApiKey.objects.exists()
    assert not Dataset.objects.exists()
    assert not Trace.objects.exists()
    assert not Block.objects.exists()
