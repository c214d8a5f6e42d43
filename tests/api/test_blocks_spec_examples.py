"""spec/004's example requests, verbatim, through the API."""

from tests.api.conftest import BASE, post_json
from tests.kinds_of import no_orphans


def test_the_spec004_example_trace_posts_block_by_block(api):
    trace = post_json(api, f"{BASE}/traces", {"dataset": "weather", "name": "spec"}).json()
    url = f"{BASE}/traces/{trace['id']}/blocks"
    message = post_json(api, url, {
        "block_type": "MESSAGE",
        "sub_type": "MESSAGE",
        "payload": {"role": "user", "content": "what's the weather?"},
    })  # fmt: skip
    assert message.status_code == 201, message.json()
    call = post_json(api, url, {
        "block_type": "ACT",
        "sub_type": "TOOL_CALL",
        "parent_block_id": message.json()["id"],
        "payload": {"call_id": "call_1", "name": "get_weather", "arguments": {"city": "bogotΓ‘"}},
    })  # fmt: skip
    assert call.status_code == 201, call.json()
    result = post_json(api, url, {
        "block_type": "OBSERVE",
        "sub_type": "TOOL_RESULT",
        "parent_block_id": call.json()["id"],
        "payload": {"call_id": "call_1", "output": {"forecast": "22Β°C cloudy"}},
    })  # fmt: skip
    assert result.status_code == 201, result.json()
    think = post_json(api, url, {
        "block_type": "ACT",
        "sub_type": "THINK",
        "parent_block_id": message.json()["id"],
        "payload": {"text": "decide to show forecast in celsius"},
    })  # fmt: skip
    assert think.status_code == 201, think.json()

    tree = api.get(f"{BASE}/traces/{trace['id']}/blocks.stitched").json()
    assert tree["orphans"] == no_orphans()
    [root] = tree["messages"]
    assert root["id"] == message.json()["id"]
    assert [c["sub_type"] for c in root["children"]] == ["TOOL_CALL", "THINK"]
    assert root["children"][0]["children"][0]["payload"] == {
        "call_id": "call_1",
        "output": {"forecast": "22Β°C cloudy"},
    }


def test_the_sdk_helpers_bodies_work_as_a_batch(api):
    trace = post_json(api, f"{BASE}/traces", {"name": "batch"}).json()
    response = post_json(api, f"{BASE}/traces/{trace['id']}/blocks:batch", {"blocks": [
        {"ref": "m", "sub_type": "MESSAGE", "payload": {"role": "user", "content": "some text"},
         "raw": {"providerPayload": 1}},
        {"ref": "c", "sub_type": "TOOL_CALL", "parent_block_id": "m",
         "payload": {"call_id": "x", "name": "search", "arguments": "{\"q\": 1}"}},
        {"sub_type": "TOOL_RESULT", "parent_block_id": "c",
         "payload": {"call_id": "x", "output": "found"}, "extra": {"reward": 1}},
        {"sub_type": "THINK", "parent_block_id": "m", "payload": {"text": "reasoning ..."}},
    ]})  # fmt: skip
    assert response.status_code == 201, response.json()
    blocks = response.json()["blocks"]
    assert blocks[1]["parent_block_id"] == blocks[0]["id"]
    assert blocks[1]["payload"]["arguments"] == {"q": 1}
    assert blocks[2]["extra"] == {"reward": 1}
