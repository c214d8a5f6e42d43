"""Importing the same trace into the same dataset again is skipped and reported, with a
flag to import anyway (issue 11 item 6): service, CLI and upload page."""

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.conftest import as_file
from traces.errors import ImportFailed
from traces.models import Trace
from traces.services.imports import SKIPPED_IN_DATASET, SKIPPED_IN_UPLOAD, trace_import

EVENTS = [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}]


def test_the_same_trace_again_is_skipped_and_reported(org):
    first = trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    assert (first.traces, first.skipped) == (1, [])
    again = trace_import(
        organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS), "again.json")]
    )
    assert again.traces == 0
    assert again.skipped == [
        {"file": "again.json", "trace": 0, "name": "", "reason": SKIPPED_IN_DATASET}
    ]
    assert Trace.objects.count() == 1
    stored = Trace.objects.get()
    assert len(stored.content_hash) == 64


def test_a_copy_within_one_upload_is_skipped_too(org):
    data = "\n".join([json.dumps(EVENTS), json.dumps(EVENTS), json.dumps(EVENTS[:1])]) + "\n"
    result = trace_import(organization=org, dataset_name="d", files=[as_file(data, "r.jsonl")])
    assert result.traces == 2
    assert result.skipped == [
        {"file": "r.jsonl", "line": 2, "trace": 1, "name": "", "reason": SKIPPED_IN_UPLOAD}
    ]


def test_allow_duplicates_imports_it_anyway(org):
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    result = trace_import(
        organization=org,
        dataset_name="d",
        files=[as_file(json.dumps(EVENTS))],
        allow_duplicates=True,
    )
    assert (result.traces, result.skipped) == (1, [])
    assert Trace.objects.count() == 2


def test_another_dataset_or_another_name_is_not_a_duplicate(org):
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    other = trace_import(organization=org, dataset_name="e", files=[as_file(json.dumps(EVENTS))])
    renamed = json.dumps({"messages": EVENTS, "name": "run 2"})
    named = trace_import(organization=org, dataset_name="d", files=[as_file(renamed)])
    assert (other.traces, named.traces) == (1, 1)


def test_import_traces_reports_skipped_traces_and_takes_allow_duplicates(org, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(EVENTS))
    args = [str(path), "--dataset", "d", "--org", org.slug, "--no-progress"]
    call_command("import_traces", *args, stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_traces", *args, stdout=out)
    assert "Imported 0 traces" in out.getvalue()
    assert "Skipped 1 duplicate trace, the dataset's or repeated" in out.getvalue()
    assert f"{path.name}, trace 0: (no name) (in the dataset)" in out.getvalue()
    call_command("import_traces", *args, "--allow-duplicates", stdout=io.StringIO())
    assert Trace.objects.count() == 2


def test_the_upload_page_skips_and_says_so_unless_the_box_is_ticked(org, client, django_user_model):
    from traces.models import Membership

    user = django_user_model.objects.create_user("ann", password="pw-long-enough-1")
    Membership.objects.create(user=user, organization=org, role="member")
    client.force_login(user)
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    dataset = Trace.objects.get().dataset

    def upload(**more):
        data = {"dataset": dataset.pk, "files": [io.BytesIO(json.dumps(EVENTS).encode())], **more}
        data["files"][0].name = "t.json"
        return client.post(reverse("upload"), data, follow=True)

    page = upload().content.decode()
    assert "skipped 1 duplicate" in page
    assert "t.json · trace 0</span>: the dataset already has it" in page
    assert Trace.objects.count() == 1
    upload(allow_duplicates="1")
    assert Trace.objects.count() == 2


ERRED = [
    {"role": "user", "content": "read it"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "no such file", "is_error": True},
    {"role": "assistant", "content": "it is not there"},
]  # fmt: skip


def test_a_streamed_copy_leaves_out_its_spooled_blocks_and_tool_errors(org, monkeypatch):
    """A long line's blocks are spooled before its content hash is known: a copy's rows
    are left out when the rows are written, and its tool errors are not counted."""
    from traces.ingest.formats import jsonl
    from traces.models import Block

    monkeypatch.setattr(jsonl, "LONG_LINE", 64)  # every line streams
    data = "\n".join([json.dumps(ERRED), json.dumps(EVENTS), json.dumps(ERRED)]) + "\n"
    result = trace_import(organization=org, dataset_name="d", files=[as_file(data, "s.jsonl")])
    assert (result.traces, result.blocks) == (2, 7)
    assert result.skipped == [
        {"file": "s.jsonl", "line": 3, "trace": 2, "name": "", "reason": SKIPPED_IN_UPLOAD}
    ]
    assert Block.objects.count() == 7
    assert Block.objects.filter(is_error=True).count() == 1
    assert sorted(Trace.objects.values_list("tool_errors", flat=True)) == [0, 1]


def test_a_streamed_line_and_a_short_one_have_the_same_content_hash(org, monkeypatch):
    from traces.ingest.formats import jsonl

    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(ERRED) + "\n")])
    monkeypatch.setattr(jsonl, "LONG_LINE", 64)
    again = trace_import(
        organization=org, dataset_name="d", files=[as_file(json.dumps(ERRED) + "\n", "b.jsonl")]
    )
    assert (again.traces, again.blocks, len(again.skipped)) == (0, 0, 1)
    assert Trace.objects.count() == 1


def test_an_import_racing_another_of_the_same_trace_writes_nothing(org, monkeypatch):
    """Attacker review: four uploads of one file at once stored four copies, each having
    read the dataset's hashes before any wrote. Played here in order: the second import
    read the hashes (none) before the first wrote; under the dataset's lock it sees the
    trace written meanwhile and writes nothing, saying why; uploaded again, it is skipped."""
    import traces.services.imports as imports

    read_before = imports._dataset_hashes
    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    monkeypatch.setattr(imports, "_dataset_hashes", lambda **kwargs: set())
    with pytest.raises(ImportFailed) as refused:
        trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    [found] = refused.value.problems
    assert (found["rule"], found["code"]) == ("imported_meanwhile", "CONFLICT")
    assert "just written 1 of these traces" in found["message"]
    assert Trace.objects.count() == 1
    monkeypatch.setattr(imports, "_dataset_hashes", read_before)
    again = trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    assert (again.traces, len(again.skipped), Trace.objects.count()) == (0, 1, 1)


def test_allowed_duplicates_are_not_refused_as_a_race(org, monkeypatch):
    import traces.services.imports as imports

    trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))])
    monkeypatch.setattr(imports, "_dataset_hashes", lambda **kwargs: set())
    trace_import(
        organization=org, dataset_name="d", files=[as_file(json.dumps(EVENTS))],
        allow_duplicates=True,
    )  # fmt: skip
    assert Trace.objects.count() == 2
