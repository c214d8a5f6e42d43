"""Keys of one organization see nothing of another; sessions work with CSRF."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.api.conftest import BASE, error_of, post_json
from tests.conftest import PASSWORD, user_in
from traces.models import ApiKey, Block, Dataset, Trace
from traces.services.api_keys import api_key_revoke


@pytest.fixture
def trace(api):
    trace = post_json(api, f"{BASE}/traces", {"dataset": "private", "name": "t"}).json()
    body = {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "secret"}}
    post_json(api, f"{BASE}/traces/{trace['id']}/blocks", body)
    return trace


def test_a_key_of_another_org_gets_404_like_a_missing_id(api, other_api, trace):
    dataset_id = trace["dataset"]
    block_id = api.get(f"{BASE}/traces/{trace['id']}/blocks").json()["blocks"][0]["id"]
    for url in (
        f"{BASE}/traces/{trace['id']}",
        f"{BASE}/datasets/{dataset_id}",
        f"{BASE}/blocks/{block_id}",
        f"{BASE}/traces/{trace['id']}/blocks.stitched",
    ):
        theirs = other_api.get(url)
        assert theirs.status_code == 404
        assert error_of(theirs)["code"] == "NOT_FOUND"
    # and within their own organization's URL, the ids do not exist either
    own = other_api.get(f"/v1/organizations/rival/traces/{trace['id']}")
    assert error_of(own) == error_of(api.get("/v1/organizations/acme/traces/tr_nope")) | {
        "message": f"no trace {trace['id']!r}",
        "details": {"trace_id": trace["id"]},
    }
    assert other_api.get("/v1/organizations/rival/traces").json()["traces"] == []


def test_a_revoked_key_is_refused(api, key, org):
    api_key_revoke(organization=org, key_id=ApiKey.objects.get().id)
    assert error_of(api.get(f"{BASE}/datasets"))["code"] == "UNAUTHENTICATED"


def test_last_use_of_a_key_is_recorded(api):
    api.get(f"{BASE}/datasets")
    assert ApiKey.objects.get().last_used_at is not None


def test_a_browser_session_of_a_member_works_and_needs_csrf(org):
    user_in(org, "ann")
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="ann", password=PASSWORD)
    assert client.get(f"{BASE}/datasets").status_code == 200
    refused = client.post(f"{BASE}/datasets", {"name": "x"}, format="json")
    assert refused.status_code == 403
    assert error_of(refused)["code"] == "FORBIDDEN"
    assert "CSRF" in error_of(refused)["message"]


def test_a_session_of_a_non_member_gets_404(org):
    user_in(None, "bob")
    client = APIClient()
    client.login(username="bob", password=PASSWORD)
    assert error_of(client.get(f"{BASE}/datasets"))["code"] == "NOT_FOUND"


def test_create_api_key_prints_the_key_alone_on_its_last_line(db, capsys):
    call_command("create_api_key", "--org", "newco", "--name", "ci")
    out = capsys.readouterr().out.strip().splitlines()
    secret = out[-1]
    assert secret.startswith("te_") and " " not in secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/v1/organizations/newco/datasets").status_code == 200
    assert ApiKey.objects.get().key_hash != secret  # stored hashed


def test_whoami_names_the_organization_and_key(api):
    body = api.get(f"{BASE}/whoami").json()
    assert body["organization"] == "acme" and body["api_key"].startswith("key_")
    assert body["user"] is None and body["role"] == "member"


def test_create_api_key_gives_the_key_its_role(db, capsys):
    call_command("create_api_key", "--org", "newco", "--role", "viewer")
    secret = capsys.readouterr().out.strip().splitlines()[-1]
    assert ApiKey.objects.get().role == "viewer"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/v1/organizations/newco/whoami").json()["role"] == "viewer"
    refused = post_json(client, "/v1/organizations/newco/datasets", {"name": "x"})
    assert error_of(refused)["code"] == "FORBIDDEN"


def test_create_api_key_refuses_an_unknown_role(db):
    with pytest.raises(CommandError, match="invalid choice: 'root'"):
        call_command("create_api_key", "--org", "newco", "--role", "root")
    assert not ApiKey.objects.exists()


def test_nobody_signed_in_reads_public_data_but_not_private_data_and_writes_nothing(api, org):
    """DESIGN.md: a public dataset is readable by anyone, signed in or not (it used to
    answer 401); anything else is 404 as for an outsider; a write is 401."""
    shown = post_json(api, f"{BASE}/datasets", {"name": "open"}).json()
    hidden = post_json(api, f"{BASE}/datasets", {"name": "closed"}).json()
    trace = post_json(api, f"{BASE}/traces", {"dataset": shown["id"]}).json()
    secret = post_json(api, f"{BASE}/traces", {"dataset": hidden["id"]}).json()
    nobody = APIClient()
    assert error_of(nobody.get(f"{BASE}/datasets"))["code"] == "NOT_FOUND"  # nothing public
    Dataset.objects.filter(pk=shown["id"]).update(is_public=True)
    response = nobody.get(f"{BASE}/datasets/{shown['id']}")
    assert response.status_code == 200 and response.json()["name"] == "open"
    assert [d["name"] for d in nobody.get(f"{BASE}/datasets").json()["datasets"]] == ["open"]
    assert nobody.get(f"{BASE}/traces/{trace['id']}").status_code == 200
    for path in (f"datasets/{hidden['id']}", f"traces/{secret['id']}"):
        response = nobody.get(f"{BASE}/{path}")
        assert response.status_code == 404 and error_of(response)["code"] == "NOT_FOUND"
    whoami = nobody.get(f"{BASE}/whoami").json()
    assert whoami == {"organization": "acme", "api_key": None, "user": None, "role": None}
    response = post_json(nobody, f"{BASE}/traces", {"dataset": shown["id"]})
    assert response.status_code == 401 and error_of(response)["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("way", ["session", "key"])
def test_an_outsider_reads_public_datasets_only_and_writes_nothing(way, api, other_api, org):
    shown = post_json(api, f"{BASE}/datasets", {"name": "open"}).json()
    hidden = post_json(api, f"{BASE}/datasets", {"name": "closed"}).json()
    trace = post_json(api, f"{BASE}/traces", {"dataset": shown["id"]}).json()
    secret = post_json(api, f"{BASE}/traces", {"dataset": hidden["id"]}).json()
    if way == "session":
        outsider = APIClient()
        outsider.force_login(User.objects.create(username="olga"))
    else:
        outsider = other_api
    assert error_of(outsider.get(f"{BASE}/datasets"))["code"] == "NOT_FOUND"  # nothing public
    Dataset.objects.filter(pk=shown["id"]).update(is_public=True)
    assert [d["name"] for d in outsider.get(f"{BASE}/datasets").json()["datasets"]] == ["open"]
    listed = outsider.get(f"{BASE}/traces").json()["traces"]
    assert [t["id"] for t in listed] == [trace["id"]]
    assert outsider.get(f"{BASE}/traces/{trace['id']}").status_code == 200
    assert outsider.get(f"{BASE}/whoami").json()["role"] is None
    for url in (f"{BASE}/datasets/{hidden['id']}", f"{BASE}/traces/{secret['id']}"):
        assert error_of(outsider.get(url))["code"] == "NOT_FOUND"
    assert error_of(outsider.get(f"{BASE}/traces?dataset=closed"))["code"] == "NOT_FOUND"
    patch = outsider.patch(f"{BASE}/traces/{trace['id']}", {"extra": {"r": 1}}, format="json")
    assert error_of(patch)["code"] == "NOT_FOUND"
    assert Trace.objects.get(pk=trace["id"]).extra == {}


def test_a_viewer_session_cannot_write_through_the_api(api, viewer):
    """Issue 8: a viewer signed in with the browser session could create, patch and
    delete through /v1 (ten writes of ten). Every one is now 403 and changes nothing."""
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    trace = post_json(api, f"{BASE}/traces", {"dataset": dataset["id"]}).json()
    message = {"sub_type": "MESSAGE", "payload": {"role": "user", "content": "hi"}}
    block = post_json(api, f"{BASE}/traces/{trace['id']}/blocks", message).json()
    client = APIClient()
    client.force_login(viewer)
    ds, tr = f"{BASE}/datasets/{dataset['id']}", f"{BASE}/traces/{trace['id']}"
    writes = [
        lambda: post_json(client, f"{BASE}/datasets", {"name": "x"}),
        lambda: client.patch(ds, {"description": "x"}, format="json"),
        lambda: client.delete(ds),
        lambda: client.post(f"{ds}/upload", {"files": io.BytesIO(b"[]")}),
        lambda: post_json(client, f"{BASE}/traces", {"dataset": dataset["id"]}),
        lambda: client.patch(tr, {"extra": {"reward": 1}}, format="json"),
        lambda: client.delete(tr),
        lambda: post_json(client, f"{tr}/blocks", message),
        lambda: post_json(client, f"{tr}/blocks:batch", {"blocks": [message]}),
        lambda: client.patch(f"{BASE}/blocks/{block['id']}", {"extra": {"r": 1}}, format="json"),
    ]
    before = [list(model.objects.order_by("pk").values()) for model in (Dataset, Trace, Block)]
    statuses = [write().status_code for write in writes]
    assert statuses == [403] * 10
    after = [list(model.objects.order_by("pk").values()) for model in (Dataset, Trace, Block)]
    assert after == before
