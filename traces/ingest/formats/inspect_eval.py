"""Inspect's binary log (`.eval`, Inspect's default log format): a zip holding
`header.json` (the eval, plan, results, stats), one `samples/<id>_epoch_<n>.json` per
sample and epoch, `summaries.json`, `reductions.json` and `_journal/`. One trace per
sample, read as the JSON log's samples are (inspect_ai.sample_trace), one member at a
time. Members are deflated (Inspect before 0.3.2xx) or Zstandard-compressed (method 93,
Inspect's default since), which Python's zipfile reads only from 3.14: those are read
raw and decompressed here.

A member is decompressed in chunks, never past its declared size nor past
IMPORT_MEMBER_MAX_BYTES: a small zip that expands to gigabytes (a "zip bomb") is refused
with a problem naming the member, having used at most that much memory.
"""

import copy
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson
import zstandard
from django.conf import settings

from traces.ingest.formats.inspect_ai import run_facts, sample_trace
from traces.ingest.types import Adapter, DatasetMetadata, FormatProblem, Item, Sniff

ZIP_ZSTANDARD = 93
HEADER = "header.json"
START = "_journal/start.json"


CHUNK = 1 << 20


class MemberTooLarge(Exception):
    """A member that decompresses to more than the cap, or than its declared size."""


def _read_bounded(packed: BinaryIO, name: str, declared: int) -> bytearray:
    """`packed`'s bytes, read in chunks: refused once past `declared` bytes."""
    data = bytearray()
    while chunk := packed.read(min(CHUNK, declared + 1 - len(data))):
        data += chunk
        if len(data) > declared:
            raise MemberTooLarge(
                f"the member {name} expands to more than its declared {declared:,} bytes"
            )
    return data


def read_member(archive: zipfile.ZipFile, name: str) -> bytearray:
    """The member's decompressed bytes, at most IMPORT_MEMBER_MAX_BYTES of them."""
    info = archive.getinfo(name)
    cap = settings.IMPORT_MEMBER_MAX_BYTES
    if info.file_size > cap:
        raise MemberTooLarge(
            f"the member {name} is {info.file_size:,} bytes uncompressed, more than the "
            f"{cap:,} bytes one member may have (IMPORT_MEMBER_MAX_BYTES)"
        )
    if info.compress_type != ZIP_ZSTANDARD:
        # zipfile stops at the declared size and checks the CRC at its end.
        with archive.open(info) as member:
            return _read_bounded(member, name, info.file_size)
    raw = copy.copy(info)
    raw.compress_type, raw.file_size = zipfile.ZIP_STORED, info.compress_size
    del raw.CRC  # the CRC is of the decompressed bytes: checked below
    with archive.open(raw) as packed:
        reader = zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True)
        data = _read_bounded(reader, name, info.file_size)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"{name}: bad size or CRC after Zstandard decompression")
    return data


def _json_member(archive: zipfile.ZipFile, name: str) -> Any:
    return orjson.loads(read_member(archive, name))


class InspectEval(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        names = sniff.zip_names
        return names is not None and bool({HEADER, START} & names)

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        try:
            archive = zipfile.ZipFile(stream)
            names = archive.namelist()
            # A log still being written has no header yet: its journal's start has the eval.
            top = _json_member(archive, HEADER if HEADER in names else START)
        except (zipfile.BadZipFile, orjson.JSONDecodeError, zstandard.ZstdError, KeyError) as exc:
            yield FormatProblem(f"a broken Inspect .eval log: {exc}", {}, rule="zip")
            return
        except MemberTooLarge as exc:
            yield FormatProblem(f"{exc}; nothing was read", {}, rule="member_size")
            return
        facts = run_facts(top if isinstance(top, dict) else {})
        yield DatasetMetadata(facts)
        samples = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
        if not samples:
            yield FormatProblem("the .eval log holds no sample", {}, rule="non_empty")
        for index, member in enumerate(samples):
            where = {"trace": index, "member": member}
            try:
                sample = _json_member(archive, member)
            except (zipfile.BadZipFile, orjson.JSONDecodeError, zstandard.ZstdError) as exc:
                yield FormatProblem(f"a broken sample: {exc}", where, rule="zip")
                continue
            except MemberTooLarge as exc:
                yield FormatProblem(f"{exc}; the sample is skipped", where, rule="member_size")
                continue
            draft, sample = sample_trace(sample, index, facts, where), None
            yield draft
            draft = None


FORMAT = InspectEval(
    name="inspect-eval",
    recognised_by=(
        "a zip with header.json or _journal/start.json and samples/*.json (Inspect .eval log)"
    ),
)
