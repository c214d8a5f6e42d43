"""traces/otel/service.py: spans stored once per trace, a trace grown batch by batch and
placed again in span-time order, and what else the trace holds left alone."""

import json

import pytest

from tests.otel.test_mapping import chat, span, text
from traces.models import Block, Dataset, OtelSpan, Trace
from traces.otel.decode import SpanIn
from traces.otel.service import otel_spans_ingest
from traces.services.blocks import BlockInput, block_create
from traces.services.traces import trace_patch

pytestmark = pytest.mark.django_db
RESOURCE = {"service.name": "svc"}


def send(org, *spans, resource=RESOURCE):
    return otel_spans_ingest(organization=org, spans=[SpanIn(resource, s) for s in spans])


def stitched(trace) -> list[tuple]:
    rows = Block.objects.filter(trace=trace).order_by("turn", "act", "step", "created_at", "id")
    return [(b.number, b.sub_type, b.payload.get("content")) for b in rows]


def test_a_later_batch_with_an_earlier_span_is_placed_before(org):
    u, a = text("user", "first"), text("assistant", "one")
    later = chat(2, [u, a, text("user", "second")], [text("assistant", "two")])
    send(org, later)
    trace = Trace.objects.get()
    assert [c for _, _, c in stitched(trace)] == ["first", "one", "second", "two"]
    # the first chat's span, sent late, brings a system message said before everything
    send(org, chat(1, [text("system", "sys"), u], [a]))
    assert stitched(trace) == [
        (1, "MESSAGE", "sys"), (2, "MESSAGE", "first"), (3, "MESSAGE", "one"),
        (4, "MESSAGE", "second"), (5, "MESSAGE", "two"),
    ]  # fmt: skip
    trace.refresh_from_db()
    assert trace.block_count == 5 and trace.block_counts["MESSAGE"] == 5


def test_a_span_sent_twice_is_stored_once_and_changes_nothing(org):
    one = chat(1, [text("user", "hi")], [text("assistant", "hello")])
    send(org, one, one)
    before = list(Block.objects.values_list("id", "turn", "number"))
    send(org, one)
    assert list(Block.objects.values_list("id", "turn", "number")) == before
    assert OtelSpan.objects.count() == 1


def test_blocks_appended_through_the_api_and_metadata_patches_stay(org):
    send(org, chat(1, [text("user", "hi")], [text("assistant", "hello")]))
    trace = Trace.objects.get()
    mine = block_create(
        trace=trace,
        block=BlockInput(sub_type="MESSAGE", payload={"role": "user", "content": "note"}),
    )  # noqa: E501
    trace_patch(trace=trace, metadata={"reviewer": "ana"})
    send(
        org,
        chat(
            2,
            [text("user", "hi"), text("assistant", "hello"), text("user", "more")],
            [text("assistant", "sure")],
        ),
    )  # noqa: E501
    assert [c for _, _, c in stitched(trace)] == ["hi", "hello", "more", "sure", "note"]
    assert Block.objects.filter(pk=mine["id"]).exists()
    trace.refresh_from_db()
    assert trace.metadata["reviewer"] == "ana"
    assert trace.metadata["otel.trace_id"] == "ab" * 16


def test_the_dataset_is_the_resource_attribute_else_the_service_name(org):
    send(
        org,
        chat(1, [text("user", "a")], []),
        resource={"service.name": "svc", "trace_explorer.dataset": "runs"},
    )  # noqa: E501
    send(org, chat(2, [text("user", "b")], []), resource={"service.name": "svc"})
    send(org, chat(3, [text("user", "c")], []), resource={})
    names = sorted(Trace.objects.values_list("dataset__name", flat=True))
    assert names == ["otel", "runs", "svc"]


def test_a_dataset_name_that_cannot_be_refuses_its_spans_only(org):
    result = send(org, chat(1, [text("user", "a")], []), resource={"service.name": "x" * 201})
    assert (result.rejected, Trace.objects.count()) == (1, 0)
    assert "200 characters" in result.errors[0]


def test_tool_errors_and_usage_are_kept_on_the_trace(org):
    call = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "ls", "arguments": "{}"}],
    }  # noqa: E501
    model = chat(1, [text("user", "list")], [call])
    model["attributes"]["gen_ai.usage.input_tokens"] = 7
    tool = span(
        2,
        "execute_tool ls",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.result": json.dumps({"err": "denied"}),
        },
        status=2,
    )  # noqa: E501
    send(org, tool)
    send(org, model)
    trace = Trace.objects.get()
    assert (trace.tool_errors, trace.input_tokens) == (1, 7)
    result = Block.objects.get(sub_type="TOOL_RESULT")
    assert result.is_error and result.parent.payload["call_id"] == "c1"
    assert trace.metadata["errors"][0]["message"] == "boom"


