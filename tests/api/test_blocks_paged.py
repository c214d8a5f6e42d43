"""The block tree and the flat list a page at a time (cursor), so that a trace of any
size streams; without `limit`, blocks.stitched answers spec/004's whole tree."""

from tests.api.conftest import BASE, error_of, post_json
from tests.kinds_of import block_counts
from traces.models import Trace


def built_trace(api) -> str:
    """Three turns written out of order: a result and a think land after later turns."""
    trace = post_json(api, f"{BASE}/traces", {"name": "paged"}).json()["id"]
    url = f"{BASE}/traces/{trace}/blocks"

    def add(body):
        response = post_json(api, url, body)
        assert response.status_code == 201, response.content
        return response.json()["id"]

    def call(parent, call_id):
        payload = {"call_id": call_id, "name": "f", "arguments": {}}
        return add({"sub_type": "TOOL_CALL", "parent_block_id": parent, "payload": payload})

    def result(parent, call_id, output, seq=None):
        payload = {"call_id": call_id, "output": output, **({} if seq is None else {"seq": seq})}
        return add({"sub_type": "TOOL_RESULT", "parent_block_id": parent, "payload": payload})

    m0 = add({"sub_type": "MESSAGE", "payload": {"role": "user", "content": "zero"}})
    m1 = add({"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": None}})
    c1 = call(m1, "a")
    result(c1, "a", "late, no seq")
    c2 = call(m1, "b")
    add({"sub_type": "MESSAGE", "payload": {"role": "user", "content": "two"}})
    result(c1, "a", "seq 1", seq=1)
    result(c2, "b", "b out")
    add({"sub_type": "THINK", "parent_block_id": m0, "payload": {"text": "afterthought"}})
    return trace


def test_stitched_pages_put_together_are_the_whole_tree(api):
    trace = built_trace(api)
    whole = api.get(f"{BASE}/traces/{trace}/blocks.stitched").json()
    assert set(whole) == {"trace_id", "messages", "orphans"}  # spec/004's shape, unchanged
    messages, cursor, pages = [], "", 0
    while cursor is not None:
        page = api.get(f"{BASE}/traces/{trace}/blocks.stitched?limit=1&cursor={cursor}").json()
        assert set(page) == {"trace_id", "messages", "orphans", "next_cursor"}
        messages += page["messages"]
        cursor, pages = page["next_cursor"], pages + 1
    assert pages == 3 and messages == whole["messages"]
    assert page["orphans"] == whole["orphans"]
    outputs = [r["payload"]["output"] for r in messages[1]["children"][0]["children"]]
    assert outputs == ["seq 1", "late, no seq"]  # by seq, nulls last
    assert messages[0]["children"][0]["payload"] == {"text": "afterthought"}


def test_flat_pages_walk_every_block_once_in_stitched_order(api):
    trace = built_trace(api)
    whole = api.get(f"{BASE}/traces/{trace}/blocks?limit=1000").json()
    assert whole["next_cursor"] is None and len(whole["blocks"]) == 9
    for limit in (1, 2, 4):
        blocks, cursor = [], None
        while True:
            query = f"limit={limit}" + (f"&cursor={cursor}" if cursor else "")
            page = api.get(f"{BASE}/traces/{trace}/blocks?{query}").json()
            assert len(page["blocks"]) <= limit
            blocks += page["blocks"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert [b["id"] for b in blocks] == [b["id"] for b in whole["blocks"]]


def test_the_trace_row_keeps_its_counts_as_blocks_are_appended(api):
    trace = Trace.objects.get(pk=built_trace(api))
    assert trace.block_count == 9
    assert trace.block_counts == block_counts(MESSAGE=3, TOOL_CALL=2, THINK=1, TOOL_RESULT=3)


def test_a_cursor_the_api_did_not_give_is_a_422(api):
    trace = built_trace(api)
    for cursor in ("abc", "1.2", "-5.0.0", "1.-1.0"):
        response = api.get(f"{BASE}/traces/{trace}/blocks?cursor={cursor}")
        assert response.status_code == 422
        assert error_of(response)["details"] == {"field": "cursor", "rule": "cursor"}


def test_a_stitched_page_out_of_range_is_a_422(api):
    trace = built_trace(api)
    for query, field, rule in (
        ("limit=0", "limit", "range"),
        ("limit=1001", "limit", "range"),
        ("limit=x", "limit", "integer"),
        ("cursor=-1", "cursor", "range"),
        ("limit=1&cursor=9223372036854775807", "cursor", "range"),
        ("cursor=9223372036854775000", "cursor", "range"),
        (f"cursor={'9' * 4300}", "cursor", "range"),
        ("limit=0&cursor=9223372036854775807", "cursor", "range"),
    ):
        response = api.get(f"{BASE}/traces/{trace}/blocks.stitched?{query}")
        assert response.status_code == 422
        assert error_of(response)["details"] == {"field": field, "rule": rule}


def test_a_stitched_page_past_the_last_message_is_empty(api):
    trace = built_trace(api)
    for cursor in (3, 2**53):
        response = api.get(f"{BASE}/traces/{trace}/blocks.stitched?limit=5&cursor={cursor}")
        assert response.status_code == 200, response.content
        assert response.json()["messages"] == [] and response.json()["next_cursor"] is None


def test_stitched_answers_carry_non_ascii_text_as_written(api):
    """The tree's JSON is sent as the database holds it (bytes on SQLite, not decoded and
    encoded again): text beyond ASCII arrives as it was written, whole and a page at a time."""
    trace = post_json(api, f"{BASE}/traces", {"name": "unicode"}).json()["id"]
    content = 'déjà 東京 ✓ \U0001f600 \u2028 "quoted" \\ back\\slash \t tab'
    written = post_json(
        api,
        f"{BASE}/traces/{trace}/blocks",
        {"sub_type": "MESSAGE", "payload": {"role": "user", "content": content},
         "extra": {"ключ": "値"}},
    )  # fmt: skip
    assert written.status_code == 201, written.content
    for query in ("", "?limit=1"):
        answer = api.get(f"{BASE}/traces/{trace}/blocks.stitched{query}")
        [message] = answer.json()["messages"]
        assert message["payload"]["content"] == content
        assert message["extra"] == {"ключ": "値"}
        assert message["created_at"] == written.json()["created_at"]


def test_http_trace_is_a_405_not_the_trace_helper(api):
    trace = built_trace(api)
    for path in (f"/traces/{trace}/blocks.stitched", f"/traces/{trace}", "/datasets"):
        response = api.generic("TRACE", f"{BASE}{path}")
        assert response.status_code == 405, (path, response.content)
        assert error_of(response)["http_status"] == 405
        assert "TRACE" not in response.headers.get("Allow", "")
