"""JSON nested beyond jsontext.MAX_DEPTH is refused, with a clear 4xx or import problem
naming the place, at every way in: API bodies, the services, import lines and files, the
admin's JSON fields. At the limit it is kept (and can be read back).

orjson parses 1024 levels but writes only 254, so before the limit every depth from 255
to 1023 was accepted and then failed (500) when written or answered.
"""

import io
import json
import time

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.api.conftest import BASE, error_of
from traces import jsontext
from traces.errors import ImportFailed, ValidationFailed
from traces.models import Block, Dataset, Membership, Trace
from traces.services.annotations import block_extra_patch, trace_extra_update
from traces.services.blocks import BlockInput, block_create, blocks_create_batch
from traces.services.datasets import dataset_create, dataset_update
from traces.services.imports import trace_import
from traces.services.traces import trace_create, trace_patch

LIMIT = jsontext.MAX_DEPTH
REFUSED = [LIMIT + 1, 255, 1023, 1025, 100_000]
USER = {"role": "user", "content": "hi"}


def deep_text(depth: int) -> str:
    """A JSON object nested `depth` levels ({} is 1), as text: orjson writes 254 at most."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def deep(depth: int) -> dict:
    """The same object as a Python value, built without recursion."""
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def payload_text(depth: int) -> str:
    """A user MESSAGE payload `depth` levels deep."""
    return '{"role": "user", "content": "hi", "deep": ' + deep_text(depth - 1) + "}"


def test_the_limit_is_one_number_below_what_can_be_written_back():
    assert LIMIT == 128 and jsontext.MAX_DOCUMENT_DEPTH == 2 * LIMIT
    assert jsontext.depth(deep(LIMIT)) == LIMIT
    assert jsontext.depth(deep(100_000)) == 100_000
    # An answer wraps a stored value in a few levels: orjson must still write it.
    orjson.dumps({"blocks": [{"payload": {"messages": [deep(LIMIT)]}}]})


@pytest.mark.parametrize("depth", [LIMIT - 1, LIMIT, LIMIT + 1, 255, 1023, 1024, 1025, 100_000])
def test_loads_refuses_what_nests_beyond_its_limit(depth):
    text = deep_text(depth)
    if depth <= LIMIT:
        assert jsontext.depth(jsontext.loads(text, max_depth=LIMIT)) == depth
        return
    with pytest.raises(jsontext.JsonTooDeep) as caught:
        jsontext.loads(text, max_depth=LIMIT)
    assert caught.value.limit == LIMIT
    assert caught.value.depth == (depth if depth <= 1024 else None)
    assert "nested too deeply" in str(caught.value)


def test_depth_counts_containers_of_any_subclass_and_finds_a_big_float_among_leaves():
    from collections import OrderedDict, UserString

    class Items(list):
        pass

    nested = OrderedDict(a=Items([OrderedDict(b=Items([1]))]))
    assert jsontext.depth(nested) == 4
    leaves = {"s": "x", "u": UserString("x"), "b": True, "n": None, "i": 2**70, "f": 1.5}
    assert jsontext._walk(leaves) == (1, False)
    assert jsontext._walk([leaves, [float(2**63)]]) == (2, True)


# --- the API ----------------------------------------------------------------------------


def api_call(api, method: str, url: str, body: str):
    return api.generic(method, url, body.encode(), content_type="application/json")


@pytest.fixture
def api_trace(org):
    dataset = dataset_create(organization=org, name="deep")
    trace = trace_create(organization=org, dataset=dataset)
    block = block_create(trace=trace, block=BlockInput(sub_type="MESSAGE", payload=USER))
    return dataset, trace, block["id"]


# (name, method, url template, body template with {v} for the value, field, wrapping levels)
API_WAYS = [
    ("datasets_create", "POST", "/datasets", '{{"name": "d", "metadata": {v}}}', "metadata", 1),
    ("datasets_update", "PATCH", "/datasets/{ds}", '{{"metadata": {v}}}', "metadata", 1),
    ("traces_create", "POST", "/traces", '{{"metadata": {v}}}', "metadata", 1),
    ("traces_patch_extra", "PATCH", "/traces/{tr}", '{{"extra": {v}}}', "extra", 1),
    ("traces_patch_metadata", "PATCH", "/traces/{tr}", '{{"metadata": {v}}}', "metadata", 1),
    ("blocks_patch", "PATCH", "/blocks/{b}", '{{"extra": {v}}}', "extra", 1),
    ("blocks_create_extra", "POST", "/traces/{tr}/blocks",
     '{{"sub_type": "MESSAGE", "payload": {{"role": "user", "content": "x"}}, "extra": {v}}}',
     "extra", 1),
    ("blocks_create_raw", "POST", "/traces/{tr}/blocks",
     '{{"sub_type": "MESSAGE", "payload": {{"role": "user", "content": "x"}}, "raw": {v}}}',
     "raw", 1),
    ("blocks_create_payload", "POST", "/traces/{tr}/blocks",
     '{{"sub_type": "MESSAGE", "payload": {p}}}', "payload", 1),
    ("blocks_batch_payload", "POST", "/traces/{tr}/blocks:batch",
     '{{"blocks": [{{"sub_type": "MESSAGE", "payload": {p}}}]}}', "payload", 3),
]  # fmt: skip


@pytest.mark.parametrize("way", API_WAYS, ids=[w[0] for w in API_WAYS])
@pytest.mark.parametrize("depth", [LIMIT, *REFUSED])
def test_the_api_keeps_the_limit_and_refuses_deeper_naming_the_place(api, api_trace, way, depth):
    _, method, url, body, field, wrapping = way
    dataset, trace, block_id = api_trace
    url = BASE + url.format(ds=dataset.pk, tr=trace.pk, b=block_id)
    response = api_call(api, method, url, body.format(v=deep_text(depth), p=payload_text(depth)))
    if depth == LIMIT:
        assert response.status_code in (200, 201), response.content[:500]
        return
    error = error_of(response)
    assert (response.status_code, error["code"]) == (422, "VALIDATION"), error
    # A body itself deeper than any body may be is refused whole, before it is walked.
    within = depth + wrapping <= jsontext.MAX_DOCUMENT_DEPTH
    assert error["details"]["field"] == (field if within else "body"), error
    assert error["details"]["rule"] == "max_depth"
    assert "nested too deeply" in error["message"]


def test_a_value_at_the_limit_reads_back_through_the_api(api, api_trace):
    _, trace, _ = api_trace
    api_call(api, "PATCH", f"{BASE}/traces/{trace.pk}", '{"extra": ' + deep_text(LIMIT) + "}")
    answer = api.get(f"{BASE}/traces/{trace.pk}")
    assert answer.status_code == 200
    assert jsontext.depth(answer.json()["extra"]) == LIMIT
    blocks = api.get(f"{BASE}/traces/{trace.pk}/blocks.stitched")
    assert blocks.status_code == 200


# --- the services -----------------------------------------------------------------------


def service_ways(org):
    dataset = dataset_create(organization=org, name="deep-services")
    trace = trace_create(organization=org, dataset=dataset)
    block = Block.objects.get(
        pk=block_create(trace=trace, block=BlockInput(sub_type="MESSAGE", payload=USER))["id"]
    )
    n = iter(range(10_000))
    return [
        ("dataset_create", "metadata",
         lambda v: dataset_create(organization=org, name=f"d{next(n)}", metadata=v)),
        ("dataset_update", "metadata", lambda v: dataset_update(dataset=dataset, metadata=v)),
        ("trace_create", "metadata",
         lambda v: trace_create(organization=org, dataset=dataset, metadata=v)),
        ("trace_patch", "extra", lambda v: trace_patch(trace=trace, extra=v)),
        ("trace_patch", "metadata", lambda v: trace_patch(trace=trace, metadata=v)),
        ("trace_extra_update", "extra", lambda v: trace_extra_update(trace=trace, extra=v)),
        ("block_extra_patch", "extra", lambda v: block_extra_patch(block=block, patch=v)),
        ("block_create", "payload", lambda v: block_create(
            trace=trace, block=BlockInput(sub_type="MESSAGE", payload={**USER, "deep": v}))),
        ("block_create", "raw", lambda v: block_create(
            trace=trace, block=BlockInput(sub_type="MESSAGE", payload=USER, raw=v))),
        ("blocks_create_batch", "extra", lambda v: blocks_create_batch(
            trace=trace, blocks=[BlockInput(sub_type="MESSAGE", payload=USER, extra=v)])),
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("depth", [LIMIT, *REFUSED])
def test_every_service_keeps_the_limit_and_refuses_deeper_naming_the_field(org, depth):
    # The payload wraps the value in one more level.
    values = {"payload": deep(depth - 1), "other": deep(depth)}
    for name, field, call in service_ways(org):
        value = values["payload" if field == "payload" else "other"]
        if depth == LIMIT:
            call(value)
            continue
        with pytest.raises(ValidationFailed) as caught:
            call(value)
        assert caught.value.details["field"] == field, name
        assert caught.value.details["rule"] == "max_depth", name
        assert caught.value.details["depth"] == depth, name


# --- imports ----------------------------------------------------------------------------


def import_problems(org, data: str, name: str = "deep.jsonl"):
    before = (Dataset.objects.count(), Trace.objects.count())
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="deep-import", files=[(name, io.BytesIO(
            data.encode()))])  # fmt: skip
    assert (Dataset.objects.count(), Trace.objects.count()) == before
    [found] = caught.value.problems
    return found


def event_text(depth: int) -> str:
    """A user event `depth` levels deep (kept whole in the block's raw)."""
    return '{"role": "user", "content": "hi", "deep": ' + deep_text(depth - 1) + "}"


# JSON Lines whose second line holds the value (braces doubled for str.format).
GOOD_LINE = '[{{"role": "user", "content": "hi"}}]\n'
# (name, file name, text with {v} for the value, field, location, levels around the value)
IMPORT_WAYS = [
    ("trace metadata", "deep.jsonl",
     GOOD_LINE + '{{"messages": [{{"role": "user", "content": "hi"}}], "metadata": {v}}}\n',
     "metadata", {"line": 2, "trace": 1}, 1),
    ("event", "deep.jsonl", GOOD_LINE + '[{e}]\n', "event",
     {"line": 2, "trace": 1, "event": 0}, 1),
    ("event in a JSON array file", "deep.json", '[{e}]', "event", {"trace": 0, "event": 0}, 1),
    ("block raw", "deep.jsonl", GOOD_LINE +
     '[{{"sub_type": "MESSAGE", "payload": {{"role": "user", "content": "hi"}}, "raw": {v}}}]\n',
     "raw", {"line": 2, "trace": 1, "block": 0}, 2),
    ("block payload", "deep.jsonl", GOOD_LINE + '[{{"sub_type": "MESSAGE", "payload": {e}}}]\n',
     "payload", {"line": 2, "trace": 1, "block": 0}, 2),
]  # fmt: skip


@pytest.mark.parametrize("way", IMPORT_WAYS, ids=[w[0] for w in IMPORT_WAYS])
@pytest.mark.parametrize("depth", [LIMIT, *REFUSED])
def test_imports_keep_the_limit_and_refuse_deeper_naming_the_place(org, way, depth):
    _, file_name, text, field, location, wrapping = way
    data = text.format(v=deep_text(depth), e=event_text(depth))
    if depth == LIMIT:
        result = trace_import(
            organization=org, dataset_name="deep-import",
            files=[(file_name, io.BytesIO(data.encode()))],
        )  # fmt: skip
        assert result.traces == (2 if file_name.endswith(".jsonl") else 1)
        return
    found = import_problems(org, data, file_name)
    assert found["file"] == file_name
    assert "nested too deeply" in found["message"]
    if depth + wrapping <= jsontext.MAX_DOCUMENT_DEPTH:
        assert found["rule"] == "max_depth"
        assert {k: found.get(k) for k in location} == location
        assert found["field"] == field
    elif file_name.endswith(".jsonl"):
        assert (found["line"], found["rule"]) == (2, "max_depth")


@pytest.mark.parametrize("depth", [LIMIT, *REFUSED])
def test_a_dataset_metadata_line_keeps_the_limit(org, depth):
    data = '{"metadata": ' + deep_text(depth) + "}\n" + json.dumps([USER]) + "\n"
    if depth == LIMIT:
        result = trace_import(
            organization=org, dataset_name="deep-meta", files=[("m.jsonl", io.BytesIO(
                data.encode()))],
        )  # fmt: skip
        assert jsontext.depth(Dataset.objects.get(pk=result.dataset.pk).metadata) == LIMIT
        return
    found = import_problems(org, data, "m.jsonl")
    assert "nested too deeply" in found["message"] and found["rule"] == "max_depth"


def test_a_file_nested_100000_deep_is_refused_at_once(org):
    """Detection walked a JSON file with ijson's prefixes, which grow with the depth: a
    1.2 MB file nested 100,000 deep took half a minute before it was refused."""
    started = time.perf_counter()
    found = import_problems(org, "[" + event_text(100_000) + "]", "deep.json")
    assert time.perf_counter() - started < 3
    assert (found["rule"], found["file"]) == ("max_depth", "deep.json")
    assert "more than 256 levels" in found["message"]


def test_tool_arguments_too_deep_to_keep_parsed_stay_the_string_the_model_wrote(org):
    arguments = deep_text(LIMIT)  # as the payload's `arguments`, one level too deep
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        ]},
    ]  # fmt: skip
    result = trace_import(
        organization=org, dataset_name="deep-args",
        files=[("a.json", io.BytesIO(json.dumps(events).encode()))],
    )  # fmt: skip
    call = Block.objects.get(trace__dataset=result.dataset, sub_type="TOOL_CALL")
    assert call.payload["arguments"] == arguments
    assert "nested too deeply" in call.metadata["arguments_unparsed"]


