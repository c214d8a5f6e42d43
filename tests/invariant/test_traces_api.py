"""GET and DELETE /api/v1/trace/{id}, snippets, images: Explorer's ids, access answers and
query parameters (Django's test client; the SDK's own calls are tested live elsewhere)."""

import pytest
from rest_framework.test import APIClient

from traces.models import Block, Dataset, Trace, TraceEvent
from traces.services.annotations import trace_extra_update

pytestmark = pytest.mark.django_db

MISSING = "7d3e2f4c-0000-4000-8000-000000000000"


def test_a_non_uuid_or_missing_trace_is_404(inv):
    for trace_id in ("tr_01ABC", "42", MISSING):
        response = inv.get(f"/api/v1/trace/{trace_id}")
        assert response.status_code == 404 and response.json() == {"detail": "Trace not found"}


def test_someone_elses_private_trace_is_401_and_a_public_one_readable_by_anyone(pushed, rival):
    trace_id = pushed()
    response = rival.get(f"/api/v1/trace/{trace_id}")
    assert response.status_code == 401 and response.json() == {"detail": "Unauthorized get"}
    assert APIClient().get(f"/api/v1/trace/{trace_id}").status_code == 401
    Dataset.objects.update(is_public=True)
    assert rival.get(f"/api/v1/trace/{trace_id}").status_code == 200
    assert APIClient().get(f"/api/v1/trace/{trace_id}").json()["id"] == trace_id


