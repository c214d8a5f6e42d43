"""HTTP servers of Django's own (runserver, the tests' live server) that answer without
Nagle's delay.

Django's WSGIServer writes a response's headers and its body in two sends. With Nagle's
algorithm on, the body waits for the client's ACK of the headers, which the client holds
back for up to 40 ms (delayed ACK): every request on a kept-alive connection took about
45 ms, whatever it did. gunicorn, which serves production, sets TCP_NODELAY on its
socket (gunicorn/sock.py); these servers do the same.
"""

import socket

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIServer


class NoDelay:
    """Mixed into a socketserver server: TCP_NODELAY on every connection it accepts."""

    def get_request(self):
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class NoDelayWSGIServer(NoDelay, WSGIServer):
    """`manage.py runserver`'s server (explorer/management/commands/runserver.py)."""


class NoDelayThreadedWSGIServer(NoDelay, ThreadedWSGIServer):
    """The live server of the tests (tests/live_server.py)."""
