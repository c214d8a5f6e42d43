from tests.api.conftest import BASE, error_of, post_json


def test_it_creates_a_trace_in_a_dataset_named_by_name_then_by_id(api):
    first = post_json(api, f"{BASE}/traces", {"dataset": "runs", "metadata": {"task_id": "a"}})
    assert first.status_code == 201
    dataset_id = first.json()["dataset"]
    second = post_json(api, f"{BASE}/traces", {"dataset": dataset_id, "name": "two"}).json()
    assert (first.json()["index"], second["index"], second["dataset"]) == (0, 1, dataset_id)


def test_it_patches_extra_and_metadata_by_merge_patch_and_follows_the_reward(api):
    trace = post_json(api, f"{BASE}/traces", {"metadata": {"reward": 0, "keep": 1}}).json()
    assert trace["reward"] == 0.0
    url = f"{BASE}/traces/{trace['id']}"
    patched = api.patch(url, {"extra": {"reward": 1, "note": "good"}}, format="json").json()
    assert (patched["extra"], patched["reward"]) == ({"reward": 1, "note": "good"}, 1.0)
    patched = api.patch(url, {"extra": {"reward": None}, "metadata": {"keep": None}}, format="json")
    assert patched.json()["extra"] == {"note": "good"}
    assert patched.json()["metadata"] == {"reward": 0} and patched.json()["reward"] == 0.0


def test_it_refuses_to_patch_other_trace_fields(api):
    trace = post_json(api, f"{BASE}/traces", {}).json()
    response = api.patch(f"{BASE}/traces/{trace['id']}", {"index": 9}, format="json")
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "index", "rule": "not_patchable"}


def test_it_lists_with_filters_and_cursor_pagination(api):
    for n in range(5):
        post_json(
            api,
            f"{BASE}/traces",
            {"dataset": "runs", "metadata": {"task_id": f"t{n % 2}", "reward": n % 2}},
        )
    post_json(api, f"{BASE}/traces", {"dataset": "other"})
    page = api.get(f"{BASE}/traces?dataset=runs&limit=2").json()
    assert len(page["traces"]) == 2 and page["next_cursor"]
    rest = api.get(f"{BASE}/traces?dataset=runs&limit=10&cursor={page['next_cursor']}").json()
    assert len(rest["traces"]) == 3 and rest["next_cursor"] is None
    by_task = api.get(f"{BASE}/traces?metadata.task_id=t1").json()["traces"]
    assert [t["metadata"]["task_id"] for t in by_task] == ["t1", "t1"]
    assert len(api.get(f"{BASE}/traces?reward=1").json()["traces"]) == 2
    assert len(api.get(f"{BASE}/traces?reward_max=0.5").json()["traces"]) == 3


def test_it_refuses_a_non_numeric_reward_filter(api):
    response = api.get(f"{BASE}/traces?reward=high")
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "reward", "rule": "number"}


def test_it_deletes_a_trace_and_its_blocks(api):
    trace = post_json(api, f"{BASE}/traces", {}).json()
    post_json(
        api,
        f"{BASE}/traces/{trace['id']}/blocks",
        {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "x"}},
    )
    assert api.delete(f"{BASE}/traces/{trace['id']}").status_code == 204
    assert api.get(f"{BASE}/traces/{trace['id']}").status_code == 404


def test_the_metadata_filter_is_exact_so_pages_stay_full(api):
    post_json(api, f"{BASE}/traces", {"metadata": {"nested": {"task_id": "t1"}}})
    post_json(api, f"{BASE}/traces", {"metadata": {"task_id": 1}})
    post_json(api, f"{BASE}/traces", {"metadata": {"task_id": "t1"}})
    page = api.get(f"{BASE}/traces?metadata.task_id=t1&limit=1").json()
    assert [t["metadata"] for t in page["traces"]] == [{"task_id": "t1"}]
    assert page["next_cursor"] is None
    numbers = api.get(f"{BASE}/traces?metadata.task_id=1").json()["traces"]
    assert [t["metadata"] for t in numbers] == [{"task_id": 1}]


def test_it_refuses_an_unknown_query_parameter_instead_of_listing_everything(api):
    """`dataset_id` is not a filter: answered with every trace of the organization, a
    misnamed filter looked like one that matched."""
    response = api.get(f"{BASE}/traces?dataset_id=ds_x")
    assert response.status_code == 422
    error = error_of(response)
    assert error["details"] == {"field": "dataset_id", "rule": "unknown_parameter"}
    assert "dataset" in error["message"] and "metadata.<key>" in error["message"]
    assert api.get(f"{BASE}/traces?metadata.dataset_id=x&limit=5").status_code == 200