def test_a_bad_key_is_401_even_for_a_public_trace(pushed):
    trace_id = pushed()
    Dataset.objects.update(is_public=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer nope")
    response = client.get(f"/api/v1/trace/{trace_id}")
    assert response.status_code == 401 and "detail" in response.json()


def test_max_length_truncates_long_content_and_include_annotations_false_drops_the_key(inv, pushed):
    trace_id = pushed()
    got = inv.get(f"/api/v1/trace/{trace_id}?max_length=10&include_annotations=false").json()
    assert got["messages"][1]["content"] == "xxxxx<...truncated 40 characters...>xxxxx"
    assert "annotations" not in got
    assert inv.get(f"/api/v1/trace/{trace_id}?max_length=ten").status_code == 422


def test_a_reward_given_in_the_explorer_shows_in_extra_metadata(inv, pushed):
    trace_id = pushed()
    trace_extra_update(trace=Trace.objects.get(uuid=trace_id), extra={"reward": 1})
    assert inv.get(f"/api/v1/trace/{trace_id}").json()["extra_metadata"]["reward"] == 1


def test_uploader_is_hidden(inv):
    body = {"messages": [[{"role": "user"}]], "metadata": [{"uploader": "me", "k": 1}]}
    trace_id = inv.post("/api/v1/push/trace", body, format="json").json()["id"][0]
    assert inv.get(f"/api/v1/trace/{trace_id}").json()["extra_metadata"] == {"k": 1}


def test_events_the_blocks_api_refuses_are_kept_as_pushed(inv):
    events = [
        {"role": "narrator", "content": None},
        {"role": "tool", "tool_call_id": "nowhere", "content": "orphan"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "[1, 2]"}},
            {"id": "u", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
        {"role": "user", "content": [{"type": "text", "text": "list content"}]},
        {"role": "user", "content": "y" * 3_000_000},
    ]  # fmt: skip
    body = {"messages": [events], "dataset": "odd"}
    response = inv.post("/api/v1/push/trace", body, format="json")
    assert response.status_code == 200, response.content
    got = inv.get(f"/api/v1/trace/{response.json()['id'][0]}?max_length=10000000").json()
    assert got["messages"][0] == events[0] and got["messages"][1] == events[1]
    calls = got["messages"][2]["tool_calls"]
    assert calls[0]["function"]["arguments"] == [1, 2]
    assert calls[1]["function"]["arguments"] == "not json"
    assert got["messages"][3:] == events[3:]
    trace = Trace.objects.get(uuid=got["id"])
    # the orphan output and the message over the import's limit have no blocks
    counts = dict(TraceEvent.objects.filter(trace=trace).values_list("position", "block_count"))
    assert counts[1] == 0 and counts[4] == 0 and counts[0] == 1


def test_delete_removes_the_trace_and_keeps_the_others_indices(inv, pushed, rival):
    first, second = pushed(), pushed()
    assert rival.delete(f"/api/v1/trace/{first}").status_code == 401
    response = inv.delete(f"/api/v1/trace/{first}")
    assert response.status_code == 200 and response.json() == {"message": "deleted"}
    assert inv.get(f"/api/v1/trace/{first}").status_code == 404
    assert Trace.objects.get(uuid=second).index == 1
    assert not TraceEvent.objects.filter(trace__uuid=first).exists()
    assert inv.delete(f"/api/v1/trace/{MISSING}").status_code == 404


def test_snippets_lists_the_callers_traces_without_dataset_newest_first(inv, pushed):
    pushed(dataset=None)
    newest = pushed(events=[{"role": "user", "content": "newer"}], dataset=None)
    pushed()
    got = inv.get("/api/v1/trace/snippets?limit=5").json()
    assert [t["id"] for t in got][0] == newest and len(got) == 2


def test_an_image_of_another_trace_or_missing_is_404(inv, pushed):
    trace_id = pushed()
    response = inv.get(f"/api/v1/trace/image/runs/{trace_id}/{'0' * 64}.png")
    assert response.status_code == 404 and response.json() == {"detail": "Image not found"}


def test_push_refusals_are_400(inv):
    for body, words in [
        ({"messages": []}, "non-empty list of lists"),
        ({"messages": [{"role": "user"}]}, "non-empty list of lists"),
        ({"messages": [[]], "annotations": [[], []]}, "annotations must be null or a list"),
        ({"messages": [[]], "metadata": {}}, "metadata must be null or a list"),
        ({"messages": [[]], "dataset": 5}, "dataset must be a string"),
    ]:
        response = inv.post("/api/v1/push/trace", body, format="json")
        assert response.status_code == 400 and words in response.json()["detail"], body
    assert not Trace.objects.exists()


def test_push_without_a_key_is_401_and_with_a_viewer_key_401(org):
    from traces.services.api_keys import api_key_create

    body = {"messages": [[{"role": "user"}]]}
    assert APIClient().post("/api/v1/push/trace", body, format="json").status_code == 401
    viewer = APIClient()
    secret = api_key_create(organization=org, role="viewer").secret
    viewer.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert viewer.post("/api/v1/push/trace", body, format="json").status_code == 401
    assert not Trace.objects.exists()


def test_health_answers_200_without_a_slash_redirect(client):
    assert client.get("/api/v1/").status_code == 200
    assert client.get("/api/v1").status_code == 200


def test_an_append_at_the_end_of_a_long_trace_writes_only_its_own_rows(
    inv, pushed, django_assert_max_num_queries
):
    events = [{"role": "user" if n % 2 else "assistant", "content": f"e{n}"} for n in range(300)]
    trace_id = pushed(events=events)
    body = {"messages": [{"role": "user", "content": "last"}]}
    with django_assert_max_num_queries(30):  # a bound that does not grow with the trace
        response = inv.post(f"/api/v1/trace/{trace_id}/messages", body, format="json")
    assert response.status_code == 200
    trace = Trace.objects.get(uuid=trace_id)
    assert trace.block_count == 301
    assert TraceEvent.objects.get(trace=trace, position=300).first_block == 301


def test_an_unknown_path_under_api_v1_is_404_in_explorers_shape(inv):
    response = inv.get("/api/v1/no/such/route")
    assert response.status_code == 404 and response.json() == {"detail": "Not Found"}


def test_an_early_append_moves_a_long_traces_events_in_a_few_statements(
    inv, pushed, django_assert_max_num_queries
):
    # Two new events, one before every stored event and one amid them: two runs move.
    events = [
        {
            "role": "user",
            "content": f"e{n}",
            "timestamp": f"2024-01-01T00:{n // 60:02}:{n % 60:02}Z",
        }
        for n in range(300)
    ]
    trace_id = pushed(events=events)
    first = {"role": "user", "content": "first", "timestamp": "2000-01-01T00:00:00Z"}
    mid = {"role": "user", "content": "mid", "timestamp": "2024-01-01T00:02:30.5Z"}
    body = {"messages": [first, mid]}
    with django_assert_max_num_queries(40):  # not one UPDATE a moved event
        response = inv.post(f"/api/v1/trace/{trace_id}/messages", body, format="json")
    assert response.status_code == 200, response.content
    got = [e["content"] for e in inv.get(f"/api/v1/trace/{trace_id}").json()["messages"]]
    assert got == ["first"] + [f"e{n}" for n in range(151)] + ["mid"] + [
        f"e{n}" for n in range(151, 300)
    ]
    trace = Trace.objects.get(uuid=trace_id)
    rows = TraceEvent.objects.filter(trace=trace).order_by("position")
    assert list(rows.values_list("position", "first_block")) == [(p, p + 1) for p in range(302)]
    # the blocks follow the events: in number, in creation time, in turn
    blocks = Block.objects.filter(trace=trace)
    assert [b.payload["content"] for b in blocks.order_by("number")] == got
    assert [b.payload["content"] for b in blocks.order_by("created_at", "id")] == got
    assert [b.turn for b in blocks.order_by("number")] == list(range(302))


def test_a_trace_over_the_event_caps_is_refused_with_400(inv, pushed, settings):
    settings.EXPLORER_MAX_TRACE_EVENTS, settings.EXPLORER_MAX_APPEND_EVENTS = 3, 2
    event = {"role": "user", "content": "a"}
    response = inv.post("/api/v1/push/trace", {"messages": [[event] * 4]}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("a trace holds at most 3 events")
    trace_id = pushed(events=[event, event])
    url = f"/api/v1/trace/{trace_id}/messages"
    response = inv.post(url, {"messages": [event] * 3}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("an append adds at most 2 events")
    response = inv.post(url, {"messages": [event] * 2}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "a trace holds at most 3 events (EXPLORER_MAX_TRACE_EVENTS); this one would "
        "hold 2 stored and 2 new"
    }
    assert TraceEvent.objects.filter(trace__uuid=trace_id).count() == 2
    assert inv.post(url, {"messages": [event]}, format="json").status_code == 200


BIG = 10**20
RANGE = "must be between 0 and 2147483647"


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("dataset/list?kind=any&limit=-1", f"limit {RANGE}"),
        (f"dataset/list?kind=any&limit={BIG}", f"limit {RANGE}"),
        (f"trace/snippets?limit={BIG}", f"limit {RANGE}"),
        (f"dataset/byid/{{dataset}}/traces?offset={BIG}", f"offset {RANGE}"),
        (f"dataset/byid/{{dataset}}/traces?limit={BIG}", f"limit {RANGE}"),
        (f"dataset/byuser/acme/runs/traces?offset={BIG}", f"offset {RANGE}"),
        (f"trace/{{trace}}?max_length={'9' * 5000}", f"max_length {RANGE}"),
        ("trace/{trace}?max_length=-5", f"max_length {RANGE}"),
        (f"trace/{{trace}}?max_length={2**31}", f"max_length {RANGE}"),
        ("dataset/list?kind=any&q=a%00b", "the query parameter 'q' holds a NUL (U+0000)"),
        (
            "dataset/metadata/runs?owner_username=a%00b",
            "the query parameter 'owner_username' holds a NUL (U+0000)",
        ),
    ],
)
def test_a_query_parameter_out_of_range_or_with_a_nul_is_400(inv, pushed, query, detail):
    trace_id = pushed()
    dataset = Trace.objects.get(uuid=trace_id).dataset
    url = "/api/v1/" + query.format(trace=trace_id, dataset=dataset.uuid)
    response = inv.get(url)
    assert response.status_code == 400, response.content
    assert response.json() == {"detail": detail}


def test_the_highest_limit_and_a_zero_offset_written_with_leading_zeros_are_taken(inv, pushed):
    pushed()
    response = inv.get(f"/api/v1/trace/snippets?limit={2**31 - 1}")
    assert response.status_code == 200 and response.json() == []
    assert inv.get("/api/v1/dataset/byuser/acme/runs/traces?offset=000").status_code == 200
