"""traces/ingest/detect.py: a file is one JSON value, JSON Lines, a zip or unrecognised,
found by parsing it (issue 15); a trace object keeps every key it does not turn into
blocks in the trace's metadata."""

import io
import json
import zipfile

import pytest

from tests.conftest import as_file
from traces.errors import ImportFailed
from traces.ingest.detect import detect
from traces.models import Block, Trace
from traces.services.imports import trace_import

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": "Done.\n\n```bash\necho ok\n```"},
]


def test_a_pretty_printed_trace_object_is_one_value_not_json_lines():
    data = json.dumps({"messages": MESSAGES, "info": {"exit_status": "Submitted"}}, indent=2)
    assert detect(io.BytesIO(data.encode())).name == "trace-object"


def test_a_pretty_printed_array_is_one_value():
    assert detect(io.BytesIO(json.dumps(MESSAGES, indent=2).encode())).name == "json-array"


def test_two_values_are_json_lines():
    data = json.dumps({"messages": MESSAGES}) + "\n" + json.dumps({"messages": MESSAGES})
    assert detect(io.BytesIO(data.encode())).name == "jsonl"


def test_a_pretty_printed_trace_imports_with_every_other_key_in_metadata(org):
    value = {
        "info": {"exit_status": "Submitted", "submission": "diff --git a/x b/x"},
        "messages": MESSAGES,
        "instance_id": "astropy__astropy-12907",
        "reward": 1,
        "foo": [1, {"bar": None}],
        "metadata": {"model": "m"},
    }
    data = json.dumps(value, indent=2)
    result = trace_import(organization=org, dataset_name="d", files=[as_file(data, "t.json")])
    assert (result.traces, result.blocks) == (1, 3)
    trace = Trace.objects.get()
    assert trace.metadata == {
        "model": "m",
        "info": value["info"],
        "instance_id": "astropy__astropy-12907",
        "reward": 1,
        "foo": [1, {"bar": None}],
    }
    assert trace.reward == 1.0
    assert Block.objects.filter(sub_type="MESSAGE").count() == 3


def test_a_key_of_the_metadata_object_wins_over_a_top_level_key_of_that_name(org):
    data = json.dumps({"messages": MESSAGES, "reward": 0, "metadata": {"reward": 1}}, indent=1)
    trace_import(organization=org, dataset_name="d", files=[as_file(data)])
    assert Trace.objects.get().reward == 1.0


def problem_of(org, data: bytes, name: str = "x.bin") -> dict:
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="d", files=[as_file(data, name)])
    [found] = caught.value.problems
    return found


def test_a_zip_that_is_not_an_inspect_log_says_so_and_lists_the_formats(org):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    found = problem_of(org, buffer.getvalue(), "x.zip")
    assert found["rule"] == "format"
    assert found["message"].startswith("a zip archive that is not an Inspect .eval log")
    assert "notes.txt" in found["message"]
    for line in ("- inspect-eval: ", "- swe-agent: ", "- trace-object: ", "- jsonl: "):
        assert line in found["message"]


def test_a_broken_zip_is_named(org):
    found = problem_of(org, b"PK\x03\x04 not really a zip")
    assert found["rule"] == "zip" and found["message"].startswith("a broken zip archive")


def test_an_unknown_object_lists_each_known_format_with_how_it_is_recognised(org):
    found = problem_of(org, json.dumps({"hello": "world"}).encode())
    first, *known = found["message"].split("\n")
    assert first == (
        "a JSON object with top-level keys [hello] is none of the known formats, "
        "which are recognised so:"
    )
    assert len(known) >= 8 and all(line.startswith("- ") and ": " in line for line in known)


def test_a_header_only_inspect_log_is_named(org):
    found = problem_of(org, json.dumps({"version": 2, "eval": {"task": "t"}}).encode())
    assert found["message"].startswith("an Inspect log without `samples`")


def test_a_file_that_is_not_json_lists_the_formats(org):
    found = problem_of(org, b"hello world")
    assert found["rule"] == "json" and "- tau2-bench: " in found["message"]


def test_an_event_list_without_roles_is_named_once_with_the_formats(org):
    events = [{"kind": "step", "text": "a"}, {"kind": "step", "text": "b"}]
    found = problem_of(org, json.dumps(events).encode())
    assert found["trace"] == 0 and found["rule"] == "format"
    assert found["message"].startswith(
        "an event list without roles: none of its 2 items has `role` (their keys: kind, text)"
    )
    assert "- openhands: " in found["message"]


@pytest.mark.parametrize("padding", [0, 300_000])
def test_an_unpaired_low_surrogate_escape_in_one_json_value_is_refused_with_its_reason(
    org, padding
):
    body = '{"name": "s2", "messages": [{"role": "user", "content": "%sa\\udc00b"}]}' % (
        "x" * padding
    )
    with pytest.raises(ImportFailed) as refused:
        trace_import(organization=org, dataset_name="s", files=[as_file(body, "s2.json")])
    [found] = refused.value.problems
    assert found["rule"] == "json" and "not valid Unicode" in found["message"]
    assert not Trace.objects.exists()
