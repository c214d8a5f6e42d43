"""traces/ingest/formats/jsonl.py: a line longer than LONG_LINE is parsed from the file
as it is read, with the same results and refusals as a short one."""

import io
import json

import pytest

from tests.ingest.formats.helpers import problems, read_with, traces
from traces.ingest.detect import detect
from traces.ingest.formats import jsonl
from traces.ingest.formats.jsonl import FORMAT


@pytest.fixture
def long_line(monkeypatch) -> int:
    monkeypatch.setattr(jsonl, "LONG_LINE", 64)
    return 64


def line(content: str) -> bytes:
    return json.dumps([{"role": "user", "content": content}]).encode() + b"\n"


def test_long_and_short_lines_read_alike(long_line):
    data = line("short") + line("x" * 500) + b"\n" + line("é \u0000 " * 40) + line("end")
    drafts = traces(read_with(FORMAT, data))
    assert [d.events[0]["content"] for d in drafts] == ["short", "x" * 500, "é \u0000 " * 40, "end"]
    assert [d.location for d in drafts] == [
        {"line": 1, "trace": 0},
        {"line": 2, "trace": 1},
        {"line": 4, "trace": 2},
        {"line": 5, "trace": 3},
    ]


def test_a_long_last_line_without_a_newline_is_read(long_line):
    data = line("a") + line("y" * 300).rstrip(b"\n")
    assert [d.events[0]["content"] for d in traces(read_with(FORMAT, data))] == ["a", "y" * 300]


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (b'[{"role": "user", "content": "' + b"z" * 100 + b'"}', "parse error"),
        (line("z" * 100).rstrip(b"\n") + b" []\n", "trailing garbage"),
        (b'[{"n": 123456789012345678901234567890, "pad": "' + b"p" * 80 + b'"}]\n', "64 bits"),
    ],
)
def test_a_bad_long_line_is_a_problem_of_its_line_only(long_line, bad, says):
    items = read_with(FORMAT, line("before") + bad + b"\n" + line("after"))
    [found] = problems(items)
    assert found.location == {"line": 2} and found.rule == "json" and says in found.message
    assert [d.events[0]["content"] for d in traces(items)] == ["before", "after"]


def test_a_file_whose_first_line_is_long_is_json_lines_without_a_walk(monkeypatch):
    from traces.ingest import detect as detection

    monkeypatch.setattr(detection, "LONG_FIRST_LINE", 100)

    def no_walk(*args, **kwargs):
        raise AssertionError("the first value was walked")

    monkeypatch.setattr(detection.ijson, "parse", no_walk)
    assert detect(io.BytesIO(line("w" * 200) + line("next"))).name == "jsonl"


@pytest.mark.parametrize("size", [40, 400])  # a short line, and one longer than LONG_LINE
def test_a_line_nested_past_the_document_limit_is_refused_alike_short_or_long(long_line, size):
    from traces.jsontext import MAX_DOCUMENT_DEPTH

    levels = MAX_DOCUMENT_DEPTH + 1
    deep = b"[" * levels + b" " * size + b"]" * levels + b"\n"
    items = read_with(FORMAT, line("before") + deep + line("after"))
    [found] = problems(items)
    assert found.location == {"line": 2} and found.rule == "max_depth"
    assert f"{levels} levels" in found.message
    assert [d.events[0]["content"] for d in traces(items)] == ["before", "after"]


def test_a_long_line_nested_far_too_deeply_is_refused_without_being_parsed(long_line):
    # ijson's parse of it keeps a path as long as its depth at every level (20,000 levels
    # took 1 GB): the scan's depth refuses it first.
    levels = 5_000
    items = read_with(FORMAT, b"[" * levels + b"]" * levels + b"\n" + line("after"))
    [found] = problems(items)
    assert found.rule == "max_depth" and f"{levels} levels" in found.message


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (b'{"messages": [broken', "expected a JSON value, at character 15 of the line"),
        (b'{"messages": []', "invalid JSON: the line ends before its JSON value does"),
    ],
)
def test_a_broken_line_names_the_character_of_the_line_not_the_parser_s_line(bad, says):
    [found] = problems(read_with(FORMAT, line("before") + bad + b"\n" + line("after")))
    assert found.location == {"line": 2} and found.message.endswith(says), found.message
    assert "column" not in found.message
