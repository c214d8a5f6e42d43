"""One rule for rewards at every way in: a number must be finite and within ±1e12
(traces.models.REWARD_LIMIT). The API, imports, the trace page's form and the admin refuse
anything else with a clear error and write nothing; the database refuses it too. The same
rule holds for the accuracy a dataset's metadata reports."""

import io
import json

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from rest_framework.test import APIClient

from tests.api.conftest import BASE, error_of, post_json
from tests.explorer.conftest import blocks_trace, import_traces
from traces.errors import ImportFailed, ValidationFailed
from traces.models import REWARD_LIMIT, Block, Dataset, Trace
from traces.services.api_keys import api_key_create
from traces.services.imports import trace_import
from traces.validation import check_reward, reward_of

OUT_OF_RANGE = [1e200, -1.7976931348623157e308, 1e12 * 1.0000001, -(10**13), 2**63 - 1]
RANGE_ERROR = "must be a finite number from -1e12 to 1e12"


# --- The rule ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [*OUT_OF_RANGE, float("nan"), float("inf"), -float("inf")])
def test_the_rule_refuses_numbers_out_of_range_and_not_finite(value):
    with pytest.raises(ValidationFailed) as caught:
        check_reward(value, field_name="extra.reward")
    assert caught.value.message.startswith(f"extra.reward {RANGE_ERROR}, not ")
    assert caught.value.details == {
        "field": "extra.reward", "rule": "reward_range", "limit": REWARD_LIMIT,
    }  # fmt: skip
    assert reward_of(value) is None  # stored before the rule: counts as no reward


@pytest.mark.parametrize("value", [0, 1, -1, 0.5, 1e12, -1e12, True, False, None, "1e400", {}])
def test_the_rule_keeps_numbers_in_range_and_values_that_are_not_numbers(value):
    check_reward(value, field_name="reward")


def test_the_database_refuses_a_reward_out_of_range(org):
    trace = Trace.objects.create(organization=org, reward=1.0)
    for value in (1e200, -1e13, float("inf")):
        with pytest.raises(IntegrityError), transaction.atomic():
            Trace.objects.filter(pk=trace.pk).update(reward=value)
    Trace.objects.filter(pk=trace.pk).update(reward=REWARD_LIMIT)
    trace.refresh_from_db()
    assert trace.reward == REWARD_LIMIT


# --- The API -----------------------------------------------------------------------------


@pytest.fixture
def api(org):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(organization=org).secret}")
    return client


def assert_range_error(response, field):
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == "VALIDATION"
    assert error["message"].startswith(f"{field} {RANGE_ERROR}")
    assert error["details"] == {"field": field, "rule": "reward_range", "limit": REWARD_LIMIT}


def test_api_trace_create_refuses_a_metadata_reward_out_of_range(api):
    response = post_json(api, f"{BASE}/traces", {"dataset": "runs", "metadata": {"reward": 1e200}})
    assert_range_error(response, "metadata.reward")
    assert Trace.objects.count() == 0


