import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import FIXTURES, as_file
from traces.models import Trace
from traces.services.imports import trace_import


def export(*args):
    out = StringIO()
    call_command("export_traces", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_chat_export_gives_back_the_imported_events_in_key_order(org):
    path = FIXTURES / "spec000_full_trace.json"
    trace_import(organization=org, dataset_name="d", files=[(path.name, path.open("rb"))])
    lines = export("--dataset", "d", "--org", "acme")
    assert lines[0] == {"metadata": {}}
    assert lines[1]["messages"] == json.loads(path.read_text())
    original = json.dumps(json.loads(path.read_text()))
    assert json.dumps(lines[1]["messages"]) == original


def test_blocks_export_reimports_to_the_same_tree(org):
    path = FIXTURES / "spec004_example_trace.json"
    trace_import(organization=org, dataset_name="d", files=[(path.name, path.open("rb"))])
    out = StringIO()
    call_command("export_traces", "--dataset", "d", "--org", "acme", "--format", "blocks",
                 stdout=out)  # fmt: skip
    trace_import(organization=org, dataset_name="again", files=[as_file(out.getvalue(), "b.jsonl")])
    first, second = Trace.objects.order_by("created_at", "id")
    shape = [
        [(b.sub_type, b.payload) for b in t.blocks.order_by("created_at", "id")]
        for t in (first, second)
    ]
    assert shape[0] == shape[1]


def test_it_says_which_dataset_is_missing(org):
    with pytest.raises(CommandError, match="no dataset named 'nope' in organization 'acme'"):
        export("--dataset", "nope", "--org", "acme")
