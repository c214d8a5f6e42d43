"""The labels and comments a trace line carries in `annotations` (traces/ingest/notes.py)
become the imported trace's annotations: this product's exports (a dataset exported and
imported elsewhere keeps its tags and comments) and Invariant Explorer's downloads and
sample data (notes anchored by their address). What cannot be read whole stays in the
trace's metadata, as it was."""

import io
import json

import pytest

from benchmarks.realruns import DEFAULT_DATA
from tests.services.test_trace_import_parts import chat
from traces.errors import ImportFailed
from traces.ingest.notes import NOTE_LABELS_MAX, NOTES_MAX
from traces.models import Annotation, Block, Dataset, Label, Trace
from traces.selectors.annotations import annotation_author
from traces.selectors.exports import dataset_export_lines
from traces.services import imports
from traces.services.annotations import annotation_create, label_create
from traces.services.imports import trace_import

SAMPLE = DEFAULT_DATA / "invariant-explorer" / "sample_data.jsonl"


def import_lines(org, name: str, lines: list, **kwargs):
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return import_bytes(org, name, data, **kwargs)


def import_bytes(org, name: str, data: bytes, **kwargs):
    return trace_import(
        organization=org, dataset_name=name, files=[("runs.jsonl", io.BytesIO(data))], **kwargs
    )


def notes_of(dataset: Dataset) -> list[tuple]:
    """Each annotation as (trace index, block number or None, label, comment, address), by
    trace and comment."""
    rows = Annotation.objects.filter(trace__dataset=dataset).select_related("trace", "block")
    found = [
        (
            a.trace.index,
            a.block.number if a.block_id else None,
            a.label.name if a.label_id else None,
            a.comment,
            a.address,
        )  # fmt: skip
        for a in rows.select_related("label")
    ]
    return sorted(found, key=lambda row: (row[0], row[3]))


@pytest.mark.skipif(not SAMPLE.exists(), reason="needs ../shared/data beside the checkout")
def test_invariant_explorers_sample_note_is_anchored_on_the_block_its_address_names(org):
    with open(SAMPLE, "rb") as stream:
        result = trace_import(
            organization=org, dataset_name="sample", files=[("sample_data.jsonl", stream)]
        )
    note = Annotation.objects.get(trace__dataset=result.dataset)
    assert note.comment.startswith("wow, very cool. This is an annotation example.")
    assert note.address == "messages[2].content:L0"
    assert note.block.sub_type == "TOOL_RESULT"  # messages[2] is the tool's output
    assert note.block.metadata["event_index"] == 2
    assert note.author is None and note.label is None
    assert note.extra_metadata["imported"]["id"] == "6fbd7e0f-0618-4aab-96a7-4f6a2754a508"
    assert "annotations" not in note.trace.metadata


def test_an_explorer_note_on_a_tool_call_and_one_past_the_trace(org):
    line = chat(1)
    line["annotations"] = [
        {"content": "wrong tool", "address": "messages[1].tool_calls[0].function.name"},
        {"content": "nowhere", "address": "messages[40].content:L0"},
        {"content": "", "address": "messages[0].content:0-5", "extra_metadata": {"s": 1}},
        {"content": "not an address", "address": "somewhere"},
    ]
    result = import_lines(org, "explorer", [line])
    assert notes_of(result.dataset) == [
        (0, 1, None, "", "messages[0].content:0-5"),
        (0, None, None, "not an address", "somewhere"),
        (0, None, None, "nowhere", "messages[40].content:L0"),
        (0, 3, None, "wrong tool", "messages[1].tool_calls[0].function.name"),
    ]
    highlight = Annotation.objects.get(comment="")
    assert highlight.extra_metadata == {"s": 1}
    assert Block.objects.get(trace__dataset=result.dataset, number=3).sub_type == "TOOL_CALL"