def test_deleting_the_dataset_or_the_trace_takes_its_spans(org):
    from traces.services.deletion import dataset_delete, trace_delete

    send(org, chat(1, [text("user", "a")], []))
    trace_delete(trace=Trace.objects.get())
    assert not OtelSpan.objects.exists()
    send(org, chat(1, [text("user", "a")], []))
    dataset_delete(dataset=Trace.objects.get().dataset)
    assert not (OtelSpan.objects.exists() or Trace.objects.exists() or Block.objects.exists())
    # the same spans sent again make the dataset and the trace anew
    send(org, chat(1, [text("user", "a")], []))
    assert Block.objects.count() == 1


def test_a_span_with_a_message_nested_past_the_stored_depth_is_refused_whole(org):
    """Nothing of a refused span is kept: not its row, not its other blocks, and no
    trace made for it alone."""
    deep = json.loads("[" * 200 + "]" * 200)
    message = {"role": "user", "parts": [{"type": "text", "content": "x"}], "k": deep}
    result = send(org, chat(1, [message, text("user", "fine")], []))
    assert result.rejected == 1
    assert "raw" in result.errors[0] and "deep" in result.errors[0]
    assert not (OtelSpan.objects.exists() or Trace.objects.exists() or Block.objects.exists())


def test_a_request_all_of_whose_spans_are_refused_makes_no_dataset(org):
    deep = json.loads("[" * 200 + "]" * 200)
    message = {"role": "user", "parts": [{"type": "text", "content": "x"}], "k": deep}
    result = send(org, chat(1, [message], []), resource={"service.name": "only-refused"})
    assert result.rejected == 1
    assert not Dataset.objects.filter(name="only-refused").exists()
    # a dataset that was there before stays, empty or not
    send(org, chat(2, [text("user", "fine")], []), resource={"service.name": "kept"})
    send(org, chat(3, [message], []), resource={"service.name": "kept"})
    assert Trace.objects.filter(dataset__name="kept").count() == 1


def test_a_refused_span_leaves_the_other_spans_of_its_trace(org):
    deep = json.loads("[" * 200 + "]" * 200)
    bad = {"role": "user", "parts": [{"type": "text", "content": "x"}], "k": deep}
    good = chat(1, [text("user", "fine")], [text("assistant", "ok")])
    result = send(org, good, chat(2, [text("user", "fine"), bad], []))
    assert result.rejected == 1 and result.errors[0].startswith(f"span {2:016x}")
    assert list(OtelSpan.objects.values_list("span_id", flat=True)) == [f"{1:016x}"]
    assert [c for _, _, c in stitched(Trace.objects.get())] == ["fine", "ok"]


def test_spans_past_the_trace_caps_are_refused_with_the_reason(org, settings):
    settings.OTEL_TRACE_MAX_SPANS = 2
    first = chat(1, [text("user", "a")], [text("assistant", "b")])
    second = chat(2, [text("user", "c")], [])
    third = chat(3, [text("user", "d")], [])
    result = send(org, first, second, third)
    assert result.rejected == 1
    assert "the most is 2 spans" in result.errors[0]
    assert OtelSpan.objects.count() == 2
    assert [b.payload["content"] for b in Block.objects.order_by("number")] == ["a", "b", "c"]
    settings.OTEL_TRACE_MAX_SPANS = 100
    settings.OTEL_TRACE_MAX_BYTES = sum(OtelSpan.objects.values_list("size", flat=True)) + 10
    assert send(org, third).rejected == 1  # no room in bytes either
    assert OtelSpan.objects.count() == 2


def test_spans_past_the_request_trace_cap_are_refused_with_the_reason(org, settings):
    settings.OTEL_REQUEST_MAX_TRACES = 2
    spans = [chat(n, [text("user", f"u{n}")], []) for n in range(1, 5)]
    for n, s in enumerate(spans):
        s["trace_id"] = f"{n + 1:032x}"
    result = send(org, *spans)
    assert result.rejected == 2
    assert result.errors == ["2 spans refused: a request brings spans of at most 2 traces"]
    assert Trace.objects.count() == 2 and OtelSpan.objects.count() == 2


