"""A real OpenTelemetry SDK with the stock OTLP/HTTP exporter against a live server
(pytest-django's live_server: the real receiver over real sockets), the agent loop of
tests/otel/agent.py flushing after each step, and the result read through /v1."""

import gzip
import json

import pytest
import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from tests.otel.agent import (
    ANSWER,
    QUESTION,
    WEATHER,
    genai_agent,
    openinference_agent,
    otlp_exporter,
    otlp_json,
    provider_for,
    recorded,
    request_bytes,
)
from traces.models import Block, OtelSpan, Trace
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(org):
    return api_key_create(organization=org, name="otel tests").secret


def v1(live_server, key, path: str):
    response = requests.get(
        f"{live_server.url}/v1/organizations/acme/{path}",
        headers={"Authorization": f"Bearer {key}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response.json()


def the_trace(live_server, key, dataset_name: str) -> dict:
    [dataset] = [
        d for d in v1(live_server, key, "datasets")["datasets"] if d["name"] == dataset_name
    ]
    [trace] = v1(live_server, key, f"traces?dataset={dataset['id']}")["traces"]
    return trace


def stitched(live_server, key, trace_id: str) -> list[dict]:
    return v1(live_server, key, f"traces/{trace_id}/blocks.stitched")["messages"]


def shape(messages: list[dict]) -> list:
    """The stitched tree as (role, content, [(sub_type, name or content, [result])])."""
    out = []
    for m in messages:
        children = []
        for c in m["children"]:
            p = c["payload"]
            label = p.get("name") if c["sub_type"] == "TOOL_CALL" else p.get("text")
            results = [r["payload"]["output"] for r in c.get("children", [])]
            children.append((c["sub_type"], label, results))
        out.append((m["payload"]["role"], m["payload"]["content"], children))
    return out


GENAI_SHAPE = [
    ("system", "You are a weather bot.", []),
    ("user", QUESTION, []),
    (
        "assistant",
        None,
        [
            ("THINK", "I should look the weather up.", []),
            ("TOOL_CALL", "get_weather", [json.dumps(WEATHER, ensure_ascii=False)]),
        ],
    ),
    ("assistant", ANSWER, []),
]


def export_genai(live_server, key, **exporter_kwargs) -> int:
    """Run the GenAI agent loop through the stock exporter, flushing after each step;
    returns how many export requests were made."""
    exporter = otlp_exporter(live_server.url, key, **exporter_kwargs)
    provider = provider_for({"service.name": "weather-agent"}, exporter)
    batches = []

    def flush():
        before = OtelSpan.objects.count()
        assert provider.force_flush(10_000)
        batches.append(OtelSpan.objects.count() - before)

    genai_agent(provider, flush)
    provider.shutdown()
    return batches


def test_the_genai_agent_loop_arrives_in_batches_as_one_trace_of_blocks(live_server, key):
    batches = export_genai(live_server, key)
    # chat, tool, chat, then the agent span (a parent after its children)
    assert batches == [1, 1, 1, 1]
    trace = the_trace(live_server, key, "weather-agent")
    messages = stitched(live_server, key, trace["id"])
    # The second chat repeats the user's question, the first answer and the tool's
    # output in its input: stored once; the system instructions are a message of their own.
    assert shape(messages) == GENAI_SHAPE
    assert trace["reward"] == 1.0
    meta = trace["metadata"]
    assert len(meta["otel.trace_id"]) == 32
    assert meta["gen_ai.conversation.id"] == "conv-42"
    assert meta["gen_ai.agent.name"] == "weather-bot"
    assert meta["evaluations"][0]["name"] == "correctness"
    assert (trace["input_tokens"], trace["output_tokens"]) == (140, 27)
    assert trace["duration_seconds"] > 0
    assert trace["name"] == "invoke_agent weather-bot"
    turn = messages[2]
    assert turn["metadata"]["otel"]["model"] == "gpt-4o-2024-08-06"
    assert turn["metadata"]["otel"]["usage"] == {"input_tokens": 50, "output_tokens": 12}
    assert turn["metadata"]["otel"]["latency_ms"] >= 0
    call = turn["children"][1]
    assert call["payload"]["call_id"] == "call_1"
    assert call["payload"]["arguments"] == {"city": "Paris"}
    # parents: think and call under the turn, the result under the call
    assert {c["parent_block_id"] for c in turn["children"]} == {turn["id"]}
    assert call["children"][0]["parent_block_id"] == call["id"]
    # the flat list (created_at order) follows the span times too
    flat = v1(live_server, key, f"traces/{trace['id']}/blocks")["blocks"]
    assert [b["sub_type"] for b in flat] == [
        "MESSAGE", "MESSAGE", "MESSAGE", "THINK", "TOOL_CALL", "TOOL_RESULT", "MESSAGE",
    ]  # fmt: skip


def test_gzip_bodies_from_the_stock_exporter(live_server, key):
    export_genai(live_server, key, compression=Compression.Gzip)
    trace = the_trace(live_server, key, "weather-agent")
    assert shape(stitched(live_server, key, trace["id"])) == GENAI_SHAPE


def post(live_server, key, body: bytes, content_type: str, **headers):
    return requests.post(
        f"{live_server.url}/otlp/v1/traces",
        data=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": content_type, **headers},
        timeout=10,
    )


def test_the_json_form_in_batches_in_reverse_order_gives_the_same_trace(live_server, key):
    spans = recorded(genai_agent, {"service.name": "weather-agent"})
    assert len(spans) == 4
    for span in reversed(spans):  # the root first, then the last chat, the tool, the first
        response = post(live_server, key, otlp_json([span]), "application/json")
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "application/json"
        assert response.json() == {}  # nothing refused: an empty partial_success
    trace = the_trace(live_server, key, "weather-agent")
    messages = stitched(live_server, key, trace["id"])
    assert shape(messages) == GENAI_SHAPE
    assert trace["reward"] == 1.0
    numbers = [
        b["metadata"]["otel"]["key"]
        for b in v1(live_server, key, f"traces/{trace['id']}/blocks")["blocks"]
    ]  # noqa: E501
    assert len(numbers) == len(set(numbers)) == 7


def test_resent_spans_are_stored_once(live_server, key):
    spans = recorded(genai_agent, {"service.name": "weather-agent"})
    body = gzip.compress(request_bytes(spans))
    for _ in range(3):  # the exporter's retries
        response = post(
            live_server, key, body, "application/x-protobuf", **{"Content-Encoding": "gzip"}
        )  # noqa: E501
        assert response.status_code == 200
        answer = ExportTraceServiceResponse.FromString(response.content)
        assert answer.partial_success.rejected_spans == 0
    assert OtelSpan.objects.count() == 4
    assert Block.objects.count() == 7
    assert Trace.objects.count() == 1


def test_the_openinference_agent_loop(live_server, key):
    exporter = otlp_exporter(live_server.url, key)
    provider = provider_for(
        {"service.name": "oi-agent", "trace_explorer.dataset": "phoenix runs"}, exporter
    )  # noqa: E501
    openinference_agent(provider, lambda: provider.force_flush(10_000))
    provider.shutdown()
    trace = the_trace(live_server, key, "phoenix runs")
    messages = stitched(live_server, key, trace["id"])
    assert shape(messages) == [
        ("system", "You are a weather bot.", []),
        ("user", QUESTION, []),
        ("assistant", None, [("TOOL_CALL", "get_weather", ["weather service unavailable"])]),
        ("assistant", "Sorry, I could not get the weather.", []),
    ]
    result = messages[2]["children"][0]["children"][0]
    assert result["metadata"]["otel"]["error"]["message"] == "weather service unavailable"
    assert Block.objects.get(sub_type="TOOL_RESULT").is_error
    assert Trace.objects.get().tool_errors == 1
    assert trace["reward"] == 0.0
    assert (trace["input_tokens"], trace["output_tokens"]) == (110, 20)
    assert trace["metadata"]["model"] == "claude-sonnet"


def test_the_same_spans_sent_by_two_requests_at_once_are_stored_once(live_server, key):
    """Two exporters' retries racing: the dataset's lock makes them take turns, so one
    trace, each span once, each block once."""
    from concurrent.futures import ThreadPoolExecutor

    body = request_bytes(recorded(genai_agent, {"service.name": "weather-agent"}))
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda _: post(live_server, key, body, "application/x-protobuf"), range(4))
        )  # noqa: E501
    assert [a.status_code for a in answers] == [200] * 4
    assert (Trace.objects.count(), OtelSpan.objects.count(), Block.objects.count()) == (1, 4, 7)
