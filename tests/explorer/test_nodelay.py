"""explorer/nodelay.py: runserver and the live server accept connections with TCP_NODELAY
(without it, a kept-alive request waited ~40 ms for the client's delayed ACK)."""

import socket

import pytest
from django.core.management import get_commands, load_command_class
from django.core.servers.basehttp import WSGIRequestHandler
from django.test.testcases import LiveServerThread

from explorer.nodelay import NoDelayThreadedWSGIServer, NoDelayWSGIServer


@pytest.mark.parametrize("server_class", [NoDelayWSGIServer, NoDelayThreadedWSGIServer])
def test_an_accepted_connection_has_nagle_off(server_class):
    server = server_class(("127.0.0.1", 0), WSGIRequestHandler)
    try:
        with socket.create_connection(server.server_address, timeout=5):
            conn, _ = server.get_request()
            try:
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            finally:
                conn.close()
    finally:
        server.server_close()


def test_runserver_is_the_one_on_the_no_delay_server():
    command = load_command_class(get_commands()["runserver"], "runserver")
    assert command.server_cls is NoDelayWSGIServer
    # WhiteNoise's runserver is still the one it extends (static files without --nostatic).
    assert command.__class__.__mro__[1].__module__.startswith("whitenoise.")


def test_the_tests_live_server_is_the_no_delay_server():
    assert LiveServerThread.server_class is NoDelayThreadedWSGIServer
