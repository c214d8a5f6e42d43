"""Browser tests: pytest-playwright drives Debian's Chromium (never a downloaded browser)
against pytest-django's live server, which shares the test database (a file on SQLite).

Where the Chromium binary is missing every test here is skipped, loudly: the reason names
the binary and how to install it, and the end of the run repeats it. `.ci/run` installs
Chromium, so CI never skips them. E2E_CHROMIUM points at another binary (or at a missing
one, to see the skip).
"""

import functools
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PASSWORD  # noqa: F401 (imported from here by the browser tests)
from traces.models import Organization, Trace
from traces.services.imports import trace_import

# Playwright's sync API keeps an asyncio loop marked as running in the main thread from
# the first browser test to the end of the session, and Django refuses ORM calls under a
# running loop unless this is set. It holds for the rest of the session, other tests too.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
HERE = Path(__file__).resolve().parent
SKIP_REASON = (
    f"BROWSER TESTS SKIPPED: no Chromium at {CHROMIUM}. Install Debian's with "
    "`apt-get install -y chromium` (.ci/run does); never `playwright install`."
)


def chromium_missing() -> bool:
    return not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK))


@functools.cache
def _in_here(folder: Path) -> bool:
    return HERE in folder.resolve().parents or folder.resolve() == HERE


def _is_e2e(item: pytest.Item) -> bool:
    # A folder at a time: resolving the path of each of ~3,700 items took 0.5 s.
    return _in_here(item.path.parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here is a `browser` test (`make test-fast` leaves them out), skipped
    when there is no Chromium."""
    skip = pytest.mark.skip(reason=SKIP_REASON) if chromium_missing() else None
    for item in items:
        if _is_e2e(item):
            item.add_marker(pytest.mark.browser)
            if skip:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if any(SKIP_REASON in str(report.longrepr) for report in skipped):
        terminalreporter.write_sep("!", SKIP_REASON, red=True, bold=True)


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    return {
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ],
    }


@pytest.fixture(scope="session")
def base_url() -> None:
    """The tests use live_server.url. (pytest-playwright's own fixture, a method of a
    plugin class, draws a deprecation warning from pytest 9.)"""
    return None


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}, "locale": "en-US"}


# --- data, through the project's services ---------------------------------------------


def jsonl(lines: list[Any]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def import_lines(org: Organization, dataset: str, lines: list[Any]) -> list[Trace]:
    """Import JSONL `lines` (traces, optionally a first {"metadata": ...} line) through
    trace_import, as the upload page and the import command do."""
    result = trace_import(
        organization=org,
        dataset_name=dataset,
        files=[(f"{dataset}.jsonl", io.BytesIO(jsonl(lines)))],
        allow_duplicates=True,  # fixtures repeat identical runs as trials on purpose
    )
    return list(Trace.objects.filter(dataset=result.dataset).order_by("index"))


def weather_events(city: str = "Paris") -> list[dict[str, Any]]:
    """A chat trace with every kind of block: 4 rows; the third carries a think and two
    tool calls, each with its result."""
    return [
        {"role": "system", "content": "You are a **weather** assistant."},
        {"role": "user", "content": f"What's the weather in {city}, and what time is it?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "I need the forecast and the local time.",
            "tool_calls": [
                {
                    "id": "call_weather",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                },
                {
                    "id": "call_time",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": {"tz": "Europe/Paris"}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_weather", "content": "22°C, cloudy"},
        {"role": "tool", "tool_call_id": "call_time", "content": "14:05"},
        {"role": "assistant", "content": f"It is 22°C and cloudy in {city}; it is 14:05."},
    ]


@pytest.fixture
def weather_traces(org) -> list[Trace]:
    """Two traces of one dataset (so that J/K have somewhere to go), rewards 1 and 0."""
    return import_lines(
        org,
        "weather-agent",
        [
            {"metadata": {"accuracy": 0.5, "model": "demo"}},
            {"messages": weather_events("Paris"), "metadata": {"name": "paris", "reward": 1}},
            {"messages": weather_events("Lyon"), "metadata": {"name": "lyon", "reward": 0}},
        ],
    )


# --- the browser ----------------------------------------------------------------------


@pytest.fixture
def sign_in(live_server) -> Callable[..., None]:
    """Sign in through the login page's form."""

    def run(page, username: str, password: str = PASSWORD) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("form button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")

    return run


@pytest.fixture
def page_without_js(browser, member, sign_in) -> Iterator[Any]:
    """A page with JavaScript off, signed in as `member` (tests/conftest.py)."""
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 800}
    )
    try:
        page = context.new_page()
        sign_in(page, member.username)
        yield page
    finally:
        context.close()


@pytest.fixture
def console_errors(page) -> list[str]:
    """Console errors and uncaught exceptions of `page`; tests assert it stays empty."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else 0)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    return errors
