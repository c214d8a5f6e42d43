import re
from io import StringIO

import pytest
from django.core.management import call_command

from traces.models import Block, Dataset, Organization, Trace

pytestmark = pytest.mark.slow  # runs a benchmark


@pytest.mark.django_db(transaction=True)
def test_import_benchmark_runs_at_a_tiny_size() -> None:
    out = StringIO()
    call_command("benchmark", "import", "--traces", "3", stdout=out, stderr=StringIO())
    text = out.getvalue()
    rows = {
        m["phase"]: int(m["blocks"])
        for m in re.finditer(r"^(?P<phase>import|floor)\s+[\d.]+\s+(?P<blocks>\d+)\s", text, re.M)
    }
    assert rows.keys() == {"import", "floor"}, text
    assert rows["import"] == rows["floor"] > 0
    assert re.search(r"^ratio import/floor: \d+\.\d\d \(target <= 2\.0\) (PASS|FAIL)$", text, re.M)
    assert re.search(r"^peak memory growth: \d+ MB \(target <= 150 MB\) (PASS|FAIL)$", text, re.M)
    assert not Dataset.objects.exists()
    assert not Trace.objects.exists()
    assert not Block.objects.exists()
    assert not Organization.objects.exists()