def test_spans_past_the_request_dataset_cap_are_refused_with_the_reason(org, settings):
    settings.OTEL_REQUEST_MAX_DATASETS = 1
    result = otel_spans_ingest(
        organization=org,
        spans=[
            SpanIn({"service.name": f"svc{n}"}, chat(n, [text("user", "a")], []))
            for n in range(1, 4)
        ],
    )
    assert result.rejected == 2
    assert "at most 1 datasets" in result.errors[0]
    assert list(Trace.objects.values_list("dataset__name", flat=True)) == ["svc1"]


def test_spans_past_the_request_span_cap_are_refused_with_the_reason(org, settings):
    settings.OTEL_REQUEST_MAX_SPANS = 2
    result = send(org, *[chat(n, [text("user", f"u{n}")], []) for n in range(1, 4)])
    assert result.rejected == 1
    assert "at most 2 spans" in result.errors[0]
    assert OtelSpan.objects.count() == 2


def test_a_span_of_too_many_messages_is_refused_with_the_reason(org, settings):
    settings.OTEL_SPAN_MAX_MESSAGES = 3
    many = chat(1, [text("user", f"u{n}") for n in range(3)], [text("assistant", "a")])
    result = send(org, many, chat(2, [text("user", "ok")], []))
    assert result.rejected == 1
    assert result.errors == [f"span {1:016x}: 4 messages, the most a span may hold is 3"]
    assert [c for _, _, c in stitched(Trace.objects.get())] == ["ok"]


def test_a_span_taking_the_trace_past_its_block_cap_is_refused_whole(org, settings):
    settings.OTEL_TRACE_MAX_BLOCKS = 3
    send(org, chat(1, [text("user", "a")], [text("assistant", "b")]))
    result = send(org, chat(2, [text("user", "c"), text("user", "d")], []))
    assert result.rejected == 1
    assert "more than 3 blocks" in result.errors[0]
    assert OtelSpan.objects.count() == 1
    assert [c for _, _, c in stitched(Trace.objects.get())] == ["a", "b"]
    assert send(org, chat(3, [text("user", "e")], [])).rejected == 0
    assert [c for _, _, c in stitched(Trace.objects.get())] == ["a", "b", "e"]


def _weather_run():
    """A real SDK's run with SimpleSpanProcessor: chat 1 asks for a call, the tool runs,
    chat 2 answers; each span exported as it ends."""
    user = text("user", "weather?")
    asks = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather",
                                             "arguments": {"city": "Oslo"}}]}  # fmt: skip
    answer = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                          "response": "sunny"}]}  # fmt: skip
    chat1 = chat(1, [user], [asks])
    tool = span(2, "execute_tool weather", {"gen_ai.operation.name": "execute_tool",
                                            "gen_ai.tool.name": "weather",
                                            "gen_ai.tool.call.id": "c1",
                                            "gen_ai.tool.call.result": "sunny"})  # fmt: skip
    chat2 = chat(3, [user, asks, answer], [text("assistant", "It is sunny")])
    return chat1, tool, chat2


def _shape(trace) -> list[tuple]:
    rows = Block.objects.filter(trace=trace).order_by("turn", "act", "step", "created_at", "id")
    by_id = {b.id: b for b in rows}
    return [
        (
            b.sub_type,
            b.payload.get("content") or b.payload.get("output") or b.payload.get("name"),
            by_id[b.parent_id].sub_type if b.parent_id else None,
            b.metadata["otel"]["key"].split(":")[0],
        )
        for b in rows
    ]


WEATHER = [
    ("MESSAGE", "weather?", None, "m"),
    ("MESSAGE", None, None, "m"),
    ("TOOL_CALL", "weather", "MESSAGE", "call"),
    ("TOOL_RESULT", "sunny", "TOOL_CALL", "result"),
    ("MESSAGE", "It is sunny", None, "m"),
]


@pytest.mark.parametrize("order", [(1, 2, 0), (1, 0, 2), (0, 1, 2), (2, 1, 0)])
def test_spans_in_any_batch_order_make_one_call_under_the_model_message(org, order):
    """The tool span first makes a stand-in call (and an empty assistant message to hold
    it); the model span that made the call takes it over when it arrives."""
    spans = _weather_run()
    for n in order:
        send(org, spans[n])
    trace = Trace.objects.get()
    assert _shape(trace) == WEATHER
    call = Block.objects.get(sub_type="TOOL_CALL")
    assert call.parent.metadata["otel"]["key"].startswith("m:")
    assert call.payload["arguments"] == {"city": "Oslo"}  # the model's, not the stand-in's
    trace.refresh_from_db()
    assert trace.block_count == 5
    numbers = Block.objects.order_by("number").values_list("number", flat=True)
    assert list(numbers) == [1, 2, 3, 4, 5]
