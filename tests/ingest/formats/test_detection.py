"""Each benchmark fixture is claimed by its own adapter and by no other, and detection
from content (never the file name) picks that adapter."""

import io
from pathlib import Path

import pytest

from tests.ingest.formats.helpers import ALL_FIXTURES, FIXTURES, OWNER, module_of, sniff_of
from traces.ingest.detect import detect
from traces.ingest.registry import FORMATS

FORMATS_DIR = Path(__file__).resolve().parents[3] / "traces" / "ingest" / "formats"
TESTS_DIR = Path(__file__).parent
# Formats whose input is generic chat or block JSON, tested by test_jsonl.py and
# tests/ingest/test_events.py rather than by a benchmark sample.
GENERIC = {"jsonl", "json_array", "json_object"}


def test_every_format_module_is_registered_once() -> None:
    modules = {p.stem for p in FORMATS_DIR.glob("*.py")} - {"__init__", "common"}
    registered = [module_of(fmt) for fmt in FORMATS]
    assert sorted(registered) == sorted(modules)


BENCHMARK_FORMATS = [fmt for fmt in FORMATS if module_of(fmt) not in GENERIC]


@pytest.mark.parametrize("fmt", BENCHMARK_FORMATS, ids=module_of)
def test_every_benchmark_format_has_a_sample_and_a_test_file(fmt) -> None:
    assert any(owner is fmt for owner in OWNER.values()), f"no fixtures/{module_of(fmt)}.*"
    assert (TESTS_DIR / f"test_{module_of(fmt)}.py").is_file()


def test_the_samples_are_read_from_the_registry() -> None:
    assert len(ALL_FIXTURES) == len(BENCHMARK_FORMATS) >= 5


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_each_fixture_is_claimed_by_its_own_adapter_only(name: str) -> None:
    sniff = sniff_of((FIXTURES / name).read_bytes())
    claims = [fmt.name for fmt in BENCHMARK_FORMATS if fmt.detect(sniff)]
    assert claims == [OWNER[name].name]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_detection_reads_the_content_not_the_name(name: str) -> None:
    stream = io.BytesIO((FIXTURES / name).read_bytes())
    assert detect(stream) is OWNER[name]
