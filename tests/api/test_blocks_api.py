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


def a_call(api, trace):
    message = post_json(api, f"{BASE}/traces/{trace}/blocks", msg()).json()
    return post_json(
        api,
        f"{BASE}/traces/{trace}/blocks",
        {
            "sub_type": "TOOL_CALL",
            "parent_block_id": message["id"],
            "payload": {"call_id": "c", "name": "f", "arguments": {}},
        },
    ).json()


def result(call, **payload):
    return {
        "sub_type": "TOOL_RESULT",
        "parent_block_id": call["id"],
        "payload": {"call_id": "c", **payload},
    }


def stitched_results(api, trace):
    tree = api.get(f"{BASE}/traces/{trace}/blocks.stitched").json()
    return [r["payload"] for r in tree["messages"][0]["children"][0]["children"]]


def test_results_are_ordered_by_seq_nulls_last_then_creation(api):
    trace = make_trace(api)
    call = a_call(api, trace)
    bodies = [{"delta": "no seq 1"}, {"delta": "b", "seq": 2}, {"delta": "no seq 2"}]
    bodies.append({"delta": "a", "seq": 1})
    for body in bodies:
        response = post_json(api, f"{BASE}/traces/{trace}/blocks", result(call, **body))
        assert response.status_code == 201, response.json()
    assert [r["delta"] for r in stitched_results(api, trace)] == ["a", "b", "no seq 1", "no seq 2"]


def test_several_results_without_seq_under_one_call_are_legal(api):
    trace = make_trace(api)
    call = a_call(api, trace)
    url = f"{BASE}/traces/{trace}/blocks"
    for n in range(3):
        response = post_json(api, url, result(call, output=f"attempt {n}"))
        assert response.status_code == 201, response.json()
    batch = [result(call, output="batch 1"), result(call, output="batch 2")]
    response = post_json(api, f"{url}:batch", {"blocks": batch})
    assert response.status_code == 201, response.json()
    outputs = [r["output"] for r in stitched_results(api, trace)]
    assert outputs == ["attempt 0", "attempt 1", "attempt 2", "batch 1", "batch 2"]


def test_a_batch_refuses_two_results_with_one_seq(api):
    trace = make_trace(api)
    call = a_call(api, trace)
    batch = [
        result(call, delta="x", seq=0),
        result(call, delta="y"),
        result(call, delta="z", seq=0),
    ]
    response = post_json(api, f"{BASE}/traces/{trace}/blocks:batch", {"blocks": batch})
    assert response.status_code == 409
    error = error_of(response)
    assert (error["code"], error["details"]["index"]) == ("DUPLICATE_RESULT_SEQ", 2)
    assert error["details"]["seq"] == 0
    assert stitched_results(api, trace) == []


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


def test_a_result_seq_past_64_bits_is_a_422_on_both_ways_in(api):
    trace = make_trace(api)
    message = post_json(api, f"{BASE}/traces/{trace}/blocks", msg()).json()
    call = post_json(api, f"{BASE}/traces/{trace}/blocks", {
        "sub_type": "TOOL_CALL", "parent_block_id": message["id"],
        "payload": {"call_id": "c", "name": "f", "arguments": {}},
    }).json()  # fmt: skip
    result = {
        "sub_type": "TOOL_RESULT",
        "parent_block_id": call["id"],
        "payload": {"call_id": "c", "output": "o", "seq": 2**63},
    }
    one = post_json(api, f"{BASE}/traces/{trace}/blocks", result)
    batch = post_json(api, f"{BASE}/traces/{trace}/blocks:batch", {"blocks": [result]})
    for response in (one, batch):
        assert response.status_code == 422, response.content
        assert error_of(response)["details"]["field"] == "payload.seq"
    kept = {**result, "payload": {**result["payload"], "seq": 2**63 - 1}}
    assert post_json(api, f"{BASE}/traces/{trace}/blocks", kept).status_code == 201