def test_the_upload_page_lists_the_problem(member_client):
    client = member_client
    data = ('{"messages": [{"role": "user", "content": "hi"}], "metadata": '
            + deep_text(LIMIT + 1) + "}\n")  # fmt: skip
    response = client.post(
        reverse("upload"),
        {"name": "deep-page", "files": [SimpleUploadedFile("d.jsonl", data.encode())]},
    )
    assert response.status_code == 422
    assert b"nested too deeply" in response.content and b"max_depth" in response.content
    assert not Dataset.objects.filter(name="deep-page").exists()


def test_the_upload_api_lists_the_problem(api, org):
    dataset = dataset_create(organization=org, name="deep-api-upload")
    data = "[" + event_text(255) + "]"
    response = api.post(
        f"{BASE}/datasets/{dataset.pk}/upload",
        {"files": [SimpleUploadedFile("d.json", data.encode())]},
        format="multipart",
    )
    error = error_of(response)
    assert response.status_code == 422
    [found] = error["details"]["problems"]
    assert (found["field"], found["rule"], found["event"]) == ("event", "max_depth", 0)


# --- the admin --------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [LIMIT, *REFUSED])
def test_the_admins_json_fields_keep_the_limit(admin_client, org, depth):
    dataset = dataset_create(organization=org, name="deep-admin")
    trace = trace_create(organization=org, dataset=dataset)
    block = block_create(trace=trace, block=BlockInput(sub_type="MESSAGE", payload=USER))
    forms = [
        ("traces_dataset", dataset.pk, {"name": "deep-admin", "description": "",
                                        "metadata": deep_text(depth)}),
        ("traces_trace", trace.pk, {"name": "", "extra": deep_text(depth)}),
        ("traces_block", block["id"], {"extra": deep_text(depth)}),
    ]  # fmt: skip
    for model, pk, data in forms:
        response = admin_client.post(reverse(f"admin:{model}_change", args=[pk]), data)
        if depth == LIMIT:
            assert response.status_code == 302, (model, response.content[-2000:])
        else:
            assert response.status_code == 200, model
            assert b"nested too deeply" in response.content, model
    stored = [Dataset.objects.get(pk=dataset.pk).metadata, Trace.objects.get(pk=trace.pk).extra]
    # Refused: still the empty objects they were ({} nests 1 level).
    assert [jsontext.depth(v) for v in stored] == ([LIMIT] * 2 if depth == LIMIT else [1, 1])


# --- pages ------------------------------------------------------------------------------


def test_the_trace_page_shows_json_text_nested_1024_deep_as_text(org, admin_client):
    """A tool output is any string; one that reads as JSON is shown formatted. Parsed to
    1024 levels, it made the page answer 500 (RecursionError) when it was shown."""
    Membership.objects.create(
        user=get_user_model().objects.get(username="admin"), organization=org, role="viewer"
    )
    text = "[" * 1024 + "]" * 1024
    events = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": text},
    ]  # fmt: skip
    result = trace_import(
        organization=org, dataset_name="deep-page",
        files=[("p.json", io.BytesIO(json.dumps(events).encode()))],
    )  # fmt: skip
    trace = Trace.objects.get(dataset=result.dataset)
    response = admin_client.get(reverse("trace", args=[trace.pk]))
    assert response.status_code == 200
    assert b"[" * 200 in response.content  # as text (long outputs are folded)
