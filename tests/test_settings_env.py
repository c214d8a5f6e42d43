"""Settings come from the environment and fail loudly on bad values."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts Django in a subprocess

ROOT = Path(__file__).resolve().parents[1]


def load_settings(**env):
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "explorer.settings", **env}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT, env=full, capture_output=True, text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LIMIT_MSG_BYTES": "lots"}, "LIMIT_MSG_BYTES='lots' is not an integer"),
        ({"LIMIT_TOOL_RESULT_BYTES": "-5"}, "LIMIT_TOOL_RESULT_BYTES='-5' must be a positive"),
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"DATABASE_URL": "mysql://x/y"}, "only sqlite:// and postgres:// are supported"),
        ({"ALLOWED_HOSTS": " , "}, "ALLOWED_HOSTS=' , ' names no value"),
        ({"LOGIN_FAILURE_LIMIT": "few"}, "LOGIN_FAILURE_LIMIT='few' is not an integer"),
        ({"LOGIN_LOCKOUT_MINUTES": "0"}, "LOGIN_LOCKOUT_MINUTES='0' must be a positive"),
    ],
)
def test_it_refuses_bad_settings_with_the_variable_named(env, message):
    result = load_settings(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_it_starts_with_good_settings():
    assert load_settings(LIMIT_MSG_BYTES="1000", DEBUG="true").returncode == 0


def test_the_upload_temp_dir_comes_from_the_environment(tmp_path):
    def temp_dir(**env) -> str:
        code = "import django; django.setup(); from django.conf import settings; "
        code += "print(settings.FILE_UPLOAD_TEMP_DIR)"
        full = {k: v for k, v in os.environ.items() if k != "FILE_UPLOAD_TEMP_DIR"}
        full.update(DJANGO_SETTINGS_MODULE="explorer.settings", DEBUG="1", **env)
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True
        )
        return result.stdout.strip()

    assert temp_dir(FILE_UPLOAD_TEMP_DIR=str(tmp_path)) == str(tmp_path)
    assert temp_dir() == "None"  # the system's temporary folder


def test_a_count_that_is_not_positive_is_refused_as_a_count(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from explorer.env import env_positive_int

    monkeypatch.setenv("IMPORT_WORKERS", "0")
    with pytest.raises(ImproperlyConfigured, match="IMPORT_WORKERS='0' must be a positive whole"):
        env_positive_int("IMPORT_WORKERS", 2)
