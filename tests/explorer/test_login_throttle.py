"""Login throttling (explorer/login_throttle.py, django-axes): after LOGIN_FAILURE_LIMIT
failed sign-ins for a username or from an address, sign-in is refused for a while with a
clear message; the count lives in the database, shared by every worker.

axes is imported inside the tests that use its model, so that this file also runs (and
fails) on a tree without throttling (issue 8's "Done means")."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
LIMIT = 5  # LOGIN_FAILURE_LIMIT's default


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Dozens of sign-ins: a fast hasher keeps the suite quick (the rule is the same)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def ann():
    return User.objects.create_user("ann", password="right-password")


def sign_in(client, username, password, address="10.0.0.1", url=LOGIN):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_the_limit_is_a_few_failures_and_the_lockout_a_quarter_hour():
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.LOGIN_ADDRESS_FAILURE_LIMIT == 10 * LIMIT
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_HANDLER == "explorer.login_throttle.PairThenAddressHandler"


def test_a_few_failures_do_not_lock_anyone_out(ann):
    client = Client()
    for _ in range(LIMIT - 1):
        assert sign_in(client, "ann", "wrong").status_code == 200
    response = sign_in(client, "ann", "right-password")
    assert response.status_code == 302 and signed_in(client)


def test_repeated_failures_lock_out_the_username_from_that_address(ann):
    for _ in range(LIMIT):
        sign_in(Client(), "ann", "wrong", address="10.0.1.1")
    client = Client()
    response = sign_in(client, "ann", "right-password", address="10.0.1.1")
    assert response.status_code == 429 and not signed_in(client)
    html = response.content.decode()
    assert "Too many failed sign-ins for this username from this address" in html
    assert "Try again in 15 minutes." in html and 'name="password"' in html
    assert response["Retry-After"] == "900"
    from axes.models import AccessAttempt

    counted = AccessAttempt.objects.filter(username="ann").values_list("failures_since_start")
    assert sum(n for (n,) in counted) >= LIMIT  # in the database, shared by every worker


def test_a_lockout_from_one_address_does_not_stop_the_user_signing_in_from_another(ann):
    """harden F7: the lockout was by username alone, so anyone could lock a user out by
    failing their password; it is by (username, address) now."""
    for _ in range(3 * LIMIT):
        sign_in(Client(), "ann", "wrong", address="10.6.6.6")
    assert sign_in(Client(), "ann", "right-password", address="10.6.6.6").status_code == 429
    client = Client()
    response = sign_in(client, "ann", "right-password", address="10.0.2.1")
    assert response.status_code == 302 and signed_in(client)


def test_failures_spread_over_addresses_do_not_lock_out_the_username(ann):
    for n in range(3 * LIMIT):
        sign_in(Client(), "ann", "wrong", address=f"10.0.1.{n}")
    client = Client()
    assert sign_in(client, "ann", "right-password", address="10.0.2.1").status_code == 302


@pytest.mark.slow  # dozens of refused sign-ins (about a second)
def test_an_address_guessing_many_usernames_is_locked_out_at_its_own_higher_limit(ann):
    address_limit = settings.LOGIN_ADDRESS_FAILURE_LIMIT
    assert address_limit > LIMIT
    for n in range(address_limit - 1):
        sign_in(Client(), f"guess-{n}", "wrong", address="10.0.3.3")
    client = Client()
    assert sign_in(client, "ann", "right-password", address="10.0.3.3").status_code == 302
    sign_in(Client(), "guess-last", "wrong", address="10.0.3.3")
    refused = Client()
    response = sign_in(refused, "ann", "right-password", address="10.0.3.3")
    assert response.status_code == 429 and not signed_in(refused)
    assert "or from this address" in response.content.decode()
    other = Client()
    assert sign_in(other, "ann", "right-password", address="10.0.4.4").status_code == 302


def test_the_lockout_ends_after_the_cool_off(ann):
    from axes.models import AccessAttempt

    for _ in range(LIMIT):
        sign_in(Client(), "ann", "wrong")
    assert sign_in(Client(), "ann", "right-password").status_code == 429
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    client = Client()
    assert sign_in(client, "ann", "right-password").status_code == 302 and signed_in(client)


def test_the_admin_sign_in_is_throttled_too(admin_user):
    for _ in range(LIMIT):
        sign_in(Client(), "admin", "wrong", url="/admin/login/")
    client = Client()
    response = sign_in(client, "admin", "password", url="/admin/login/")
    assert response.status_code == 429 and not signed_in(client)


def test_sign_ins_without_a_request_are_not_counted(ann):
    from axes.models import AccessAttempt

    client = Client()
    for _ in range(LIMIT + 1):
        assert not client.login(username="ann", password="wrong")
    assert client.login(username="ann", password="right-password")
    assert not AccessAttempt.objects.exists()


def test_behind_a_proxy_failures_count_per_client_not_per_proxy(ann, settings):
    settings.LOGIN_PROXY_COUNT = 1
    for _ in range(LIMIT):
        Client().post(
            LOGIN,
            {"username": "ann", "password": "wrong"},
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR="1.2.3.4, 10.9.9.9",  # the first part is the client's to write
        )
    client = Client()
    response = client.post(
        LOGIN,
        {"username": "ann", "password": "right-password"},
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="1.2.3.4, 10.9.9.10",
    )
    assert response.status_code == 302 and signed_in(client)
    refused = Client().post(
        LOGIN,
        {"username": "ann", "password": "right-password"},
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="10.9.9.9",
    )
    assert refused.status_code == 429