@pytest.mark.parametrize("field", ["extra", "metadata"])
def test_api_trace_patch_refuses_a_reward_out_of_range(api, field):
    trace = post_json(api, f"{BASE}/traces", {"metadata": {"reward": 1}}).json()
    url = f"{BASE}/traces/{trace['id']}"
    for value in (1e200, -(10**13)):
        response = api.patch(url, {field: {"reward": value, "note": "x"}}, format="json")
        assert_range_error(response, f"{field}.reward")
    stored = Trace.objects.get(pk=trace["id"])
    assert (stored.extra, stored.metadata, stored.reward) == ({}, {"reward": 1}, 1.0)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_api_refuses_a_reward_json_cannot_hold_as_malformed_json(api, literal):
    trace = post_json(api, f"{BASE}/traces", {}).json()
    body = b'{"extra": {"reward": ' + literal + b"}}"
    url = f"{BASE}/traces/{trace['id']}"
    response = api.generic("PATCH", url, body, content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "MALFORMED_JSON"
    assert Trace.objects.get(pk=trace["id"]).extra == {}


def test_api_block_create_batch_and_patch_refuse_an_extra_reward_out_of_range(api):
    trace = post_json(api, f"{BASE}/traces", {}).json()
    message = {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "hi"}}
    bad = {**message, "extra": {"reward": 1e200}}
    assert_range_error(post_json(api, f"{BASE}/traces/{trace['id']}/blocks", bad), "extra.reward")
    batch = post_json(api, f"{BASE}/traces/{trace['id']}/blocks:batch", {"blocks": [message, bad]})
    assert batch.status_code == 422
    error = error_of(batch)
    assert error["message"].startswith(f"block 1: extra.reward {RANGE_ERROR}")
    assert error["details"] == {
        "index": 1, "field": "extra.reward", "rule": "reward_range", "limit": REWARD_LIMIT,
    }  # fmt: skip
    assert Block.objects.count() == 0
    block = post_json(api, f"{BASE}/traces/{trace['id']}/blocks", message).json()
    patch = {"extra": {"reward": -1e13}}
    response = api.patch(f"{BASE}/blocks/{block['id']}", patch, format="json")
    assert_range_error(response, "extra.reward")
    assert Block.objects.get(pk=block["id"]).extra == {}


@pytest.mark.parametrize("query", ["reward=nan", "reward_min=inf", "reward_max=-1e400"])
def test_api_trace_list_refuses_a_reward_filter_that_is_not_finite(api, query):
    response = api.get(f"{BASE}/traces?{query}")
    assert response.status_code == 422
    field = query.split("=")[0]
    error = error_of(response)
    assert error["message"] == f"{field} must be a finite number"
    assert error["details"] == {"field": field, "rule": "number"}


def test_api_dataset_create_and_patch_refuse_a_reported_accuracy_out_of_range(api):
    response = post_json(api, f"{BASE}/datasets", {"name": "runs", "metadata": {"accuracy": 1e200}})
    assert_range_error(response, "metadata.accuracy")
    assert Dataset.objects.count() == 0
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    url = f"{BASE}/datasets/{dataset['id']}"
    response = api.patch(url, {"metadata": {"accuracy": -1e13}}, format="json")
    assert_range_error(response, "metadata.accuracy")
    assert Dataset.objects.get(pk=dataset["id"]).metadata == {}


# --- Imports -----------------------------------------------------------------------------


def jsonl(*lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_an_import_names_the_line_of_a_metadata_reward_out_of_range_and_writes_nothing(org):
    good = {"messages": [{"role": "user", "content": "hi"}], "metadata": {"reward": 1}}
    bad = {**good, "metadata": {"reward": 1e200}}
    with pytest.raises(ImportFailed) as caught:
        trace_import(
            organization=org, dataset_name="runs",
            files=[("runs.jsonl", io.BytesIO(jsonl(good, bad, good)))],
        )  # fmt: skip
    [found] = caught.value.problems
    assert (found["file"], found["line"], found["field"]) == ("runs.jsonl", 2, "metadata.reward")
    assert found["rule"] == "reward_range" and RANGE_ERROR in found["message"]
    assert (Dataset.objects.count(), Trace.objects.count(), Block.objects.count()) == (0, 0, 0)


def test_an_import_refuses_a_dataset_accuracy_out_of_range(org):
    line = {"messages": [{"role": "user", "content": "hi"}]}
    data = jsonl({"metadata": {"accuracy": 1e200}}, line)
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="runs", files=[("r.jsonl", io.BytesIO(data))])
    [found] = caught.value.problems
    assert (found["file"], found["field"], found["rule"]) == (
        "r.jsonl", "metadata.accuracy", "reward_range",
    )  # fmt: skip
    assert Dataset.objects.count() == 0


