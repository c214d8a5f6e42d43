"""Which format a file is in, from its content alone."""

import codecs
import zipfile
from typing import BinaryIO

import ijson

from traces import jsontext
from traces.ingest.lines import READ_MAX, Paced, line_end, more_after
from traces.ingest.registry import FORMATS
from traces.ingest.types import Format, FormatProblem, Sniff, known_formats

HEAD_BYTES = 65536
ZIP_MAGIC = b"PK\x03\x04"
# A first line longer than this, followed by more, is JSON Lines: a pretty-printed JSON
# document does not start with a megabyte-long line. Its first value is not walked.
LONG_FIRST_LINE = 1 << 20


def _long_first_line_then_more(stream: BinaryIO) -> bool:
    try:
        end = line_end(stream)
        if end is None or end <= LONG_FIRST_LINE:
            return False
        stream.seek(end + 1)
        return more_after(stream)
    finally:
        stream.seek(0)


def _looks_like_lines(head: bytes) -> bool:
    lines = [line.strip() for line in head.splitlines() if line.strip()]
    return len(lines) > 1 and all(line[:1] in (b"{", b"[") for line in lines[:2])


def _sniff_zip(stream: BinaryIO, head: bytes) -> Sniff:
    try:
        names = frozenset(zipfile.ZipFile(stream).namelist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FormatProblem(f"a broken zip archive: {exc}", rule="zip") from None
    finally:
        stream.seek(0)
    return Sniff(head=head, first_char="", top_keys=frozenset(), zip_names=names)


def sniff(stream: BinaryIO) -> Sniff:
    head = stream.read(HEAD_BYTES)
    stream.seek(0)
    if not head:
        raise FormatProblem("the file is empty", rule="non_empty")
    if head.startswith(ZIP_MAGIC):
        return _sniff_zip(stream, head)
    if head.startswith(codecs.BOM_UTF8):
        raise FormatProblem(
            "the file starts with a UTF-8 byte order mark (BOM); JSON must not have one "
            "(RFC 8259): save it as UTF-8 without BOM",
            {"byte": 0},
            rule="encoding",
        )
    stripped = head.lstrip()
    if not stripped:
        raise FormatProblem("the file holds only white space", rule="non_empty")
    first = chr(stripped[0])
    if first not in "[{":
        raise FormatProblem(
            f"not JSON: the file starts with {stripped[:20]!r}; expected a JSON array, "
            "a JSON object, JSON Lines or an Inspect .eval zip. The known formats:\n"
            + known_formats(),
            {"byte": len(head) - len(stripped)},
            rule="json",
        )
    if _long_first_line_then_more(stream):
        return Sniff(head=head, first_char=first, top_keys=frozenset(), multiple=True)
    keys: set[str] = set()
    item_keys: set[str] = set()
    in_first_item = first == "["
    depth = 0
    done_first = multiple = False
    try:
        # basic_parse, not parse: parse's prefixes grow with the depth, which made a
        # file nested 100,000 deep take half a minute to sniff.
        # Paced reads: a first value of many small strings is not held a megabyte at a time.
        for event, value in ijson.basic_parse(
            Paced(stream), multiple_values=True, buf_size=READ_MAX
        ):
            if done_first:
                multiple = True
                break
            if event in ("start_map", "start_array"):
                depth += 1
                if depth > jsontext.MAX_DOCUMENT_DEPTH:
                    raise FormatProblem(
                        "invalid JSON: nested too deeply: more than "
                        f"{jsontext.MAX_DOCUMENT_DEPTH} levels",
                        rule="max_depth",
                    )
            elif event in ("end_map", "end_array"):
                depth -= 1
                done_first = depth == 0
                in_first_item = in_first_item and depth > 1
            elif event == "map_key" and depth == 1:
                keys.add(value)
            elif event == "map_key" and depth == 2 and in_first_item:
                item_keys.add(value)
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        # The C parser raises UnicodeDecodeError for an unpaired surrogate escape (\udc00).
        if done_first or _looks_like_lines(head):
            multiple = True  # the JSON Lines reader reports the broken line
        elif isinstance(exc, UnicodeDecodeError):
            raise FormatProblem(
                "invalid JSON: a string is not valid Unicode (an unpaired surrogate escape "
                "such as \\udc00?)",
                rule="json",
            ) from None
        else:
            raise FormatProblem(f"invalid JSON: {exc}", rule="json") from None
    finally:
        stream.seek(0)
    return Sniff(
        head=head,
        first_char=first,
        top_keys=frozenset(keys),
        multiple=multiple,
        item_keys=frozenset(item_keys),
    )


def _looks_like(found: Sniff) -> str:
    """What an unrecognised file looks like, when that can be told."""
    keys = found.top_keys
    if found.zip_names is not None:
        members = ", ".join(sorted(found.zip_names)[:8]) or "none"
        return (
            f"a zip archive that is not an Inspect .eval log (no header.json nor "
            f"_journal/start.json; its members: {members})"
        )
    if "eval" in keys and "samples" not in keys:
        return "an Inspect log without `samples` (a header-only log: no sample to import)"
    shown = ", ".join(sorted(keys)[:12]) or "none"
    return f"a JSON object with top-level keys [{shown}]"


def detect(stream: BinaryIO) -> Format:
    found = sniff(stream)
    for fmt in FORMATS:
        if found.multiple and fmt.name != "jsonl":
            continue
        if fmt.detect(found):
            return fmt
    raise FormatProblem(
        f"{_looks_like(found)} is none of the known formats, which are recognised so:\n"
        + known_formats(),
        rule="format",
    )
