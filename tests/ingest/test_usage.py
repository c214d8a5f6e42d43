"""Usage figures (issue 11 item 7): each format that carries tokens, cost or duration
fills the Trace columns input_tokens, output_tokens, cost_usd and duration_seconds on
import, from real files; /v1 lists them; a figure that is not a plain number stays in
the metadata only."""

import io
import json
import math
from pathlib import Path

import orjson
import pytest
from django.db import IntegrityError, transaction

from tests.conftest import SHARED_DATA, key_client
from tests.ingest.formats.test_mini_swe_agent import wrapped
from traces.ingest.types import Usage
from traces.models import Trace
from traces.services.imports import trace_import

REAL = Path(__file__).parents[1] / "fixtures" / "real"


def usage_of(trace: Trace) -> tuple:
    return (trace.input_tokens, trace.output_tokens, trace.cost_usd, trace.duration_seconds)


def imported(org, name: str, data: bytes) -> list[Trace]:
    trace_import(organization=org, dataset_name="usage", files=[(name, io.BytesIO(data))])
    return list(Trace.objects.order_by("index"))


def shared(relative: str) -> bytes:
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    return path.read_bytes()


def test_inspect_sums_model_usage_and_takes_the_sample_total_time(org):
    data = shared("inspect-ai/2025-05-12T20-27-36-04-00_browser.json")
    [trace] = imported(org, "browser.json", data)
    # model_usage {"openai/gpt-4o-mini": {input_tokens 15235, output_tokens 281}}, total_time
    assert usage_of(trace) == (15235, 281, None, 18.517)


def test_inspect_eval_sums_every_model_of_a_sample(org):
    path = REAL / "inspect_arith_zstd.eval"
    traces = imported(org, path.name, path.read_bytes())
    assert len(traces) == 2
    for trace in traces:
        assert trace.input_tokens is not None and trace.output_tokens is not None
        assert trace.duration_seconds is not None and trace.duration_seconds >= 0


def test_tau2_takes_the_agents_cost_tokens_and_the_duration(org):
    data = shared("tau2-bench/telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json")
    first = imported(org, "tau2.json", data)[0]
    sim = json.loads(data)["simulations"][0]
    assert first.cost_usd == sim["agent_cost"] == 0.13041750000000002
    assert first.duration_seconds == 230.32971491804346
    # the user simulator's tokens are not the agent's
    agent = [m["usage"] for m in sim["messages"] if m["role"] == "assistant" and m["usage"]]
    assert first.input_tokens == sum(u["prompt_tokens"] for u in agent) > 0
    assert first.output_tokens == sum(u["completion_tokens"] for u in agent) > 0
    assert first.metadata["user_cost"] == 0.07259000000000002


def test_swe_agent_takes_the_instance_model_stats(org):
    [trace] = imported(org, "p.traj", shared("swe-agent/pydicom__pydicom-1458.traj"))
    # model_stats: instance_cost 1.26719, tokens_sent 122612, tokens_received 1369
    assert usage_of(trace) == (122612, 1369, 1.26719, None)


def test_mini_swe_agent_takes_the_instance_cost(org):
    data = wrapped()
    data["info"]["model_stats"]["instance_cost"] = 0.0661002
    [trace] = imported(org, "m.traj.json", json.dumps(data, indent=2).encode())
    assert usage_of(trace) == (None, None, 0.0661002, None)


def test_openhands_sums_each_model_response_once_and_times_the_stream(org):
    path = REAL / "openhands_wrong_initial_state.json"
    [trace] = imported(org, path.name, path.read_bytes())
    # four responses (3475+3616+3804+3933 prompt, 95+111+85+67 completion tokens), each
    # repeated by its observation; 23:16:50.239610 to 23:17:02.182015
    assert usage_of(trace) == (14828, 358, None, pytest.approx(11.942405))


def test_openhands_prefers_the_last_accumulated_llm_metrics(org):
    stream = json.loads((REAL / "openhands_wrong_initial_state.json").read_text())
    stream[3]["llm_metrics"] = {"accumulated_cost": 0.01, "accumulated_token_usage": {}}
    stream[-1]["llm_metrics"] = {
        "accumulated_cost": 0.0421,
        "accumulated_token_usage": {"prompt_tokens": 14000, "completion_tokens": 400},
    }
    [trace] = imported(org, "oh.json", orjson.dumps(stream))
    assert usage_of(trace)[:3] == (14000, 400, 0.0421)


def test_a_chat_trace_has_no_usage(org):
    [trace] = imported(org, "chat.json", b'[{"role": "user", "content": "hi"}]')
    assert usage_of(trace) == (None, None, None, None)


@pytest.mark.parametrize(
    "stats",
    [
        {"tokens_sent": -1, "tokens_received": "12", "instance_cost": -0.5},
        {"tokens_sent": 1e30, "tokens_received": True, "instance_cost": 1e13},
    ],
)
def test_a_figure_that_is_no_plain_number_stays_in_the_metadata_only(org, stats):
    data = json.loads(shared("swe-agent/pydicom__pydicom-1458.traj"))
    data["info"]["model_stats"] = stats
    [trace] = imported(org, "p.traj", orjson.dumps(data))
    assert usage_of(trace) == (None, None, None, None)
    assert trace.metadata["model_stats"] == stats


def test_usage_keeps_whole_floats_as_tokens_and_refuses_nan():
    assert Usage.of(input_tokens=12.0, cost_usd=math.nan, duration_seconds=math.inf) == Usage(
        input_tokens=12
    )
    assert Usage.of(output_tokens=1.5, cost_usd=0, duration_seconds=3) == Usage(
        cost_usd=0.0, duration_seconds=3.0
    )


@pytest.mark.parametrize(
    "field, value",
    [("cost_usd", -1.0), ("cost_usd", 2e12), ("duration_seconds", -0.1), ("input_tokens", -3),
     ("output_tokens", -1)],
)  # fmt: skip
def test_the_database_refuses_a_figure_out_of_range(org, field, value):
    trace = Trace.objects.create(organization=org, name="t")
    with pytest.raises(IntegrityError), transaction.atomic():
        Trace.objects.filter(pk=trace.pk).update(**{field: value})


def test_the_api_lists_and_gets_the_figures(org):
    path = REAL / "openhands_wrong_initial_state.json"
    [trace] = imported(org, path.name, path.read_bytes())
    client = key_client(org, "viewer")
    got = client.get(f"/v1/organizations/{org.slug}/traces/{trace.id}")
    assert got.status_code == 200
    body = got.json()
    assert (body["input_tokens"], body["output_tokens"], body["cost_usd"]) == (14828, 358, None)
    assert body["duration_seconds"] == pytest.approx(11.942405)
    listed = client.get(f"/v1/organizations/{org.slug}/traces", {"dataset": trace.dataset_id})
    assert listed.status_code == 200
    [row] = listed.json()["traces"]
    assert row["input_tokens"] == 14828
