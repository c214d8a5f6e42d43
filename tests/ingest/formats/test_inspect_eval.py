"""Inspect's .eval log (a zip): header, samples, scores and per-sample metadata, from real
logs written by inspect-ai 0.3.285 (Zstandard members, its default) and with deflated
members (the older default); several logs in one dataset keep each eval's metadata."""

import io
import struct
import tracemalloc
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from tests.ingest.formats.helpers import problems, read_with, traces
from traces.ingest.detect import detect
from traces.ingest.formats.inspect_eval import FORMAT, ZIP_ZSTANDARD, read_member
from traces.models import Block, Dataset, Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOGS = ["inspect_arith_zstd.eval", "inspect_arith_deflate.eval"]


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_is_detected_from_its_content(name):
    with (REAL / name).open("rb") as handle:
        assert detect(handle) is FORMAT


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_gives_one_trace_per_sample(name):
    items = read_with(FORMAT, (REAL / name).read_bytes())
    assert problems(items) == []
    found = traces(items)
    assert [t.metadata["task_id"] for t in found] == ["arith/one", "arith/two"]
    assert [t.metadata["reward"] for t in found] == [1, 0]
    assert [t.metadata["metadata"] for t in found] == [{"level": "easy"}, {"level": "hard"}]
    short = found[0].metadata["eval"]["eval_id"][:6]
    assert [t.name for t in found] == [
        f"arith/one epoch 1 mockllm/model (eval {short})",
        f"arith/two epoch 1 mockllm/model (eval {short})",
    ]
    assert found[0].metadata["eval"]["benchmark"] == "arith"
    assert [len(t.events) for t in found] == [5, 5]


@pytest.mark.parametrize("name", LOGS)
def test_a_real_eval_log_imports_with_exact_counts(org, name):
    with (REAL / name).open("rb") as handle:
        result = trace_import(organization=org, dataset_name="d", files=[(name, handle)])
    assert result.formats == {name: "inspect-eval"}
    assert (result.traces, result.blocks) == (2, 12)
    assert Counter(Block.objects.values_list("sub_type", flat=True)) == {
        "MESSAGE": 8, "TOOL_CALL": 2, "TOOL_RESULT": 2
    }  # fmt: skip
    assert Dataset.objects.get().metadata["model"] == "mockllm/model"
    assert sorted(Trace.objects.values_list("reward", flat=True)) == [0.0, 1.0]


def test_two_logs_in_one_dataset_keep_each_evals_metadata_and_unique_names(org):
    files = [(name, (REAL / name).open("rb")) for name in LOGS]
    result = trace_import(organization=org, dataset_name="d", files=files)
    assert result.traces == 4
    evals = {t.metadata["eval"]["eval_id"] for t in Trace.objects.all()}
    assert len(evals) == 2
    stored = list(Trace.objects.all())
    assert {t.metadata["task_id"] for t in stored} == {"arith/one", "arith/two"}
    assert len({t.name for t in stored}) == 4  # the same task and model, run twice


def test_a_zip_with_a_broken_sample_names_the_member():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("header.json", '{"eval": {"task": "t"}}')
        archive.writestr("samples/1_epoch_1.json", "{not json")
    [found] = problems(read_with(FORMAT, buffer.getvalue()))
    assert found.location == {"trace": 0, "member": "samples/1_epoch_1.json"}
    assert found.message.startswith("a broken sample")


# Zip bombs: zeros, compressed to a few kilobytes, that expand to EXPANDED bytes. Written
# by hand (zipfile cannot write Zstandard members before Python 3.14, nor lie about a
# size), and compressed in chunks, so that the test never holds the expanded bytes either.
EXPANDED = 64 * 1024 * 1024
CAP = 1024 * 1024
METHODS = {"zstandard": ZIP_ZSTANDARD, "deflate": zipfile.ZIP_DEFLATED}
Member = tuple[str, int, bytes, int, int]  # name, method, packed bytes, size and CRC declared


def packed(method: int, data: bytes, times: int = 1) -> bytes:
    """`data` repeated `times` times, compressed with `method`, one `data` at a time."""
    if method == ZIP_ZSTANDARD:
        packer = zstandard.ZstdCompressor().compressobj()
    else:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # a zip's raw deflate
    parts = [packer.compress(data) for _ in range(times)]
    return b"".join([*parts, packer.flush()])


