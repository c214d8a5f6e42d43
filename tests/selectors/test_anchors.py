"""traces/selectors/anchors.py: where an addressed note lands. A trace imported from a file
keeps no events to find the text in: a note its import put on a block stays there."""

import io
import json

from tests.services.test_trace_import_parts import chat
from traces.anchors import Place
from traces.models import Annotation, Block, Trace
from traces.selectors.anchors import NO_EVENTS, anchored_notes
from traces.services.annotations import annotation_create
from traces.services.imports import trace_import


def imported(org, annotations: list) -> Trace:
    line = {**chat(1), "annotations": annotations}
    data = json.dumps(line).encode() + b"\n"
    result = trace_import(
        organization=org, dataset_name="notes", files=[("runs.jsonl", io.BytesIO(data))]
    )
    return Trace.objects.get(dataset=result.dataset)


def test_a_note_an_import_put_on_a_block_lands_there_though_the_trace_keeps_no_events(org):
    trace = imported(org, [{"content": "the output", "address": "messages[2].content:L0"}])
    note = Annotation.objects.get(trace=trace)
    result = Block.objects.get(trace=trace, sub_type="TOOL_RESULT")
    [anchored] = anchored_notes(annotations=[note], trace=trace)
    assert anchored.place == Place(result.pk, why=f"messages[2].content:L0: {NO_EVENTS}")


def test_a_note_on_no_block_of_a_trace_without_events_is_unplaced(org):
    trace = imported(org, [{"content": "nowhere", "address": "messages[9].content:L0"}])
    later = annotation_create(trace=trace, comment="mine", address="messages[0]")
    notes = list(Annotation.objects.filter(trace=trace).order_by("comment"))
    places = {n.annotation.comment: n.place for n in anchored_notes(annotations=notes, trace=trace)}
    assert places["nowhere"].block is None
    assert "has no event 9" in places["nowhere"].why
    assert later.block_id is None and places["mine"].block is None
