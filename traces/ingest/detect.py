"""Which format a file is in, from its content alone."""

import codecs
from typing import BinaryIO

import ijson

from traces import jsontext
from traces.ingest.lines import line_end, more_after
from traces.ingest.registry import FORMATS
from traces.ingest.types import PARSE_BUFFER, Format, FormatProblem, Sniff

HEAD_BYTES = 65536
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


def sniff(stream: BinaryIO) -> Sniff:
    head = stream.read(HEAD_BYTES)
    stream.seek(0)
    if not head:
        raise FormatProblem("the file is empty", rule="non_empty")
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
            "a JSON object or JSON Lines",
            {"byte": len(head) - len(stripped)},
            rule="json",
        )
    if _long_first_line_then_more(stream):
        return Sniff(head=head, first_char=first, top_keys=frozenset(), multiple=True)
    keys: set[str] = set()
    depth = 0
    done_first = multiple = False
    try:
        # basic_parse, not parse: parse's prefixes grow with the depth, which made a
        # file nested 100,000 deep take half a minute to sniff.
        for event, value in ijson.basic_parse(stream, multiple_values=True, buf_size=PARSE_BUFFER):
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
            elif event == "map_key" and depth == 1:
                keys.add(value)
    except ijson.JSONError as exc:
        if done_first or _looks_like_lines(head):
            multiple = True  # the JSON Lines reader reports the broken line
        else:
            raise FormatProblem(f"invalid JSON: {exc}", rule="json") from None
    finally:
        stream.seek(0)
    return Sniff(head=head, first_char=first, top_keys=frozenset(keys), multiple=multiple)


def detect(stream: BinaryIO) -> Format:
    found = sniff(stream)
    for fmt in FORMATS:
        if found.multiple and fmt.name != "jsonl":
            continue
        if fmt.detect(found):
            return fmt
    keys = ", ".join(sorted(found.top_keys)[:12]) or "none"
    names = ", ".join(fmt.name for fmt in FORMATS)
    raise FormatProblem(
        f"a JSON object with top-level keys [{keys}] is none of the known formats ({names})",
        rule="format",
    )
