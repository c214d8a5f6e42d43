"""Every kind of bad input gets a clear problem, and nothing is written."""

import io
import json

import pytest
from django.test import override_settings

from tests.conftest import as_file
from traces.errors import ImportFailed
from traces.models import Block, Dataset, Image, Trace
from traces.services.imports import MAX_PROBLEMS, trace_import

USER = {"role": "user", "content": "hi"}


def problems_for(org, data, name="bad.json"):
    before = (Dataset.objects.count(), Trace.objects.count(), Block.objects.count())
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="runs", files=[as_file(data, name)])
    after = (Dataset.objects.count(), Trace.objects.count(), Block.objects.count())
    assert after == before, "a failed import wrote something"
    assert Image.objects.count() == 0
    return caught.value.problems


def only(problems):
    assert len(problems) == 1, problems
    return problems[0]


def test_it_refuses_an_empty_file(org):
    found = only(problems_for(org, b""))
    assert (found["file"], found["message"]) == ("bad.json", "the file is empty")


def test_it_refuses_invalid_json_and_says_so(org):
    found = only(problems_for(org, b'[{"role": "user", "content": }]'))
    assert found["message"].startswith("invalid JSON")
    assert found["rule"] == "json"


def test_it_names_the_truncated_last_line(org):
    good = json.dumps([USER])
    found = only(problems_for(org, f'{good}\n{good}\n[{{"role": "us', "runs.jsonl"))
    assert found["line"] == 3
    assert found["message"].startswith("invalid JSON")


def test_it_refuses_invalid_utf8(org):
    data = json.dumps([USER]).encode() + b"\n" + b'[{"role": "user", "content": "\xff\xfe"}]\n'
    found = only(problems_for(org, data, "runs.jsonl"))
    assert found["line"] == 2
    assert "invalid JSON" in found["message"] and "utf-8" in found["message"].lower()


def test_it_refuses_a_byte_order_mark(org):
    found = only(problems_for(org, b"\xef\xbb\xbf" + json.dumps([USER]).encode()))
    assert "byte order mark" in found["message"]


def test_it_refuses_json_nested_10000_deep(org):
    deep = "[" * 10000 + "]" * 10000
    found = only(problems_for(org, json.dumps([USER]) + "\n" + deep + "\n", "runs.jsonl"))
    assert found["line"] == 2
    assert found["message"].startswith("invalid JSON: nested too deeply")


def test_it_refuses_nested_10000_deep_in_a_plain_json_file(org):
    deep = '[{"role": "user", "content": ' + "[" * 10000 + "]" * 10000 + "}]"
    found = problems_for(org, deep)
    assert any("deep" in p["message"].lower() or "recursion" in p["message"].lower() for p in found)


def test_it_refuses_nan(org):
    found = problems_for(org, '[{"role": "user", "content": "x", "score": NaN}]\n' * 2, "r.jsonl")
    assert [p["line"] for p in found] == [1, 2]
    assert found[0]["message"].startswith("invalid JSON: unexpected character")


def test_it_refuses_numbers_beyond_64_bits(org):
    data = '[{"role": "user", "content": "x", "n": 18446744073709551616}]\n'
    found = problems_for(org, data * 2, "runs.jsonl")
    assert [p["line"] for p in found] == [1, 2]
    assert found[0]["message"] == (
        "invalid JSON: the integer 18446744073709551616 does not fit in 64 bits; "
        "write it as a string or a float"
    )


def test_it_refuses_numbers_beyond_64_bits_in_a_json_array(org):
    found = only(problems_for(org, '[{"role": "user", "content": "x", "n": 18446744073709551616}]'))
    assert "integer overflow" in found["message"] and "64 bits" in found["message"]


def test_it_refuses_a_trace_of_zero_events(org):
    found = only(problems_for(org, json.dumps([USER]) + "\n[]\n", "runs.jsonl"))
    assert (found["line"], found["message"]) == (2, "a trace needs at least one event")


def test_it_refuses_an_empty_array_file(org):
    found = only(problems_for(org, "[]"))
    assert found["message"] == "the array is empty: no trace to import"


def test_it_refuses_a_tool_result_pointing_at_an_unknown_call(org):
    data = json.dumps([USER, {"role": "tool", "tool_call_id": "ghost", "content": "?"}])
    found = only(problems_for(org, data))
    assert (found["event"], found["rule"]) == (1, "unknown_call_id")


