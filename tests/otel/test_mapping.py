"""traces/otel/mapping.py: spans (as traces.otel.decode makes them) -> block drafts, for
each way of writing a model call, without a database."""

import json

from traces.otel.mapping import derive, span_messages

TRACE = "ab" * 16


def span(n: int, name: str, attributes=None, events=None, parent=None, status=0, start=None):
    start = start if start is not None else n * 1_000_000
    return {
        "trace_id": TRACE, "span_id": f"{n:016x}", "parent_span_id": parent or "", "name": name,
        "kind": 1, "scope": "", "start_ns": start, "end_ns": start + 500_000,
        "attributes": attributes or {}, "events": events or [],
        "status": {"code": status, "message": "boom" if status == 2 else ""},
    }  # fmt: skip


def tree(drafts) -> list:
    """(sub_type, role or name or text/output, parent's sub_type) in the derived order."""
    by_key = {d.key: d for d in drafts}
    out = []
    for d in drafts:
        p = d.payload
        label = (
            p.get("role")
            and (p["role"], p["content"])
            or p.get("name")
            or p.get("text")
            or p.get("output")
        )  # noqa: E501
        parent = by_key[d.parent_key].sub_type if d.parent_key else None
        out.append((d.sub_type, label, parent))
    return out


def chat(n, inputs, outputs, **kw):
    return span(n, "chat", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }, **kw)  # fmt: skip


def text(role, content):
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def test_a_message_said_twice_is_kept_twice_and_history_once():
    """'go on' said by the user in two turns is two messages; each chat's history repeats
    the earlier ones, which are stored once."""
    u1, a1, u2, a2 = (
        text("user", "go on"),
        text("assistant", "ok"),
        text("user", "go on"),
        text("assistant", "done"),
    )  # noqa: E501
    drafts = derive([chat(1, [u1], [a1]), chat(2, [u1, a1, u2], [a2])]).drafts
    assert tree(drafts) == [
        ("MESSAGE", ("user", "go on"), None),
        ("MESSAGE", ("assistant", "ok"), None),
        ("MESSAGE", ("user", "go on"), None),
        ("MESSAGE", ("assistant", "done"), None),
    ]
    assert len({d.key for d in drafts}) == 4


def test_the_same_spans_in_any_order_derive_the_same_drafts():
    u, a = text("user", "hi"), text("assistant", "hello")
    spans = [chat(1, [u], [a]), chat(2, [u, a, text("user", "bye")], [text("assistant", "bye")])]
    forward = [(d.key, d.payload) for d in derive(spans).drafts]
    backward = [(d.key, d.payload) for d in derive(spans[::-1]).drafts]
    assert forward == backward


def test_the_older_event_form():
    events = [
        {"name": "gen_ai.system.message", "time_ns": 1, "attributes": {"content": "Be brief."}},
        {"name": "gen_ai.user.message", "time_ns": 2, "attributes": {"content": "Weather?"}},
        {"name": "gen_ai.choice", "time_ns": 3, "attributes": {
            "index": 0, "finish_reason": "tool_calls",
            "message": json.dumps({"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"q": 1}'}},  # noqa: E501
            ]}),
        }},
    ]  # fmt: skip
    tool_events = [
        {
            "name": "gen_ai.tool.message",
            "time_ns": 5,
            "attributes": {"id": "c1", "content": "rain"},
        },  # noqa: E501
        {
            "name": "gen_ai.choice",
            "time_ns": 6,
            "attributes": {"gen_ai.event.content": json.dumps({"message": {"content": "Rain."}})},
        },  # noqa: E501
    ]
    first = span(1, "chat", {"gen_ai.operation.name": "chat"}, events=events)
    second = span(2, "chat", {"gen_ai.operation.name": "chat"}, events=events[:2] + tool_events)
    second["events"].insert(2, {"name": "gen_ai.assistant.message", "time_ns": 4, "attributes": {
        "tool_calls": json.dumps([{"id": "c1", "function": {"name": "weather", "arguments": '{"q": 1}'}}])  # noqa: E501
    }})  # fmt: skip
    assert tree(derive([first, second]).drafts) == [
        ("MESSAGE", ("system", "Be brief."), None),
        ("MESSAGE", ("user", "Weather?"), None),
        ("MESSAGE", ("assistant", None), None),
        ("TOOL_CALL", "weather", "MESSAGE"),
        ("TOOL_RESULT", "rain", "TOOL_CALL"),
        ("MESSAGE", ("assistant", "Rain."), None),
    ]


def test_openinference_messages_are_read_as_parts():
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "look",
        "llm.input_messages.10.message.role": "user",
        "llm.input_messages.10.message.content": "tenth",
        "llm.input_messages.2.message.role": "user",
        "llm.input_messages.2.message.content": "second",
    }
    inputs, outputs = span_messages(span(1, "llm", attributes))
    assert [m["parts"][0]["content"] for m in inputs] == ["look", "second", "tenth"]
    assert outputs == []