def test_an_import_of_blocks_names_the_block_with_an_extra_reward_out_of_range(org):
    trace = blocks_trace()
    trace["blocks"][3]["extra"] = {"reward": -1e13}
    with pytest.raises(ImportFailed) as caught:
        import_traces(org, "blocks", [trace])
    [found] = caught.value.problems
    assert (found["line"], found["block"], found["field"]) == (1, 3, "extra.reward")
    assert found["rule"] == "reward_range"
    assert Trace.objects.count() == 0


def test_the_upload_api_answers_422_with_the_problem(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    line = {"messages": [{"role": "user", "content": "hi"}], "metadata": {"reward": 1e200}}
    upload = io.BytesIO(jsonl(line))
    upload.name = "runs.jsonl"
    url = f"{BASE}/datasets/{dataset['id']}/upload"
    response = api.post(url, {"files": [upload]}, format="multipart")
    assert response.status_code == 422
    [found] = error_of(response)["details"]["problems"]
    assert (found["line"], found["field"], found["rule"]) == (1, "metadata.reward", "reward_range")
    assert Trace.objects.count() == 0


# --- The trace page's form -----------------------------------------------------------------

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def page_trace(org) -> Trace:
    return import_traces(org, "reward-form", [blocks_trace()])[0]


@pytest.mark.parametrize("typed", ["1e200", "-1e13", "1000000000001", "1e400", "nan", "-inf"])
def test_the_form_refuses_a_reward_out_of_range(member_client, page_trace, typed):
    block = page_trace.blocks.get(sub_type="THINK")
    for url in (f"/t/{page_trace.pk}/reward", f"/t/{page_trace.pk}/b/{block.pk}/reward"):
        response = member_client.post(url, {"action": "set", "value": typed}, **HTMX)
        assert response.status_code == 422
        html = response.content.decode()
        assert 'class="reward-error" role="alert"' in html
        assert f"The reward {RANGE_ERROR}" in html
        no_js = member_client.post(url, {"action": "set", "value": typed})
        assert no_js.status_code == 422 and RANGE_ERROR in no_js.content.decode()
    page_trace.refresh_from_db()
    block.refresh_from_db()
    assert (page_trace.extra, page_trace.reward, block.extra) == ({}, 1.0, {})


def test_the_form_keeps_the_largest_reward_in_range(member_client, page_trace):
    response = member_client.post(f"/t/{page_trace.pk}/reward", {"action": "set", "value": "-1e12"})
    assert response.status_code == 302
    page_trace.refresh_from_db()
    assert (page_trace.extra, page_trace.reward) == ({"reward": -(10**12)}, -1e12)


# --- The admin ---------------------------------------------------------------------------


def test_the_admin_refuses_a_reward_or_an_accuracy_out_of_range(admin_client, page_trace):
    block = page_trace.blocks.get(sub_type="THINK")
    dataset = page_trace.dataset
    pages = [
        (reverse("admin:traces_trace_change", args=[page_trace.pk]), {"name": "renamed"}),
        (reverse("admin:traces_block_change", args=[block.pk]), {}),
    ]
    for url, fields in pages:
        data = {**fields, "extra": '{"reward": 1e200}', "_save": "Save"}
        response = admin_client.post(url, data)
        assert response.status_code == 200  # the form again, with the error
        assert f"extra.reward {RANGE_ERROR}, not 1e+200" in response.content.decode()
    url = reverse("admin:traces_dataset_change", args=[dataset.pk])
    metadata = '{"accuracy": 1e300}'
    response = admin_client.post(url, {"name": "renamed", "metadata": metadata, "_save": "Save"})
    assert response.status_code == 200
    assert f"metadata.accuracy {RANGE_ERROR}, not 1e+300" in response.content.decode()
    page_trace.refresh_from_db()
    block.refresh_from_db()
    dataset.refresh_from_db()
    assert (page_trace.name, page_trace.extra, block.extra) == ("checkout flow", {}, {})
    assert (dataset.name, dataset.metadata) == ("reward-form", {})
