"""GET and PUT /api/v1/dataset/metadata/{name} through invariant-sdk live (sync and async),
and each refusal of 2.10."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from invariant_sdk.types.exceptions import InvariantError, InvariantNotFoundError

from tests.invariant.conftest import SDK_TIMEOUT_MS
from traces.models import Dataset
from traces.services.api_keys import api_key_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def uploaded(sdk):
    sdk.create_request_and_push_trace(messages=[[{"role": "user", "content": "q"}]], dataset="mt")
    stored = {"created_on": "2025-01-01 00:00:00", "policies": ["p"], "from_file": 1}
    Dataset.objects.filter(name="mt").update(metadata=stored)
    return "mt"


def test_updates_merge_and_replace_all_removes_the_updatable_keys_not_given(sdk, uploaded):
    assert sdk.get_dataset_metadata(uploaded) == {"created_on": "2025-01-01 00:00:00",
                                                  "from_file": 1}  # fmt: skip
    out = sdk.create_request_and_update_dataset_metadata(
        dataset_name=uploaded,
        metadata={"benchmark": "b1", "accuracy": 0.5,
                  "invariant.test_results": {"num_tests": 3, "num_passed": None}},
    )  # fmt: skip
    assert out["benchmark"] == "b1" and out["accuracy"] == 0.5
    assert out["invariant.test_results"] == {"num_tests": 3}
    assert "policies" not in out
    out = sdk.create_request_and_update_dataset_metadata(
        dataset_name=uploaded, metadata={"name": "n"}
    )
    assert out["benchmark"] == "b1" and out["name"] == "n"
    out = sdk.create_request_and_update_dataset_metadata(
        dataset_name=uploaded, metadata={"accuracy": 2}, replace_all=True
    )
    assert out == {"created_on": "2025-01-01 00:00:00", "from_file": 1, "accuracy": 2}
    out = sdk.create_request_and_update_dataset_metadata(
        dataset_name=uploaded, metadata={}, replace_all=True
    )
    assert out == {"created_on": "2025-01-01 00:00:00", "from_file": 1}
    assert Dataset.objects.get(name="mt").metadata["policies"] == ["p"]  # kept


def test_the_async_client_reads_and_updates_metadata_and_pushes(live_server, owner_key, uploaded):
    from invariant_sdk.async_client import AsyncClient

    async def run():
        client = AsyncClient(api_url=live_server.url, api_key=owner_key, timeout_ms=SDK_TIMEOUT_MS)
        pushed = await client.create_request_and_push_trace(
            messages=[[{"role": "user", "content": "a"}]], dataset=uploaded
        )
        await client.create_request_and_append_messages(
            messages=[{"role": "assistant", "content": "b"}], trace_id=pushed.id[0]
        )
        updated = await client.create_request_and_update_dataset_metadata(
            dataset_name=uploaded, metadata={"benchmark": "async"}
        )
        return pushed, updated, await client.get_dataset_metadata(uploaded)

    # In a thread of its own: a browser test before it in this process leaves
    # Playwright's event loop running in the main thread, where asyncio.run refuses.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pushed, updated, read = pool.submit(asyncio.run, run()).result()
    assert pushed.dataset == uploaded and updated["benchmark"] == "async" == read["benchmark"]


def test_a_missing_dataset_is_not_found(sdk):
    with pytest.raises(InvariantNotFoundError):
        sdk.get_dataset_metadata("nope")
    with pytest.raises(InvariantNotFoundError):
        sdk.create_request_and_update_dataset_metadata(dataset_name="nope", metadata={"name": "x"})


def test_another_owners_dataset_is_403_unless_public(sdk, uploaded, rival_org, live_server):
    from invariant_sdk.client import Client

    rival = Client(
        api_url=live_server.url,
        api_key=api_key_create(organization=rival_org).secret,
        timeout_ms=SDK_TIMEOUT_MS,
    )
    with pytest.raises(InvariantError, match="HTTP error"):
        rival.get_dataset_metadata(uploaded, owner_username="acme")
    Dataset.objects.filter(name=uploaded).update(is_public=True)
    assert rival.get_dataset_metadata(uploaded, owner_username="acme")["from_file"] == 1
    with pytest.raises(InvariantNotFoundError):  # a public dataset is still not theirs to change
        rival.create_request_and_update_dataset_metadata(dataset_name=uploaded,
                                                         metadata={"name": "x"})  # fmt: skip


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"metadata": {"benchmark": ""}}, "benchmark must be a non-empty string"),
        ({"metadata": {"accuracy": -1}}, "accuracy must be a non-negative"),
        ({"metadata": {"accuracy": True}}, "accuracy must be a non-negative"),
        ({"metadata": {"invariant.test_results": {"other": 1}}}, "needs num_tests or num_passed"),
        ({"metadata": {"invariant.test_results": {"num_tests": "3"}}}, "integers or null"),
        ({"metadata": {"analysis_report": 3}}, "analysis_report must be a string"),
        ({"metadata": {"policies": []}}, "policies cannot be updated"),
        ({"metadata": {"color": "red"}}, "the keys that can be updated are"),
        ({"metadata": {"name": None}}, "must not be null"),
        ({"metadata": [1]}, "metadata must be an object"),
        ({"metadata": {}, "replace_all": "yes"}, "replace_all must be a boolean"),
        ({"metadata": {"color": "red", "accuracy": -1}}, "accuracy"),  # types before keys
    ],
)
def test_each_rule_refuses_with_400_and_changes_nothing(inv, uploaded, body, words):
    response = inv.put(f"/api/v1/dataset/metadata/{uploaded}", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"]
    assert "color" not in Dataset.objects.get(name=uploaded).metadata