def test_a_tool_span_whose_call_no_model_span_made_gets_a_call_of_its_own():
    tool = span(1, "execute_tool", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
        "gen_ai.tool.call.arguments": '{"q": "x"}', "gen_ai.tool.call.result": "found",
    }, status=2)  # fmt: skip
    drafts = derive([tool]).drafts
    assert tree(drafts) == [
        ("MESSAGE", ("assistant", None), None),
        ("TOOL_CALL", "search", "MESSAGE"),
        ("TOOL_RESULT", "found", "TOOL_CALL"),
    ]
    assert drafts[2].is_error and drafts[2].metadata["otel"]["error"] == {"message": "boom"}


def test_a_tool_span_answers_a_call_by_name_when_it_has_no_id():
    call = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "x9", "name": "search", "arguments": {}}],
    }  # noqa: E501
    tool = span(
        2,
        "search",
        {"openinference.span.kind": "TOOL", "tool.name": "search", "output.value": "hit"},
    )  # noqa: E501
    drafts = derive([chat(1, [text("user", "q")], [call]), tool]).drafts
    [result] = [d for d in drafts if d.sub_type == "TOOL_RESULT"]
    assert result.payload == {"call_id": "x9", "output": "hit"}


def test_the_last_evaluation_sets_the_reward_and_usage_adds_up():
    events = [
        {
            "name": "gen_ai.evaluation.result",
            "time_ns": 9,
            "attributes": {"gen_ai.evaluation.score.value": 0.25},
        },  # noqa: E501
        {
            "name": "gen_ai.evaluation.result",
            "time_ns": 5,
            "attributes": {"gen_ai.evaluation.score.value": 1e300},
        },  # noqa: E501
    ]
    spans = [
        span(
            1,
            "agent",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 999},
            events=events,
        ),  # noqa: E501
        span(
            2,
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 3,
                "gen_ai.usage.output_tokens": 4,
            },
            parent=f"{1:016x}",
        ),  # noqa: E501
        span(
            3,
            "chat",
            {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5},
            parent=f"{1:016x}",
        ),  # noqa: E501
    ]
    derived = derive(spans)
    assert derived.metadata["reward"] == 0.25
    assert [e["score"] for e in derived.metadata["evaluations"]] == [1e300, 0.25]
    # the agent span's own total is not counted again
    assert (derived.input_tokens, derived.output_tokens) == (8, 4)
    assert derived.name == "agent"


def test_an_out_of_range_score_is_no_reward():
    events = [
        {
            "name": "gen_ai.evaluation.result",
            "time_ns": 1,
            "attributes": {"gen_ai.evaluation.score.value": 1e300},
        }
    ]  # noqa: E501
    assert "reward" not in derive([span(1, "agent", events=events)]).metadata


def test_hostile_values_do_not_break_the_derivation():
    """Messages that are not JSON, parts that are not objects, numbers where text goes."""
    spans = [
        span(
            1,
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": "not json",
                "gen_ai.output.messages": '[1, null, {"parts": 3}]',
            },
        ),  # noqa: E501
        span(
            2,
            "chat",
            {
                "gen_ai.input.messages": json.dumps(
                    [{"role": 7, "parts": [{"type": "text", "content": {"a": 1}}, 5]}]
                )
            },
        ),  # noqa: E501
    ]
    drafts = derive(spans).drafts
    assert [d.sub_type for d in drafts] == ["MESSAGE", "MESSAGE"]


def test_messages_nested_past_the_parser_are_not_read():
    deep = "[" * 5000 + "]" * 5000
    spans = [span(1, "chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": deep})]
    assert derive(spans).drafts == []


def test_a_run_only_an_agent_span_describes_is_its_input_and_output():
    agent = span(
        1, "agent", {"openinference.span.kind": "AGENT", "input.value": "2+2?", "output.value": "4"}
    )  # noqa: E501
    assert tree(derive([agent]).drafts) == [
        ("MESSAGE", ("user", "2+2?"), None),
        ("MESSAGE", ("assistant", "4"), None),
    ]
    # with a model span, the agent's input and output are that span's messages: not again
    model = chat(2, [text("user", "2+2?")], [text("assistant", "4")], parent=f"{1:016x}")
    assert len(derive([agent, model]).drafts) == 2


def test_a_failed_tool_span_without_output_shows_its_status_message():
    tool = span(1, "execute_tool ls", {"gen_ai.operation.name": "execute_tool",
                                       "gen_ai.tool.name": "ls"}, status=2)  # fmt: skip
    result = next(d for d in derive([tool]).drafts if d.sub_type == "TOOL_RESULT")
    assert result.payload["output"] == "error: boom" and result.is_error


def test_a_failed_tool_span_with_output_keeps_its_output():
    tool = span(1, "execute_tool ls", {"gen_ai.operation.name": "execute_tool",
                                       "gen_ai.tool.name": "ls",
                                       "gen_ai.tool.call.result": "denied"}, status=2)  # fmt: skip
    result = next(d for d in derive([tool]).drafts if d.sub_type == "TOOL_RESULT")
    assert result.payload["output"] == "denied" and result.is_error
