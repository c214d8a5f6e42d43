from tests.api.conftest import BASE, error_of, post_json


def make_trace(api):
    return post_json(api, f"{BASE}/traces", {"name": "t"}).json()["id"]


def msg(content="q", role="user"):
    return {"sub_type": "MESSAGE", "payload": {"role": role, "content": content}}


def test_a_batch_that_fails_names_the_index_and_writes_nothing(api):
    trace = make_trace(api)
    response = post_json(api, f"{BASE}/traces/{trace}/blocks:batch", {"blocks": [
        {**msg(), "ref": "m"},
        {"sub_type": "THINK", "parent_block_id": "m", "payload": {"text": ""}},
    ]})  # fmt: skip
    assert response.status_code == 422
    error = error_of(response)
    assert error["details"]["index"] == 1 and error["message"].startswith("block 1: ")
    assert api.get(f"{BASE}/traces/{trace}/blocks").json()["blocks"] == []


def test_a_batch_refuses_more_than_1000_blocks(api):
    trace = make_trace(api)
    response = post_json(api, f"{BASE}/traces/{trace}/blocks:batch", {"blocks": [msg()] * 1001})
    assert response.status_code == 422
    assert error_of(response)["details"]["rule"] == "batch_size"


def test_a_batch_refuses_a_call_id_the_trace_already_has(api):
    trace = make_trace(api)
    message = post_json(api, f"{BASE}/traces/{trace}/blocks", msg()).json()
    call = {
        "sub_type": "TOOL_CALL",
        "parent_block_id": message["id"],
        "payload": {"call_id": "c", "name": "f", "arguments": {}},
    }
    post_json(api, f"{BASE}/traces/{trace}/blocks", call)
    response = post_json(api, f"{BASE}/traces/{trace}/blocks:batch", {"blocks": [call]})
    assert response.status_code == 409
    assert error_of(response)["details"] == {"index": 0, "field": "payload.call_id", "call_id": "c"}


def test_flat_list_is_in_stitched_order_with_a_cursor(api):
    trace = make_trace(api)
    first = post_json(api, f"{BASE}/traces/{trace}/blocks", msg("one")).json()
    post_json(api, f"{BASE}/traces/{trace}/blocks", msg("two"))
    post_json(
        api,
        f"{BASE}/traces/{trace}/blocks",
        {"sub_type": "THINK", "parent_block_id": first["id"], "payload": {"text": "late thought"}},
    )
    page = api.get(f"{BASE}/traces/{trace}/blocks?limit=2").json()
    assert [b["payload"].get("content", b["payload"].get("text")) for b in page["blocks"]] == [
        "one",
        "late thought",
    ]
    rest = api.get(f"{BASE}/traces/{trace}/blocks?cursor={page['next_cursor']}").json()
    assert [b["payload"]["content"] for b in rest["blocks"]] == ["two"] and rest[
        "next_cursor"
    ] is None


def test_results_are_ordered_by_seq_then_creation(api):
    trace = make_trace(api)
    message = post_json(api, f"{BASE}/traces/{trace}/blocks", msg()).json()
    call = post_json(
        api,
        f"{BASE}/traces/{trace}/blocks",
        {
            "sub_type": "TOOL_CALL",
            "parent_block_id": message["id"],
            "payload": {"call_id": "c", "name": "f", "arguments": {}},
        },
    ).json()
    for body in ({"delta": "no seq"}, {"delta": "b", "seq": 2}, {"delta": "a", "seq": 1}):
        post_json(
            api,
            f"{BASE}/traces/{trace}/blocks",
            {
                "sub_type": "TOOL_RESULT",
                "parent_block_id": call["id"],
                "payload": {"call_id": "c", **body},
            },
        )
    tree = api.get(f"{BASE}/traces/{trace}/blocks.stitched").json()
    results = tree["messages"][0]["children"][0]["children"]
    assert [r["payload"]["delta"] for r in results] == ["a", "b", "no seq"]


def test_patching_extra_merges_and_bumps_updated_at(api):
    trace = make_trace(api)
    block = post_json(api, f"{BASE}/traces/{trace}/blocks", {**msg(), "extra": {"a": 1}}).json()
    patched = api.patch(
        f"{BASE}/blocks/{block['id']}", {"extra": {"reward": 1}}, format="json"
    ).json()
    assert patched["extra"] == {"a": 1, "reward": 1}
    assert patched["updated_at"] > block["updated_at"]
    assert patched["payload"] == block["payload"]


def test_a_parent_from_another_trace_is_refused(api):
    one, two = make_trace(api), make_trace(api)
    message = post_json(api, f"{BASE}/traces/{one}/blocks", msg()).json()
    response = post_json(
        api,
        f"{BASE}/traces/{two}/blocks",
        {"sub_type": "THINK", "parent_block_id": message["id"], "payload": {"text": "x"}},
    )
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "parent_block_id", "rule": "parent_exists"}


def test_an_unknown_block_field_is_refused(api):
    trace = make_trace(api)
    response = post_json(api, f"{BASE}/traces/{trace}/blocks", {**msg(), "colour": "red"})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "colour", "rule": "unknown_field"}


def test_keys_order_and_nul_survive_the_api(api):
    trace = make_trace(api)
    call_payload = {"call_id": "c", "name": "f", "arguments": {"z": "\u0000", "a": "😀\r\n"}}
    message = post_json(api, f"{BASE}/traces/{trace}/blocks", msg()).json()
    post_json(
        api,
        f"{BASE}/traces/{trace}/blocks",
        {"sub_type": "TOOL_CALL", "parent_block_id": message["id"], "payload": call_payload},
    )
    tree = api.get(f"{BASE}/traces/{trace}/blocks.stitched")
    assert b'"arguments":{"z":"\\u0000","a":"' in tree.content
    assert tree.json()["messages"][0]["children"][0]["payload"] == call_payload


def test_extra_that_is_not_an_object_is_refused(api):
    trace = make_trace(api)
    response = post_json(api, f"{BASE}/traces/{trace}/blocks", {**msg(), "extra": [1]})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "extra", "rule": "json_object"}
    assert api.get(f"{BASE}/traces/{trace}/blocks").json()["blocks"] == []
