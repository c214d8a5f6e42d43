"""Production defaults: no start with the development key when DEBUG is off; HTTPS=1 turns
on secure cookies, HSTS, the proxy header and the redirect; `check --deploy` is clean with
the settings README.md documents; gunicorn.conf.py serves them.

Each runs the settings in a child process, as a server would load them.
"""

import http.client
import json
import os
import runpy
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.api_bench import database_url

pytestmark = pytest.mark.slow  # each test starts the server or a check in a subprocess

ROOT = Path(__file__).resolve().parents[1]
DEV_KEY = "dev-insecure-trace-explorer-key-set-SECRET_KEY-in-production"
# README.md, "Production": what a deployment sets.
PRODUCTION = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "traces.example.org",
    "HTTPS": "1",
}
SECURITY = [
    "DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER",
    "SECURE_SSL_REDIRECT", "SECURE_REDIRECT_EXEMPT", "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
]  # fmt: skip


# What a server's environment shares with this test run: not its test key, nor what the
# browser tests set for themselves (DJANGO_ALLOW_ASYNC_UNSAFE).
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "DATABASE_URL", "SQLITE_TEST_NAME")


def environment(**env: str) -> dict[str, str]:
    base = {name: os.environ[name] for name in INHERITED if name in os.environ}
    return {**base, "DJANGO_SETTINGS_MODULE": "explorer.settings", **env}


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environment(**env), capture_output=True, text=True
    )


def settings_of(**env: str) -> dict:
    code = (
        "import django, json; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n) for n in {SECURITY!r}}}))"
    )
    result = run(["-c", code], **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "env",
    [{}, {"SECRET_KEY": ""}, {"SECRET_KEY": DEV_KEY}, {"SECRET_KEY": DEV_KEY, "DEBUG": "0"}],
    ids=["no key", "empty key", "development key", "development key, DEBUG=0"],
)
def test_it_refuses_to_start_without_a_real_key_when_debug_is_off(env):
    result = run(["manage.py", "check"], **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize(
    "key",
    ["x" * 49 + "y", "ab" * 40, "short-but-random-8f3k2"],
    ids=["few unique characters", "two characters repeated", "under 50 characters"],
)
def test_it_refuses_to_start_with_a_weak_key_when_debug_is_off(key):
    """As Django's own check (security.W009): fewer than 50 characters or fewer than 5
    unique ones is a weak key (harden F10d: it was accepted)."""
    result = run(["manage.py", "check"], SECRET_KEY=key)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is too weak" in result.stderr
    assert key not in result.stderr  # never printed


def test_it_starts_with_the_development_key_when_debug_is_on():
    assert run(["manage.py", "check"], DEBUG="1").returncode == 0
    assert run(["manage.py", "check"], DEBUG="1", SECRET_KEY=DEV_KEY).returncode == 0


def test_session_cookie_secure_is_replaced_by_https():
    result = run(["manage.py", "check"], DEBUG="1", SESSION_COOKIE_SECURE="1")
    assert result.returncode != 0
    assert "SESSION_COOKIE_SECURE is replaced by HTTPS=1" in result.stderr


def test_https_turns_on_secure_cookies_hsts_the_proxy_header_and_the_redirect():
    assert settings_of(**PRODUCTION) == {
        "DEBUG": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_SSL_REDIRECT": True,
        "SECURE_REDIRECT_EXEMPT": ["^healthz$"],
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    }
    plain = settings_of(**{**PRODUCTION, "HTTPS": "0"})
    assert plain["SESSION_COOKIE_SECURE"] is plain["SECURE_SSL_REDIRECT"] is False
    assert (plain["SECURE_HSTS_SECONDS"], plain["SECURE_PROXY_SSL_HEADER"]) == (0, None)


def test_check_deploy_is_clean_with_the_documented_production_settings():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "DEBUG"], **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_check_deploy_warns_without_https():
    """The check above would catch a setting that went missing."""
    result = run(["manage.py", "check", "--deploy"], **{**PRODUCTION, "HTTPS": "0"})
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stdout + result.stderr


# --- gunicorn.conf.py -------------------------------------------------------------------


def test_the_served_application_keeps_what_it_loaded_out_of_the_collector():
    """explorer/wsgi.py freezes what the server loaded (every view included), so that a
    full collection during a request walks only what requests made."""
    code = (
        "import gc, sys; import explorer.wsgi; "
        "print(gc.get_freeze_count(), 'traces.api.blocks' in sys.modules)"
    )
    result = run(["-c", code], **PRODUCTION)
    assert result.returncode == 0, result.stderr
    frozen, views_loaded = result.stdout.split()
    assert int(frozen) > 10_000 and views_loaded == "True"


def test_gunicorn_is_sized_from_the_cores(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    cores = len(os.sched_getaffinity(0))
    assert (config["workers"], config["threads"]) == (cores + 1, min(2 * cores, 8))
    assert (config["worker_class"], config["wsgi_app"]) == ("gthread", "explorer.wsgi:application")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    monkeypatch.setenv("GUNICORN_THREADS", "2")
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert (config["workers"], config["threads"]) == (3, 2)


def test_gunicorn_listens_on_the_loopback_by_default(monkeypatch):
    """Behind a buffering proxy on the same machine (README, "Production"): gunicorn's
    threads must never face slow clients directly (slowloris, harden F6)."""
    monkeypatch.delenv("BIND", raising=False)
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["bind"] == "127.0.0.1:8000"
    monkeypatch.setenv("BIND", "10.1.2.3:9000")
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["bind"] == "10.1.2.3:9000"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(port: int, path: str, **headers: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": "traces.example.org", **headers})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


@pytest.mark.django_db
def test_the_production_command_serves_https_behind_a_proxy():
    port = free_port()
    env = environment(
        **PRODUCTION,
        BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        GUNICORN_THREADS="2",
        DATABASE_URL=database_url(connection.settings_dict),
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = get(port, "/healthz")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()[-3000:]
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.2)
        # A load balancer checks over plain HTTP.
        assert health.status == 200
        # Anything else over plain HTTP goes to HTTPS.
        plain = get(port, "/")
        assert plain.status == 301
        assert plain.getheader("Location") == "https://traces.example.org/"
        # Through the TLS proxy: served, with HSTS and secure cookies.
        proxied = get(port, "/accounts/login/", **{"X-Forwarded-Proto": "https"})
        assert proxied.status == 200
        assert proxied.getheader("Strict-Transport-Security") == (
            "max-age=31536000; includeSubDomains"
        )
        assert "Secure" in proxied.getheader("Set-Cookie")  # the CSRF cookie
    finally:
        server.terminate()
        server.wait(timeout=30)
