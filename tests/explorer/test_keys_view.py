"""The API keys page (/keys/): create (shown once, and it works), list, revoke."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.explorer.conftest import XSS, html_problems
from traces.models import ApiKey
from traces.services.api_keys import api_key_create, api_key_hash

URL = reverse("api-keys")


def secret_in(html: str) -> str:
    found = re.search(r'id="new-key-secret"[^>]*value="([^"]+)"', html)
    assert found, "no new key on the page"
    return found.group(1)


def api_get(secret: str, org: str = "acme"):
    return Client().get(f"/v1/organizations/{org}/datasets", HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_create_shows_the_key_once_and_it_works(owner_client, org, owner):
    response = owner_client.post(URL, {"organization": "acme", "name": "ci runner"})
    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    secret = secret_in(html)
    assert "it will not be shown again" in html
    key = ApiKey.objects.get(organization=org)
    assert key.name == "ci runner" and key.created_by == owner
    assert key.key_hash == api_key_hash(secret) and secret not in {key.prefix, key.key_hash}
    assert api_get(secret).status_code == 200
    assert api_get(secret, org="rival").status_code == 404  # one organization only
    later = owner_client.get(URL).content.decode()
    assert secret not in later and "new-key-secret" not in later
    assert "ci runner" in later and f"{key.prefix}…" in later and "active" in later


def test_list_per_organization(owner_client, org, rival_org):
    api_key_create(organization=org, name="mine")
    api_key_create(organization=rival_org, name="theirs")
    html = owner_client.get(URL).content.decode()
    assert "mine" in html and "theirs" not in html
    assert html.count('class="create-key"') == 1 and 'name="organization" value="acme"' in html
    assert "never" in html  # not used yet


def test_revoke_with_confirmation(owner_client, org):
    created = api_key_create(organization=org, name="old")
    assert api_get(created.secret).status_code == 200
    revoke = reverse("api-key-revoke", args=[created.api_key.pk])
    confirm = owner_client.get(revoke)
    html = confirm.content.decode()
    assert confirm.status_code == 200 and "Revoke the key" in html
    assert f'action="{revoke}"' in html and 'method="post"' in html
    assert ApiKey.objects.get(pk=created.api_key.pk).revoked_at is None  # GET changes nothing
    response = owner_client.post(revoke)
    assert response.status_code == 302 and response["Location"] == URL
    assert ApiKey.objects.get(pk=created.api_key.pk).revoked_at is not None
    assert api_get(created.secret).status_code == 401
    html = owner_client.get(URL).content.decode()
    assert "Revoked the key" in html and "revoked" in html
    assert f'href="{revoke}"' not in html  # no revoke button for a revoked key


def test_revoke_needs_csrf(owner, org):
    created = api_key_create(organization=org)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post(reverse("api-key-revoke", args=[created.api_key.pk]))
    assert response.status_code == 403
    assert ApiKey.objects.get(pk=created.api_key.pk).revoked_at is None
    response = client.post(URL, {"organization": "acme", "name": "x"})
    assert response.status_code == 403 and not ApiKey.objects.filter(name="x").exists()


def test_another_organizations_keys_are_out_of_reach(owner_client, rival_org):
    theirs = api_key_create(organization=rival_org)
    revoke = reverse("api-key-revoke", args=[theirs.api_key.pk])
    assert owner_client.get(revoke).status_code == 404
    assert owner_client.post(revoke).status_code == 404
    assert ApiKey.objects.get(pk=theirs.api_key.pk).revoked_at is None
    response = owner_client.post(URL, {"organization": "rival", "name": "x"})
    assert response.status_code == 404 and not ApiKey.objects.filter(name="x").exists()


@pytest.mark.parametrize("who", ["viewer_client", "member_client"])
def test_only_owners_manage_keys(who, request, org):
    client = request.getfixturevalue(who)
    key = api_key_create(organization=org, name="team key")
    html = client.get(URL).content.decode()
    assert "No organization to manage" in html and "team key" not in html
    assert "you are not an owner of acme" in html
    assert client.post(URL, {"organization": "acme", "name": "v"}).status_code == 403
    revoke = reverse("api-key-revoke", args=[key.api_key.pk])
    assert client.post(revoke).status_code == 403
    assert ApiKey.objects.get().revoked_at is None and ApiKey.objects.count() == 1


def test_an_owner_picks_the_role_of_a_new_key(owner_client, org):
    html = owner_client.get(URL).content.decode()
    assert '<option value="member" selected>' in html and '<option value="viewer"' in html
    response = owner_client.post(URL, {"organization": "acme", "name": "r", "role": "viewer"})
    assert response.status_code == 201 and "New viewer key" in response.content.decode()
    key = ApiKey.objects.get()
    assert key.role == "viewer"
    secret = secret_in(response.content.decode())
    assert api_get(secret).status_code == 200
    refused = Client().post(
        "/v1/organizations/acme/datasets",
        {"name": "x"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert refused.status_code == 403
    bad = owner_client.post(URL, {"organization": "acme", "name": "r", "role": "god"})
    assert bad.status_code == 400 and "A key&#x27;s role is one of" in bad.content.decode()
    assert ApiKey.objects.count() == 1


def test_a_too_long_name_is_refused(owner_client, org):
    response = owner_client.post(URL, {"organization": "acme", "name": "n" * 201})
    assert response.status_code == 400 and not ApiKey.objects.exists()


def test_sign_in_is_required(client):
    assert client.get(URL).status_code == 302


def test_no_script_from_data(owner_client, org):
    script, img, js = XSS
    for name in XSS:
        api_key_create(organization=org, name=name)
    org.name = img
    org.save()
    response = owner_client.post(URL, {"organization": "acme", "name": script})
    html = response.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html_problems(html) == []
    assert html_problems(owner_client.get(URL).content.decode()) == []
    key = ApiKey.objects.filter(name=js).first()
    confirm = owner_client.get(reverse("api-key-revoke", args=[key.pk]))
    assert html_problems(confirm.content.decode()) == []
