"""The live server answers without Nagle's delay.

Django's test server (ThreadedWSGIServer) writes a response's headers and its body in two
sends. With Nagle's algorithm on, the body waits for the client's ACK of the headers, which
a client holds back for up to 40 ms (delayed ACK): every request to `live_server` took about
45 ms whatever it did, most of the time of the client, OTLP and browser tests. gunicorn, which
serves production, sets TCP_NODELAY on its socket (gunicorn/sock.py); so does this server's.
"""

import socket

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread


class NoDelayWSGIServer(ThreadedWSGIServer):
    def server_bind(self) -> None:
        # Accepted connections inherit the option from the listening socket (Linux, BSD).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()

    def get_request(self):
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # where not inherited
        return conn, address


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    LiveServerThread.server_class = NoDelayWSGIServer
