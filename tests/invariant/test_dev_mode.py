"""Test mode (DEV_MODE): every /api/v1 request acts as the developer, whatever key it sends;
off by default; refused at start on a server others can reach unless DEBUG is on."""

import pytest
from rest_framework.test import APIClient

from tests.test_settings_env import load_settings
from traces.models import ApiKey, Dataset

PUSH = {"messages": [[{"role": "user", "content": "hi"}]], "dataset": "dev"}


@pytest.mark.django_db
def test_every_request_acts_as_the_developer(settings):
    settings.DEV_MODE = True
    anonymous = APIClient()
    assert anonymous.post("/api/v1/user/signup").json() == {"success": True}
    bogus = APIClient()
    bogus.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    assert bogus.post("/api/v1/push/trace", PUSH, format="json").json()["username"] == "developer"
    assert anonymous.post("/api/v1/keys/create").status_code == 200  # a bare POST
    assert Dataset.objects.get().organization.slug == "developer"
    second = APIClient(HTTP_REFERER="http://localhost/?noauth=user1")
    assert second.get("/api/v1/user/identity").json() == {"username": "user1"}
    other = APIClient(HTTP_REFERER="http://localhost/?noauth=someone")
    assert other.get("/api/v1/user/identity").status_code == 401  # normal authentication


FORBIDDEN = {
    "detail": "Forbidden: in test mode (DEV_MODE) a request that changes something must come "
    "from this site's own pages"
}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_ORIGIN": "https://evil.example"},
        {"HTTP_ORIGIN": "null"},
        {"HTTP_REFERER": "https://evil.example/page"},
        {"HTTP_ORIGIN": "http://testserver.evil.example", "HTTP_REFERER": "http://testserver/"},
    ],
)
def test_a_cross_site_post_in_test_mode_is_403_and_changes_nothing(settings, headers):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.DEV_MODE = True
    client = APIClient(**headers)
    upload = SimpleUploadedFile("d.jsonl", b'[{"role": "user"}]\n')
    response = client.post(
        "/api/v1/dataset/upload", {"name": "x", "file": upload, "is_public": "true"}
    )
    assert response.status_code == 403 and response.json() == FORBIDDEN
    response = client.post("/api/v1/keys/create")
    assert response.status_code == 403 and response.json() == FORBIDDEN
    assert not Dataset.objects.exists() and not ApiKey.objects.exists()


@pytest.mark.django_db
def test_a_same_site_post_and_a_cross_site_get_in_test_mode_pass(settings):
    settings.DEV_MODE = True
    own = APIClient(HTTP_ORIGIN="http://testserver", HTTP_REFERER="http://testserver/x")
    assert own.post("/api/v1/push/trace", PUSH, format="json").status_code == 200
    other = APIClient(HTTP_ORIGIN="https://evil.example")
    assert other.get("/api/v1/user/identity").json() == {"username": "developer"}


@pytest.mark.django_db
def test_off_by_default_a_bogus_key_is_401_and_signup_404():
    bogus = APIClient()
    bogus.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    assert bogus.post("/api/v1/push/trace", PUSH, format="json").status_code == 401
    assert APIClient().post("/api/v1/user/signup").status_code == 404
    assert not Dataset.objects.exists()


@pytest.mark.slow  # starts Django in a subprocess
@pytest.mark.parametrize(
    ("env", "starts"),
    [
        ({"DEV_MODE": "true", "ALLOWED_HOSTS": "explorer.example.com"}, False),
        ({"DEV_MODE": "true", "ALLOWED_HOSTS": "*"}, False),
        ({"DEV_MODE": "true", "ALLOWED_HOSTS": "localhost,127.0.0.1"}, True),
        ({"DEV_MODE": "true", "ALLOWED_HOSTS": "explorer.example.com", "DEBUG": "1"}, True),
    ],
)
def test_it_refuses_to_start_in_test_mode_off_loopback_without_debug(env, starts):
    result = load_settings(**env)
    assert (result.returncode == 0) == starts, result.stderr[-500:]
    if not starts:
        assert "DEV_MODE=true lets anyone act as the development user" in result.stderr
