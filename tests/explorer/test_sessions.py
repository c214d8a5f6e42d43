"""explorer/sessions.py: Django's database sessions, read by a prepared query."""

import datetime

from django.conf import settings
from django.contrib.sessions.backends import db as django_db_sessions
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.conftest import PASSWORD

HOME = "datasets"


def _signed_in(client: Client) -> bool:
    response = client.get(reverse(HOME))
    assert response.status_code == 200
    return response.wsgi_request.user.is_authenticated


def test_a_person_who_signs_in_stays_signed_in_until_they_sign_out(member):
    client = Client()
    assert client.post(reverse("login"), {"username": member.username, "password": PASSWORD})
    assert _signed_in(client) and _signed_in(client)
    client.post(reverse("logout"))
    assert not _signed_in(client)
    assert not Session.objects.exists()


def test_an_expired_session_is_as_none(member_client):
    assert _signed_in(member_client)
    Session.objects.update(expire_date=timezone.now() - datetime.timedelta(seconds=1))
    assert not _signed_in(member_client)


def test_an_unknown_or_crafted_session_key_is_no_one(member_client):
    for key in ("x" * 32, "abcdefgh\x00ijkl", "é" * 40, ""):
        member_client.cookies[settings.SESSION_COOKIE_NAME] = key
        assert not _signed_in(member_client), key


def test_a_session_opened_by_djangos_own_engine_stays_open(member):
    # As a server before this engine wrote it.
    store = django_db_sessions.SessionStore()
    store["_auth_user_id"] = str(member.pk)
    store["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    store["_auth_user_hash"] = member.get_session_auth_hash()
    store.create()
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = store.session_key
    assert _signed_in(client)
