"""POST /api/v1/push/trace and GET /api/v1/trace/{id} through invariant-sdk, live."""

import pytest

from traces.models import Block, Dataset, Trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EVENTS = [
    {"role": "system", "content": "You are a helper.", "refusal": None},
    {"role": "user", "content": "Weather in Zurich?"},
    {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Zurich"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "12 C, rain"},
    {"role": "assistant", "content": "It is 12 C and raining.\nTake an umbrella."},
]  # fmt: skip


def parsed(events):
    """What Explorer stores: tool arguments given as JSON text parsed."""
    out = [dict(e) for e in events]
    call = out[2]["tool_calls"][0]
    out[2] = {
        **out[2],
        "tool_calls": [{**call, "function": {"name": "weather", "arguments": {"city": "Zurich"}}}],
    }
    return out


def test_a_push_into_a_new_dataset_stores_events_as_pushed_and_as_blocks(sdk):
    response = sdk.create_request_and_push_trace(
        messages=[EVENTS, EVENTS[:2]],
        annotations=[[{"content": "good call", "address": "messages[2].tool_calls[0]",
                       "extra_metadata": {"source": "user"}}], []],
        metadata=[{"name": "first", "hierarchy_path": ["a", "b"], "reward": 1}, {}],
        dataset="weather-runs",
    )  # fmt: skip
    assert response.dataset == "weather-runs" and response.username == "acme"
    assert len(response.id) == 2
    got = sdk.request("GET", f"/api/v1/trace/{response.id[0]}").json()
    assert got["messages"] == parsed(EVENTS)
    assert got["index"] == 0 and got["name"] == "first" and got["hierarchy_path"] == ["a", "b"]
    assert got["extra_metadata"]["hierarchy_path"] == ["a", "b"]
    assert got["user"] == "acme"
    (note,) = got["annotations"]
    assert note["content"] == "good call" and note["address"] == "messages[2].tool_calls[0]"
    assert note["extra_metadata"] == {"source": "user"}
    second = sdk.request("GET", f"/api/v1/trace/{response.id[1]}").json()
    assert second["index"] == 1 and second["name"] == "Run 1" and second["messages"] == EVENTS[:2]
    trace = Trace.objects.get(uuid=response.id[0])
    assert Dataset.objects.get(name="weather-runs").pk == trace.dataset_id
    kinds = list(Block.objects.filter(trace=trace).order_by("number").values_list("sub_type"))
    assert [k for (k,) in kinds] == ["MESSAGE", "MESSAGE", "MESSAGE", "TOOL_CALL",
                                     "TOOL_RESULT", "MESSAGE"]  # fmt: skip
    assert trace.reward == 1
    # the annotation is anchored to the block its address names
    assert trace.annotations.get().block.sub_type == "TOOL_CALL"


def test_a_push_without_dataset_is_a_snippet(sdk):
    response = sdk.create_request_and_push_trace(messages=[EVENTS[:1]])
    assert response.dataset is None
    got = sdk.request("GET", f"/api/v1/trace/{response.id[0]}").json()
    assert got["dataset"] is None and got["index"] == 0 and got["name"] == "Run 0"


def test_a_bad_dataset_name_answers_the_words_clients_match(inv):
    body = {"messages": [EVENTS], "annotations": None, "metadata": None, "dataset": "a b"}
    response = inv.post("/api/v1/push/trace", body, format="json")
    assert response.status_code == 400
    assert "Dataset name can only contain A-Z, a-z, 0-9, - and _" in response.json()["detail"]
