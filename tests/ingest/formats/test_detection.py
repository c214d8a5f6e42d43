"""Each benchmark fixture is claimed by its own adapter and by no other, and detection
from content (never the file name) picks that adapter."""

import io

import pytest

from tests.ingest.formats.helpers import ALL_FIXTURES, FIXTURES, sniff_of
from traces.ingest.detect import detect
from traces.ingest.formats import inspect_ai, swe_agent, tau2, toolbench, who_and_when

OWNER = {
    "tau2.json": tau2.FORMAT,
    "swe_agent.traj": swe_agent.FORMAT,
    "toolbench.json": toolbench.FORMAT,
    "inspect_ai.json": inspect_ai.FORMAT,
    "who_and_when.json": who_and_when.FORMAT,
}


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_each_fixture_is_claimed_by_its_own_adapter_only(name: str) -> None:
    sniff = sniff_of((FIXTURES / name).read_bytes())
    claims = [fmt.name for fmt in OWNER.values() if fmt.detect(sniff)]
    assert claims == [OWNER[name].name]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_detection_reads_the_content_not_the_name(name: str) -> None:
    stream = io.BytesIO((FIXTURES / name).read_bytes())
    assert detect(stream) is OWNER[name]