@pytest.mark.parametrize("fmt", ["blocks", "chat"])
def test_an_exported_dataset_imports_elsewhere_with_its_tags_and_comments(
    org, rival_org, member, fmt
):
    first = import_lines(org, "runs", [chat(1), chat(2)])
    trace = Trace.objects.get(dataset=first.dataset, index=1)
    call = Block.objects.get(trace=trace, sub_type="TOOL_CALL")
    label_create(dataset=first.dataset, name="wrong tool")
    annotation_create(trace=trace, label="wrong tool", block_id=call.pk, author=member)
    annotation_create(trace=trace, comment="a second look", author=member)
    exported = b"".join(dataset_export_lines(dataset=first.dataset, fmt=fmt))

    second = import_bytes(rival_org, "copy", exported)
    # The tag is on the same block when the export names blocks by id; a chat export
    # names none, and the tag is on the trace, the block's old id kept beside it.
    on_block = call.number if fmt == "blocks" else None
    assert notes_of(second.dataset) == [
        (1, on_block, "wrong tool", "", None),
        (1, None, None, "a second look", None),
    ]
    assert Label.objects.filter(dataset=second.dataset, name="wrong tool").count() == 1
    tag = Annotation.objects.get(trace__dataset=second.dataset, label__isnull=False)
    assert tag.author is None  # who wrote it there is said, not taken for a user here
    assert tag.extra_metadata["imported"]["author"] == member.username
    assert tag.extra_metadata["imported"]["block_id"] == call.pk
    copied = Trace.objects.get(dataset=second.dataset, index=1)
    assert "annotations" not in copied.metadata


def test_an_explorer_note_exported_and_imported_again_keeps_its_address_and_provenance(
    org, rival_org, member
):
    line = {**chat(1), "annotations": [
        {"content": "see", "address": "messages[2].content:L0", "extra_metadata": {"s": 1},
         "author": "carol", "time_created": "2024-12-13"},
    ]}  # fmt: skip
    first = import_lines(org, "runs", [line])
    trace = Trace.objects.get(dataset=first.dataset)
    annotation_create(trace=trace, comment="mine", author=member)
    for fmt in ("blocks", "chat"):
        exported = b"".join(dataset_export_lines(dataset=first.dataset, fmt=fmt))
        again = import_bytes(rival_org, f"again-{fmt}", exported)
        notes = {a.comment: a for a in Annotation.objects.filter(trace__dataset=again.dataset)}
        assert notes["see"].address == "messages[2].content:L0"
        assert notes["see"].block.sub_type == "TOOL_RESULT"
        # Where it first came from, not the copy in between.
        assert notes["see"].extra_metadata == {
            "s": 1, "imported": {"author": "carol", "time_created": "2024-12-13"},
        }  # fmt: skip
        assert annotation_author(notes["see"]) == "carol (imported)"
        assert annotation_author(notes["mine"]) == f"{member.username} (imported)"


def test_a_skipped_trace_says_how_many_notes_it_brought(org):
    plain = chat(1)
    first = import_lines(org, "runs", [plain])
    noted = {**plain, "annotations": [{"comment": "a"}, {"label": "b"}]}
    again = import_lines(org, "runs", [noted, noted])
    assert [s["reason"] for s in again.skipped] == ["in_dataset", "in_dataset"]
    assert [s["annotations"] for s in again.skipped] == [2, 2]
    assert not Annotation.objects.filter(trace__dataset=first.dataset).exists()


def test_a_label_the_vocabulary_has_is_used_not_added_again(org):
    first = import_lines(org, "runs", [chat(1)])
    label = label_create(dataset=first.dataset, name="flaky")
    line = {**chat(2), "annotations": [{"label": "flaky", "comment": None, "block_id": None}]}
    import_lines(org, "runs", [line])
    assert Label.objects.filter(dataset=first.dataset).count() == 1
    assert Annotation.objects.get(trace__dataset=first.dataset).label == label


