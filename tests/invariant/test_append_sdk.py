"""POST /api/v1/trace/{id}/messages: the append's timestamp merge, through invariant-sdk
live, and what it answers for bad input."""

import pytest

from traces.models import Block, Trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALL = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": "x"}}}


def push(sdk, events, dataset="appends"):
    return sdk.create_request_and_push_trace(messages=[events], dataset=dataset).id[0]


def get(sdk, trace_id):
    return sdk.request("GET", f"/api/v1/trace/{trace_id}").json()


def test_appended_events_come_after_the_stored_ones_and_show_in_both_views(sdk):
    events = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]
    trace_id = push(sdk, events)
    answer = sdk.create_request_and_append_messages(
        messages=[{"role": "tool", "tool_call_id": "c1", "content": "found"},
                  {"role": "assistant", "content": "done"}],
        trace_id=trace_id,
        annotations=[{"content": "nice", "address": "messages[3].content:0-4"}],
    )  # fmt: skip
    assert answer == {"success": True}
    got = get(sdk, trace_id)
    roles = [e["role"] for e in got["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    # the stored events come back unchanged; the new ones as sent, with their timestamp
    assert "timestamp" not in got["messages"][0]
    assert got["messages"][2]["timestamp"] == got["messages"][3]["timestamp"]
    assert got["annotations"][0]["address"] == "messages[3].content:0-4"
    trace = Trace.objects.get(uuid=trace_id)
    blocks = Block.objects.filter(trace=trace).order_by("turn", "act", "step", "created_at")
    kinds = [b.sub_type for b in Block.objects.filter(trace=trace).order_by("number")]
    assert kinds == ["MESSAGE", "MESSAGE", "TOOL_CALL", "TOOL_RESULT", "MESSAGE"]
    result = blocks.get(sub_type="TOOL_RESULT")
    assert result.parent.sub_type == "TOOL_CALL"  # the output answers the stored call
    assert trace.block_count == 5


def test_an_event_earlier_than_a_stored_one_is_merged_before_it(sdk, inv):
    events = [
        {"role": "user", "content": "a", "timestamp": "2024-01-01T00:00:10+00:00"},
        {"role": "user", "content": "c", "timestamp": "2024-01-01T00:00:30Z"},
    ]
    trace_id = push(sdk, events)
    response = inv.post(
        f"/api/v1/trace/{trace_id}/messages",
        {"messages": [{"role": "user", "content": "b", "timestamp": "2024-01-01T00:00:20"},
                      {"role": "user", "content": "tie", "timestamp": "2024-01-01T00:00:30Z"}]},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    got = get(sdk, trace_id)
    assert [e["content"] for e in got["messages"]] == ["a", "b", "tie", "c"]
    # a naive timestamp counts as UTC and comes back in UTC ISO form
    assert got["messages"][1]["timestamp"] == "2024-01-01T00:00:20+00:00"
    trace = Trace.objects.get(uuid=trace_id)
    pages = Block.objects.filter(trace=trace).order_by("number")
    assert [b.payload["content"] for b in pages] == ["a", "b", "tie", "c"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"messages": []}, "non-empty list"),
        ({"messages": "x"}, "non-empty list"),
        ({"messages": [1]}, "object"),
        ({"messages": [{"role": "user"}], "annotations": {"a": 1}}, "annotations"),
        ({"messages": [{"role": "user", "timestamp": "yesterday"}]}, "ISO-8601"),
    ],
)
def test_bad_appends_answer_400_and_change_nothing(sdk, inv, body, words):
    trace_id = push(sdk, [{"role": "user", "content": "a"}])
    response = inv.post(f"/api/v1/trace/{trace_id}/messages", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"]
    assert len(get(sdk, trace_id)["messages"]) == 1


def test_an_append_to_a_missing_trace_or_a_non_uuid_is_404(inv):
    body = {"messages": [{"role": "user", "content": "a"}]}
    for trace_id in ("not-a-uuid", "7d3e2f4c-0000-4000-8000-000000000000"):
        response = inv.post(f"/api/v1/trace/{trace_id}/messages", body, format="json")
        assert response.status_code == 404 and response.json() == {"detail": "Trace not found"}


def test_an_append_to_another_organizations_trace_is_404(sdk, rival_org):
    from rest_framework.test import APIClient

    from traces.services.api_keys import api_key_create

    trace_id = push(sdk, [{"role": "user", "content": "a"}])
    rival = APIClient()
    rival.credentials(HTTP_AUTHORIZATION="Bearer " + api_key_create(organization=rival_org).secret)
    body = {"messages": [{"role": "user", "content": "b"}]}
    response = rival.post(f"/api/v1/trace/{trace_id}/messages", body, format="json")
    assert response.status_code == 404
    assert len(get(sdk, trace_id)["messages"]) == 1