def test_it_refuses_a_parent_of_the_wrong_kind(org):
    blocks = [
        {"id": "m", "sub_type": "MESSAGE", "payload": {"role": "user", "content": "q"}},
        {"id": "t", "sub_type": "THINK", "parent_block_id": "m", "payload": {"text": "hmm"}},
        {
            "sub_type": "TOOL_CALL",
            "parent_block_id": "t",
            "payload": {"call_id": "c", "name": "f", "arguments": {}},
        },
    ]
    found = only(problems_for(org, json.dumps(blocks)))
    assert (found["block"], found["code"]) == (2, "PARENT_SUBTYPE_MISMATCH")
    assert found["message"] == "a TOOL_CALL block must hang under a MESSAGE, not a THINK"


def test_it_refuses_a_duplicate_call_id(org):
    call = {"id": "dup", "type": "function", "function": {"name": "f", "arguments": {}}}
    data = json.dumps([USER, {"role": "assistant", "content": None, "tool_calls": [call, call]}])
    found = only(problems_for(org, data))
    assert (found["code"], found["field"]) == ("DUPLICATE_CALL_ID", "tool_calls[1].id")


def test_it_refuses_two_results_of_one_call_with_one_seq(org):
    blocks = [
        {"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": None}},
        {"sub_type": "TOOL_CALL", "payload": {"call_id": "c", "name": "f", "arguments": {}}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "delta": "a", "seq": 3}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "output": "no seq"}},
        {"sub_type": "TOOL_RESULT", "payload": {"call_id": "c", "delta": "b", "seq": 3}},
    ]
    found = only(problems_for(org, json.dumps(blocks)))
    assert (found["block"], found["code"], found["field"]) == (
        4,
        "DUPLICATE_RESULT_SEQ",
        "payload.seq",
    )


@override_settings(LIMIT_IMPORT_MESSAGE_BYTES=10)
def test_it_refuses_a_message_over_the_import_limit_with_the_exact_size(org):
    text = "é" * 8  # 16 bytes in UTF-8
    found = only(problems_for(org, json.dumps([{"role": "user", "content": text}])))
    assert found["code"] == "PAYLOAD_TOO_LARGE"
    assert found["message"] == "message content exceeds 10 bytes limit"
    assert found["details"] == {
        "sub_type": "MESSAGE",
        "limit_bytes": 10,
        "actual_bytes": 16,
        "trace_id": None,
        "parent_block_id": None,
    }


@override_settings(LIMIT_TOOL_RESULT_BYTES=4)
def test_it_refuses_a_tool_result_over_its_limit(org):
    data = json.dumps(
        [
            USER,
            {
                "role": "assistant",
                "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {}}}],
            },
            {"role": "tool", "tool_call_id": "1", "content": "12345"},
        ]
    )
    found = only(problems_for(org, data))
    assert (found["event"], found["code"], found["details"]["actual_bytes"]) == (
        2,
        "PAYLOAD_TOO_LARGE",
        5,
    )


def test_a_blocks_file_keeps_a_role_and_an_empty_turn_as_given(org):
    """A block array in a file is a record too (DESIGN.md "imports keep real logs
    whole"): what this product stores from a chat log (a Who&When `human` turn, a tau2
    user's turn that only calls tools) imports back from its blocks export; only the
    blocks API refuses them."""
    blocks = [
        {"sub_type": "MESSAGE", "payload": {"role": "robot", "content": "beep"}},
        {"sub_type": "MESSAGE", "payload": {"role": "user", "content": ""}},
        {"sub_type": "TOOL_CALL", "payload": {"call_id": "c", "name": "f", "arguments": {}}},
    ]
    result = trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(blocks))])
    assert result.blocks == 3
    payloads = [b.payload for b in Block.objects.order_by("number")]
    assert payloads[0] == {"role": "robot", "content": "beep"}
    assert payloads[1] == {"role": "user", "content": ""}


def test_it_refuses_an_event_without_a_role(org):
    found = only(problems_for(org, json.dumps([USER, {"role": 42, "content": "x"}])))
    assert (found["event"], found["field"]) == (1, "role")


