"""A worker killed in the middle of its work, as a server's worker is killed (a timeout,
out of memory): SIGKILL, so that no cleanup of any kind runs."""

import os
import signal
from collections.abc import Callable

from django.db import connections

_inherited: list[object] = []  # a worker's copies of its parent's connections


def killed_midway(work: Callable[[Callable[[], None]], object]) -> None:
    """Run `work(stall)` in a forked worker and kill it with SIGKILL once it calls
    `stall()`; return when it is dead."""
    reading, told = os.pipe()

    def stall() -> None:
        os.write(told, b"!")
        signal.pause()

    pid = os.fork()
    if pid == 0:  # the worker
        try:
            os.close(reading)
            # The parent's database connections are not the worker's to use: their socket
            # is shared after the fork, and two users of one PostgreSQL session break it.
            # Kept referenced, never closed: closing would end the parent's session too.
            for connection in connections.all(initialized_only=True):
                _inherited.append(connection.connection)
                connection.connection = None
            work(stall)
        finally:
            os._exit(0)
    # Only the worker may write: if it ends without stalling, the read sees the pipe's end
    # instead of waiting forever.
    os.close(told)
    try:
        assert os.read(reading, 1) == b"!", "the worker ended before it stalled"
        os.kill(pid, signal.SIGKILL)
    finally:
        os.waitpid(pid, 0)
        os.close(reading)
