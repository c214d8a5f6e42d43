"""The admin is for superusers only (explorer/admin_site.py): a staff user who is not a
superuser gets the sign-in page, whatever permissions they were given (issue 8)."""

import base64
import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from demo.generator import tiny_png
from tests.conftest import client_for, organization, user_in
from traces.models import Dataset, Image
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def theirs() -> Dataset:
    """Another organization's private dataset, with an image."""
    rival = organization("rival")
    png = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
    events = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": png}}]}]
    data = json.dumps(events).encode()
    result = trace_import(
        organization=rival, dataset_name="theirs", files=[("t.json", io.BytesIO(data))]
    )
    return result.dataset


@pytest.fixture
def staff_client(theirs) -> Client:
    """Staff with every permission on the store, owner of an organization of their own."""
    user = user_in(organization("mine"), "staff", "owner", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="traces"))
    return client_for(user)


def admin_urls(dataset: Dataset) -> list[str]:
    sha = Image.objects.get().pk
    return [
        reverse("admin:index"),
        reverse("admin:traces_dataset_changelist"),
        reverse("admin:traces_dataset_change", args=[dataset.pk]),
        reverse("admin:traces_trace_changelist"),
        reverse("admin:traces_block_changelist"),
        reverse("admin:traces_image_changelist"),
        reverse("admin:traces_image_raw", args=[sha]),
        reverse("admin:traces_dataset_upload"),
    ]


def test_a_staff_user_who_is_not_superuser_gets_no_admin(staff_client, theirs):
    for url in admin_urls(theirs):
        response = staff_client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    login = staff_client.get(reverse("admin:login"))
    assert "not authorized to access this page" in login.content.decode()


def test_a_staff_user_cannot_change_another_organizations_dataset(staff_client, theirs):
    url = reverse("admin:traces_dataset_change", args=[theirs.pk])
    form = {"name": "theirs", "description": "", "metadata": "{}", "is_public": "on"}
    response = staff_client.post(url, form)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    theirs.refresh_from_db()
    assert not theirs.is_public


def test_staff_is_not_offered_the_admin_in_the_pages(staff_client):
    assert 'href="/admin/"' not in staff_client.get("/").content.decode()


def test_a_superuser_gets_the_admin(admin_client, theirs):
    for url in admin_urls(theirs):
        assert admin_client.get(url).status_code == 200, url
    assert 'href="/admin/"' in admin_client.get("/").content.decode()


def test_nobody_signed_in_gets_the_admin_sign_in_page(client, theirs):
    for url in admin_urls(theirs):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