def test_it_refuses_an_invalid_tool_name(org):
    call = {"id": "1", "function": {"name": "bad name", "arguments": {}}}
    found = only(problems_for(org, json.dumps([USER, {"role": "assistant", "tool_calls": [call]}])))
    assert (found["field"], found["rule"]) == ("tool_calls[0].payload.name", "no_whitespace")


def test_it_refuses_an_unknown_json_object(org):
    found = only(problems_for(org, json.dumps({"hello": "world"})))
    assert "none of the known formats" in found["message"]


def test_it_reports_every_problem_not_just_the_first(org):
    bad = json.dumps([USER, {"role": "tool", "tool_call_id": "x", "content": "?"}])
    found = problems_for(org, "\n".join([bad, json.dumps([USER]), bad, "{nope"]) + "\n", "r.jsonl")
    assert [p["line"] for p in found] == [1, 3, 4]


# --- optional objects: a non-object is refused, never read as {} ---------------------------

BLOCK = {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "hi"}}


@pytest.mark.parametrize("field", ["metadata", "extra"])
@pytest.mark.parametrize("value", [[1, 2], "note", 3, True])
def test_it_refuses_a_block_whose_metadata_or_extra_is_not_an_object(org, field, value):
    blocks = [BLOCK, {**BLOCK, field: value}]
    found = only(problems_for(org, json.dumps({"blocks": blocks}) + "\n", "runs.jsonl"))
    assert (found["line"], found["block"], found["field"], found["rule"]) == (
        1, 1, field, "json_object"
    )  # fmt: skip
    assert found["message"].startswith(f"{field} must be a JSON object, not ")


@pytest.mark.parametrize("field", ["metadata", "extra"])
def test_it_refuses_a_trace_whose_metadata_or_extra_is_not_an_object(org, field):
    line = {"messages": [USER], field: ["not", "an", "object"]}
    found = only(problems_for(org, json.dumps(line) + "\n", "runs.jsonl"))
    assert (found["line"], found["field"], found["rule"]) == (1, field, "json_object")
    assert found["message"] == f"`{field}` must be a JSON object, not array"


def test_it_refuses_a_leading_metadata_event_that_is_not_an_object(org):
    found = only(problems_for(org, json.dumps([{"metadata": "run 3"}, USER])))
    assert (found["trace"], found["field"], found["rule"]) == (0, "metadata", "json_object")


def test_it_refuses_a_dataset_metadata_line_that_is_not_an_object(org):
    lines = [{"metadata": 7}, [USER]]
    found = only(problems_for(org, "".join(json.dumps(line) + "\n" for line in lines), "r.jsonl"))
    assert (found["line"], found["field"], found["rule"]) == (1, "metadata", "json_object")
    assert found["message"] == "`metadata` must be a JSON object, not number"


@pytest.mark.parametrize("field", ["metadata", "extra"])
def test_a_null_metadata_or_extra_stands_for_none(org, field):
    blocks = [{**BLOCK, field: None}]
    lines = [{"blocks": blocks}, {"messages": [USER], field: None}]
    result = trace_import(
        organization=org, dataset_name="runs",
        files=[as_file("".join(json.dumps(line) + "\n" for line in lines), "r.jsonl")],
    )  # fmt: skip
    assert result.traces == 2
    [block] = Block.objects.filter(trace__dataset=result.dataset, trace__index=0)
    assert getattr(block, field) == {}


# --- The problem cap (harden F10b) -------------------------------------------------------


def test_an_import_stops_reading_once_it_has_found_the_most_problems_it_lists(org):
    """It used to read (and check) the rest of the file, and every later file, after it
    had found MAX_PROBLEMS problems."""
    bad_line = json.dumps([{"role": "user", "content": ""}, {"role": "tool"}]) + "\n"
    first = io.BytesIO((bad_line * (MAX_PROBLEMS * 10)).encode())
    second = io.BytesIO(bad_line.encode())
    files = [("first.jsonl", first), ("second.jsonl", second)]
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="runs", files=files)
    problems = caught.value.problems
    assert first.tell() < len(first.getvalue()) // 2
    assert second.tell() == 0
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1]["message"] == (
        f"stopped after {MAX_PROBLEMS} problems: the rest of the upload was not read"
    )
    assert problems[-1]["rule"] == "too_many_problems"
    assert not Trace.objects.exists()
