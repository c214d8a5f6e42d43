"""traces/selectors/anchors.py: where an addressed note lands. A trace imported from a file
keeps no events to find the text in: a note its import put on a block lands on that block,
on the range of the block's text its address names where it names the content."""

import io
import json

from tests.services.test_trace_import_parts import chat
from traces.anchors import Place
from traces.models import Annotation, Block, Trace
from traces.selectors.anchors import TEXT_PLACED_MAX, anchored_notes
from traces.services.annotations import annotation_create
from traces.services.imports import trace_import


def imported(org, annotations: list, output: str | None = None, name: str = "notes") -> Trace:
    line = {**chat(1), "annotations": annotations}
    line["messages"][0]["content"] = "first line\nsecond line"
    if output is not None:
        line["messages"][2]["content"] = output
    data = json.dumps(line).encode() + b"\n"
    result = trace_import(
        organization=org, dataset_name=name, files=[("runs.jsonl", io.BytesIO(data))]
    )
    return Trace.objects.get(dataset=result.dataset)


def places(trace: Trace) -> dict[str, Place]:
    notes = list(Annotation.objects.filter(trace=trace))
    return {n.annotation.comment: n.place for n in anchored_notes(annotations=notes, trace=trace)}


def test_a_note_an_import_put_on_a_block_lands_on_the_text_its_address_names(org):
    trace = imported(
        org,
        [
            {"content": "line", "address": "messages[0].content:L1"},
            {"content": "range", "address": "messages[2].content:0-6"},
            {"content": "call", "address": "messages[1].tool_calls[0].function.name"},
            {"content": "past", "address": "messages[0].content:L9"},
        ],
    )
    found = places(trace)
    user = Block.objects.get(trace=trace, number=1)
    result = Block.objects.get(trace=trace, sub_type="TOOL_RESULT")
    call = Block.objects.get(trace=trace, sub_type="TOOL_CALL")
    assert found["line"] == Place(user.pk, quote="second line", hint=11 / 22)
    assert found["range"] == Place(result.pk, quote="result", hint=0.0)
    assert found["call"] == Place(call.pk)  # on the block, as nothing of a call is text
    assert found["past"].block == user.pk and "past the end" in found["past"].why


def test_a_note_on_no_block_of_a_trace_without_events_is_unplaced(org):
    trace = imported(org, [{"content": "nowhere", "address": "messages[9].content:L0"}])
    later = annotation_create(trace=trace, comment="mine", address="messages[0]")
    found = places(trace)
    assert found["nowhere"].block is None
    assert "has no event 9" in found["nowhere"].why
    assert later.block_id is None and found["mine"].block is None


def test_a_note_on_an_output_too_long_to_read_for_it_is_on_its_block_without_a_range(org):
    long = "result line\n" + "x" * TEXT_PLACED_MAX
    trace = imported(org, [{"content": "long", "address": "messages[2].content:L0"}], long)
    result = Block.objects.get(trace=trace, sub_type="TOOL_RESULT")
    assert places(trace)["long"] == Place(result.pk)
    short = imported(
        org, [{"content": "short", "address": "messages[2].content:L0"}], "a\nb", "short"
    )
    assert places(short)["short"].quote == "a"
