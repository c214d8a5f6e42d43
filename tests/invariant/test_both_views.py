"""A pushed trace is one trace of the store: the trace page, /v1 and search read its blocks,
while /api/v1 answers its events as pushed; an append shows in both."""

import pytest

from traces.models import Trace

pytestmark = pytest.mark.django_db

EVENTS = [
    {"role": "user", "content": "Find the zebrafish paper"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "s1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "s1", "content": "found it"},
]  # fmt: skip


def test_the_page_v1_and_search_see_a_pushed_and_appended_trace(inv, owner_client, pushed):
    trace_id = pushed(events=EVENTS)
    trace = Trace.objects.get(uuid=trace_id)
    body = {"messages": [{"role": "assistant", "content": "Here is the okapi summary"}]}
    assert inv.post(f"/api/v1/trace/{trace_id}/messages", body, format="json").status_code == 200
    page = owner_client.get(f"/t/{trace.pk}/")
    assert page.status_code == 200
    assert b"zebrafish" in page.content and b"okapi" in page.content
    blocks = inv.get(f"/v1/organizations/acme/traces/{trace.pk}/blocks").json()
    payloads = [b["payload"].get("content") for b in blocks["blocks"]]
    assert payloads[0] == "Find the zebrafish paper" and payloads[-1].startswith(
        "Here is the okapi"
    )
    listing = owner_client.get(f"/d/{trace.dataset_id}/", {"q": "okapi"})
    assert listing.status_code == 200 and trace.name.encode() in listing.content
    missing = owner_client.get(f"/d/{trace.dataset_id}/", {"q": "aardvark"})
    assert trace.name.encode() not in missing.content
    assert len(inv.get(f"/api/v1/trace/{trace_id}").json()["messages"]) == 4


def test_a_trace_uploaded_through_the_pages_answers_its_events_rebuilt(inv, org):
    import io
    import json

    from traces.services.imports import trace_import

    data = json.dumps({"messages": EVENTS}).encode() + b"\n"
    trace_import(organization=org, dataset_name="paged", files=[("a.jsonl", io.BytesIO(data))])
    trace = Trace.objects.get(dataset__name="paged")
    got = inv.get(f"/api/v1/trace/{trace.uuid}").json()
    assert [e["role"] for e in got["messages"]] == ["user", "assistant", "tool"]
    assert got["messages"][0] == EVENTS[0]
