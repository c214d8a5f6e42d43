"""A small agent loop instrumented with a real OpenTelemetry SDK, as an agent framework
would be: a user asks for the weather, the model calls a tool, the tool answers, the model
answers, an evaluator scores the run. Its spans go through the stock OTLP/HTTP exporter
(or are kept in memory, to be sent by hand in another order or encoding), flushed after
each step so that they arrive in several batches, children before their parent."""

import base64
import json
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

QUESTION = "What's the weather in Paris?"
ANSWER = "It is sunny in Paris, 22 °C."
WEATHER = {"city": "Paris", "sky": "sunny", "celsius": 22}


def provider_for(resource: dict[str, Any], exporter) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create(resource))
    if isinstance(exporter, InMemorySpanExporter):
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    return provider


def otlp_exporter(url: str, key: str, **kwargs) -> OTLPSpanExporter:
    """The stock exporter, pointed as OTEL_EXPORTER_OTLP_ENDPOINT/HEADERS would point it."""
    return OTLPSpanExporter(
        endpoint=f"{url}/otlp/v1/traces", headers={"Authorization": f"Bearer {key}"}, **kwargs
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


USER = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
TURN_1 = {
    "role": "assistant",
    "parts": [{"type": "reasoning", "content": "I should look the weather up."}, CALL],
    "finish_reason": "tool_call",
}
TOOL = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_1", "response": _dumps(WEATHER)}],
}
TURN_2 = {
    "role": "assistant",
    "parts": [{"type": "text", "content": ANSWER}],
    "finish_reason": "stop",
}  # noqa: E501


# What both chat spans say of the model call besides its messages and usage.
CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.response.model": "gpt-4o-2024-08-06",
    "gen_ai.system_instructions": _dumps([{"type": "text", "content": "You are a weather bot."}]),
}


def genai_agent(provider: TracerProvider, flush: Callable[[], Any], *, score: float = 1.0) -> None:
    """The loop with the current GenAI semantic conventions."""
    tracer = provider.get_tracer("weather-agent")
    agent_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather-bot",
        "gen_ai.conversation.id": "conv-42",
    }
    with tracer.start_as_current_span("invoke_agent weather-bot", attributes=agent_attrs) as agent:
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attributes({
                **CHAT,
                "gen_ai.input.messages": _dumps([USER]),
                "gen_ai.output.messages": _dumps([TURN_1]),
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 12,
            })  # fmt: skip
        flush()
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes({
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": _dumps({"city": "Paris"}),
                "gen_ai.tool.call.result": _dumps(WEATHER),
            })  # fmt: skip
        flush()
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attributes({
                **CHAT,
                "gen_ai.input.messages": _dumps([USER, TURN_1, TOOL]),
                "gen_ai.output.messages": _dumps([TURN_2]),
                "gen_ai.usage.input_tokens": 90,
                "gen_ai.usage.output_tokens": 15,
            })  # fmt: skip
        flush()
        agent.add_event(
            "gen_ai.evaluation.result",
            {"gen_ai.evaluation.name": "correctness", "gen_ai.evaluation.score.value": score},
        )
    flush()


# What both of OpenInference's model spans say first: the model and the conversation's start.
OI_HISTORY = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "claude-sonnet",
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "You are a weather bot.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": QUESTION,
}


def oi_call(message: str) -> dict[str, Any]:
    """The assistant's call of get_weather, flattened as OpenInference writes a message."""
    call = f"{message}.message.tool_calls.0.tool_call"
    return {
        f"{message}.message.role": "assistant",
        f"{call}.id": "toolu_1",
        f"{call}.function.name": "get_weather",
        f"{call}.function.arguments": '{"city": "Paris"}',
    }


def openinference_agent(provider: TracerProvider, flush: Callable[[], Any]) -> None:
    """The same loop as OpenInference (Phoenix) instrumentations write it; the tool fails."""
    tracer = provider.get_tracer("openinference.instrumentation.demo")
    with tracer.start_as_current_span(
        "agent", attributes={"openinference.span.kind": "AGENT", "input.value": QUESTION}
    ) as agent:  # noqa: E501
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attributes({
                **OI_HISTORY, **oi_call("llm.output_messages.0"),
                "llm.token_count.prompt": 40,
                "llm.token_count.completion": 9,
            })  # fmt: skip
        flush()
        with tracer.start_as_current_span("get_weather") as tool:
            tool.set_attributes({
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": '{"city": "Paris"}',
                "output.value": "weather service unavailable",
            })  # fmt: skip
            tool.set_status(Status(StatusCode.ERROR, "weather service unavailable"))
        flush()
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attributes({
                **OI_HISTORY, **oi_call("llm.input_messages.2"),
                "llm.input_messages.3.message.role": "tool",
                "llm.input_messages.3.message.tool_call_id": "toolu_1",
                "llm.input_messages.3.message.content": "weather service unavailable",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Sorry, I could not get the weather.",
                "llm.token_count.prompt": 70,
                "llm.token_count.completion": 11,
            })  # fmt: skip
        flush()
        agent.set_attribute("output.value", "Sorry, I could not get the weather.")
        agent.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.score.value": 0.0})
    flush()


def recorded(agent: Callable, resource: dict[str, Any], **kwargs) -> list:
    """The agent's spans as the SDK ended them, kept in memory."""
    memory = InMemorySpanExporter()
    provider = provider_for(resource, memory)
    agent(provider, lambda: None, **kwargs)
    provider.shutdown()
    return list(memory.get_finished_spans())


def request_bytes(spans: list) -> bytes:
    """The ExportTraceServiceRequest the stock exporter would send for these spans."""
    return encode_spans(spans).SerializeToString()


def otlp_json(spans) -> bytes:
    """The JSON form of the same ExportTraceServiceRequest (the Python exporter has no
    JSON encoding): google.protobuf.json_format's, with the ids in hex as OTLP/JSON
    writes them (protobuf's JSON mapping would write base64)."""
    data = json_format.MessageToDict(encode_spans(spans))
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data).encode()
