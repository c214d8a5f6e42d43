"""The live server without Nagle's 40 ms a response (explorer/nodelay.py): every request
to `live_server` took about 45 ms, most of the time of the client, OTLP and browser
tests."""

import pytest
from django.test.testcases import LiveServerThread

from explorer.nodelay import NoDelayThreadedWSGIServer


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    LiveServerThread.server_class = NoDelayThreadedWSGIServer
