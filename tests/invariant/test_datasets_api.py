"""Explorer's datasets (2.6, 2.8, 2.9, 2.11) and keys (2.12)."""

import pytest
from rest_framework.test import APIClient

from traces.models import ApiKey, Dataset, Trace

pytestmark = pytest.mark.django_db


def test_create_adds_created_on_and_refuses_bad_input_and_a_taken_name(inv):
    body = {"name": "new-set", "metadata": {"k": 1}}
    created = inv.post("/api/v1/dataset/create", body, format="json").json()
    assert created["name"] == "new-set" and created["is_public"] is False
    assert created["extra_metadata"]["k"] == 1 and "created_on" in created["extra_metadata"]
    for body, words in [
        ({"name": "new-set"}, "same name already exists"),
        ({}, "Dataset name can only contain"),
        ({"name": "a/b"}, "Dataset name can only contain"),
        ({"name": "ok", "metadata": []}, "metadata must be an object"),
        ({"name": "ok", "is_public": "yes"}, "is_public must be a boolean"),
    ]:
        response = inv.post("/api/v1/dataset/create", body, format="json")
        assert response.status_code == 400 and words in response.json()["detail"], body
    assert Dataset.objects.count() == 1
    assert (
        APIClient().post("/api/v1/dataset/create", {"name": "x"}, format="json").status_code == 401
    )


def test_byid_byuser_and_traces_with_paging(inv, pushed, rival):
    for _ in range(5):
        pushed()
    dataset = Dataset.objects.get()
    byid = inv.get(f"/api/v1/dataset/byid/{dataset.uuid}").json()
    byuser = inv.get("/api/v1/dataset/byuser/acme/runs").json()
    assert byid == byuser and byid["num_traces"] == 5 and byid["user"]["username"] == "acme"
    assert [q["id"] for q in byid["queries"]] == ["all", "annotated", "unannotated"]
    page = inv.get(f"/api/v1/dataset/byid/{dataset.uuid}/traces?limit=2&offset=1").json()
    assert [t["index"] for t in page] == [1, 2] and page[0]["annotations_by_source"] == {}
    some = inv.get("/api/v1/dataset/byuser/acme/runs/traces?indices=0,4").json()
    assert [t["index"] for t in some] == [0, 4]
    assert rival.get(f"/api/v1/dataset/byid/{dataset.uuid}").status_code == 401
    assert rival.get("/api/v1/dataset/byuser/acme/runs/traces").status_code == 401
    assert inv.get("/api/v1/dataset/byid/nope").status_code == 404
    assert inv.get("/api/v1/dataset/byuser/acme/nope").status_code == 404
    Dataset.objects.update(is_public=True, metadata={"policies": ["secret"], "k": 1})
    public = APIClient().get(f"/api/v1/dataset/byid/{dataset.uuid}").json()
    assert public["extra_metadata"] == {"k": 1}  # policies only for the owner


def test_list_kinds(inv, pushed, rival):
    pushed()
    pushed(dataset="other", client=rival)
    Dataset.objects.filter(name="other").update(is_public=True)
    names = lambda kind: [d["name"] for d in inv.get(f"/api/v1/dataset/list?kind={kind}").json()]  # noqa: E731
    assert names("private") == ["runs"]
    assert names("public") == ["other"]
    assert sorted(names("any")) == ["other", "runs"]
    assert names("homepage") == []
    assert [d["name"] for d in inv.get("/api/v1/dataset/list?kind=any&q=RUN").json()] == ["runs"]
    assert inv.get("/api/v1/dataset/list").status_code == 422
    assert isinstance(inv.get("/api/v1/dataset/list?kind=mine").json()["detail"], list)


def test_delete_is_the_owners_and_removes_everything(inv, pushed, org):
    from traces.services.api_keys import api_key_create

    pushed()
    dataset = Dataset.objects.get()
    member = APIClient()
    member.credentials(HTTP_AUTHORIZATION="Bearer " + api_key_create(organization=org).secret)
    assert member.delete(f"/api/v1/dataset/byid/{dataset.uuid}").status_code == 401
    response = inv.delete("/api/v1/dataset/byuser/acme/runs")
    assert response.status_code == 200 and response.json() == {"message": "Deleted"}
    assert not Dataset.objects.exists() and not Trace.objects.exists()
    assert inv.delete(f"/api/v1/dataset/byid/{dataset.uuid}").status_code == 404


def test_keys_create_makes_a_key_that_works(inv):
    made = inv.post("/api/v1/keys/create").json()
    assert set(made) == {"id", "key"} and ApiKey.objects.count() == 2
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {made['key']}")
    assert client.get("/api/v1/user/identity").json() == {"username": "acme"}
    assert APIClient().post("/api/v1/keys/create").status_code == 401


def test_keys_minted_by_a_key_are_revoked_with_it(inv, org, owner_key):
    from traces.services.api_keys import api_key_hash, api_key_revoke

    child = inv.post("/api/v1/keys/create").json()["key"]
    minted = APIClient()
    minted.credentials(HTTP_AUTHORIZATION=f"Bearer {child}")
    grandchild = minted.post("/api/v1/keys/create").json()["key"]
    parent = ApiKey.objects.get(key_hash=api_key_hash(owner_key))
    assert ApiKey.objects.get(key_hash=api_key_hash(grandchild)).minted_by.minted_by == parent
    api_key_revoke(organization=org, key_id=parent.id)
    for secret in (owner_key, child, grandchild):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        response = client.get("/api/v1/user/identity")
        assert response.status_code == 401, secret
    assert not ApiKey.objects.filter(revoked_at__isnull=True).exists()


@pytest.mark.parametrize(
    ("name", "disposition"),
    [
        ("a\r\nSet-Cookie: x=1", 'attachment; filename="a__Set-Cookie__x_1.jsonl"'),
        ('q"; filename="evil.exe', 'attachment; filename="q___filename__evil.exe.jsonl"'),
        (
            "r\u202egnp.exe",
            'attachment; filename="r_gnp.exe.jsonl"',
        ),
        (
            "Résumé",
            "attachment; filename=\"Resume.jsonl\"; filename*=UTF-8''R%C3%A9sum%C3%A9.jsonl",
        ),
    ],
)
def test_download_names_its_file_after_a_hostile_dataset_name_safely(inv, org, name, disposition):
    dataset = Dataset.objects.create(organization=org, name=name)
    response = inv.get(f"/api/v1/dataset/byid/{dataset.uuid}/download")
    assert response.status_code == 200
    assert response["Content-Disposition"] == disposition