@pytest.mark.parametrize(
    "annotations",
    [
        "a string",
        [],
        [1],
        [{"content": "nul \x00 inside", "address": None}],
        [{"content": 3, "address": "messages[0]"}],
        [{"label": "two\nlines"}],
        [{"label": None, "comment": ""}],
        [{"content": "both shapes", "label": "x"}],
        [{"something": "else"}],
        [{"comment": "x" * 10_001}],
        [{"content": "far", "address": "messages" + "[0]" * 400}],  # over 1,000 characters
        [{"content": "ok", "address": "messages[0]"}, {"comment": 5}],
        [{"comment": "many"}] * (NOTES_MAX + 1),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_annotations_it_cannot_read_whole_stay_in_the_metadata_as_they_were(org, annotations):
    result = import_lines(org, "kept", [{**chat(1), "annotations": annotations}])
    trace = Trace.objects.get(dataset=result.dataset)
    assert trace.metadata["annotations"] == annotations
    assert not Annotation.objects.filter(trace=trace).exists()


def test_a_duplicate_trace_left_out_brings_no_notes(org):
    line = {**chat(1), "annotations": [{"comment": "once", "label": None}]}
    result = import_lines(org, "runs", [line, line])
    assert len(result.skipped) == 1
    assert Annotation.objects.filter(trace__dataset=result.dataset).count() == 1
    again = import_lines(org, "runs", [line])
    assert again.traces == 0
    assert Annotation.objects.filter(trace__dataset=result.dataset).count() == 1


def test_an_upload_that_would_add_too_many_labels_is_refused_and_writes_nothing(org):
    lines = [
        {**chat(n), "annotations": [{"label": f"label {n}"}]} for n in range(NOTE_LABELS_MAX + 1)
    ]
    with pytest.raises(ImportFailed) as caught:
        import_lines(org, "labels", lines)
    assert caught.value.details["problems"][0]["rule"] == "labels"
    assert f"at most {NOTE_LABELS_MAX}" in caught.value.details["problems"][0]["message"]
    assert not Dataset.objects.filter(name="labels").exists()
    assert not Label.objects.exists() and not Annotation.objects.exists()


def test_labels_the_vocabulary_has_do_not_count_against_the_limit(org):
    first = import_lines(org, "labels", [chat(0)])
    names = [f"label {n}" for n in range(NOTE_LABELS_MAX + 1)]
    for name in names:
        label_create(dataset=first.dataset, name=name)
    lines = [{**chat(n + 1), "annotations": [{"label": name}]} for n, name in enumerate(names)]
    result = import_lines(org, "labels", lines)
    assert result.traces == NOTE_LABELS_MAX + 1
    assert Label.objects.filter(dataset=first.dataset).count() == NOTE_LABELS_MAX + 1
    assert Annotation.objects.filter(trace__dataset=first.dataset).count() == len(names)


def test_notes_read_in_parts_are_those_read_whole(org, monkeypatch, settings):
    settings.IMPORT_WORKERS = 3
    monkeypatch.setattr(imports, "PART_MIN_BYTES", 2048)
    lines = []
    for n in range(30):
        line = chat(n)
        line["annotations"] = [
            {"comment": f"note {n}", "label": f"kind {n % 3}", "block_id": None},
            {"content": f"see {n}", "address": "messages[2].content:L0"},
        ]
        lines.append(line)
    lines.append(lines[0])  # a duplicate in the last part: its notes are left out
    read_in_parts = []
    read_parts = imports._read_parts
    monkeypatch.setattr(
        imports, "_read_parts", lambda *a, **k: read_in_parts.append(1) or read_parts(*a, **k)
    )
    in_parts = import_lines(org, "parts", lines)
    assert read_in_parts == [1]
    settings.IMPORT_WORKERS = 1
    whole = import_lines(org, "whole", lines)
    assert len(in_parts.skipped) == len(whole.skipped) == 1
    assert notes_of(in_parts.dataset) == notes_of(whole.dataset)
    assert len(notes_of(in_parts.dataset)) == 60