def zip_of(members: list[Member]) -> bytes:
    body, directory = bytearray(), bytearray()
    for name, method, data, size, crc in members:
        encoded = name.encode()
        common = struct.pack(
            "<HHHHIIIHH", 0, method, 0, 0x21, crc, len(data), size, len(encoded), 0
        )
        directory += b"PK\x01\x02" + struct.pack("<HH", 63, 63) + common
        directory += struct.pack("<HHHII", 0, 0, 0, 0, len(body)) + encoded
        body += b"PK\x03\x04" + struct.pack("<H", 63) + common + encoded + data
    count = len(members)
    end = struct.pack("<HHHHIIH", 0, 0, count, count, len(directory), len(body), 0)
    return bytes(body + directory + b"PK\x05\x06" + end)


def member(name: str, method: int, text: bytes) -> Member:
    return (name, method, packed(method, text), len(text), zlib.crc32(text))


def bomb(name: str, method: int, declared: int) -> Member:
    """EXPANDED zeros, declaring `declared` bytes (and the CRC of that many zeros)."""
    zeros = bytes(CAP)
    return (
        name,
        method,
        packed(method, zeros, EXPANDED // CAP),
        declared,
        zlib.crc32(bytes(declared)),
    )


def real_members() -> tuple[bytes, bytes]:
    """The real zstd log's header and first sample, decompressed."""
    with zipfile.ZipFile(REAL / LOGS[0]) as archive:
        first = sorted(n for n in archive.namelist() if n.startswith("samples/"))[0]
        return bytes(read_member(archive, "header.json")), bytes(read_member(archive, first))


@pytest.fixture
def small_cap(settings):
    settings.IMPORT_MEMBER_MAX_BYTES = CAP


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_a_hand_written_eval_log_reads_like_the_real_one(small_cap, method):
    """The bombs below are refused for their size, not for a zip written wrong."""
    header, sample = real_members()
    data = zip_of(
        [member("header.json", method, header), member("samples/1_epoch_1.json", method, sample)]
    )
    items = read_with(FORMAT, data)
    assert problems(items) == []
    assert [t.metadata["task_id"] for t in traces(items)] == ["arith/one"]


def read_measured(data: bytes) -> tuple[list, int]:
    tracemalloc.start()
    try:
        items = read_with(FORMAT, data)
        return items, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_a_sample_declared_over_the_cap_is_refused_before_it_is_read(small_cap, method):
    header, sample = real_members()
    name = "samples/2_epoch_1.json"
    data = zip_of([
        member("header.json", method, header),
        member("samples/1_epoch_1.json", method, sample),
        bomb(name, method, declared=EXPANDED),
    ])  # fmt: skip
    assert len(data) < 100_000
    items, peak = read_measured(data)
    [found] = problems(items)
    assert found.location == {"trace": 1, "member": name}
    assert found.rule == "member_size"
    assert found.message == (
        f"the member {name} is 67,108,864 bytes uncompressed, more than the 1,048,576 bytes "
        "one member may have (IMPORT_MEMBER_MAX_BYTES); the sample is skipped"
    )
    assert [t.metadata["task_id"] for t in traces(items)] == ["arith/one"]
    assert peak < 4 * CAP


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_a_sample_that_expands_past_its_declared_size_stops_there(method):
    """The declared size lies (100 bytes, with the CRC of 100 zeros): reading stops there,
    whatever the cap (zipfile reads a deflated member up to its declared size only)."""
    name = "samples/1_epoch_1.json"
    data = zip_of([member("header.json", method, b"{}"), bomb(name, method, declared=100)])
    items, peak = read_measured(data)
    [found] = problems(items)
    assert found.location == {"trace": 0, "member": name}
    assert (
        found.message
        == {
            ZIP_ZSTANDARD: f"the member {name} expands to more than its declared 100 bytes; "
            "the sample is skipped",
            zipfile.ZIP_DEFLATED: "a broken sample: unexpected character, expected a JSON value: "
            "line 1 column 1 (char 0)",  # the 100 zeros declared
        }[method]
    )
    assert peak < 4 * CAP


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_a_header_over_the_cap_refuses_the_whole_log(small_cap, method):
    items, peak = read_measured(zip_of([bomb("header.json", method, declared=EXPANDED)]))
    [found] = problems(items)
    assert found.location == {}
    assert found.message.startswith("the member header.json is 67,108,864 bytes uncompressed")
    assert found.message.endswith("; nothing was read")
    assert traces(items) == []
    assert peak < 4 * CAP


def test_the_cap_defaults_to_at_most_the_upload_cap(settings):
    assert settings.IMPORT_MEMBER_MAX_BYTES <= settings.UPLOAD_MAX_BYTES
