"""Work done in a forked child process at the same time as the caller's own: the part
of a large upload another core reads (traces/services/imports.py).

The child inherits the parent's memory and open files, and must leave the parent's
alone: it touches no database connection (its sockets are the parent's), calls no C
library that keeps locks of its own unless the parent ran no other thread (`alone`),
runs no exit handler, finalizes nothing, and leaves by `os._exit` whatever happens.
What it returns comes back pickled through a pipe.
"""

import _thread
import os
import pickle
import resource
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any


class ChildFailed(Exception):
    """The child raised, or died before it could say what it found."""


def can_fork() -> bool:
    return hasattr(os, "fork")


def alone() -> bool:
    """Whether this process runs no thread but this one (its main thread). Only then may a
    child forked now call a C library that keeps locks of its own, such as SQLite's
    allocator's mutex: another thread of the parent (a threaded server's) could hold one
    at the fork, and the child would wait for it for ever (attacker and researcher
    review: gdb saw a part reader in futex_wait under sqlite3Malloc). Linux lists every
    thread of the process in /proc/self/task, those C code started without telling
    Python too; elsewhere `_thread._count` counts every thread Python started (those
    started without `threading` too, execnet's under pytest-xdist), `active_count` those
    of C code that asked `threading` which thread they are."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc
        return threading.active_count() == 1 and _thread._count() == 0


# Held from a pipe's making to the parent's closing of its write end: a child forked by
# another thread in between would hold that end too, and the parent's read would wait for
# that child's end as well as for its own child's.
_FORKING = threading.Lock()


class Forked:
    """`work()` running in a child from the moment this is made; `result()` waits for it."""

    def __init__(self, work: Callable[[], Any]) -> None:
        """Raises OSError when no process can be made (the pid limit, memory)."""
        with _FORKING:
            read_end, write_end = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(read_end)
                os.close(write_end)
                raise
            if pid == 0:  # the child
                os.close(read_end)
                _run_child(work, write_end)
            os.close(write_end)
        self.pid: int | None = pid
        self._pipe = read_end

    def result(self, timeout: float | None = None) -> Any:
        """What `work()` returned; ChildFailed if it raised or died, or if it said
        nothing for `timeout` seconds (then it is killed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks = []
        waiting = select.poll()  # not select(): a server may have descriptors past 1024
        waiting.register(self._pipe, select.POLLIN)
        try:
            while True:  # all of it before the wait: a full pipe blocks the child
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not waiting.poll(None if left is None else left * 1000):
                    os.kill(self.pid, signal.SIGKILL)
                    raise ChildFailed(f"the child gave no report in {timeout:.0f} s: killed")
                chunk = os.read(self._pipe, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(self._pipe)
            self._pipe = -1
            status = self._reap()
        data = b"".join(chunks)
        try:
            outcome, value = pickle.loads(data)
        except Exception:
            raise ChildFailed(f"the child died without a report (wait status {status})") from None
        if outcome != "ok":
            raise ChildFailed(value)
        return value

    def stop(self) -> None:
        """Kill the child if it still runs, and reap it (the caller gave up on it)."""
        if self._pipe >= 0:
            os.close(self._pipe)
            self._pipe = -1
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> int | None:
        if self.pid is None:
            return None
        pid, self.pid = self.pid, None
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None


def _run_child(work: Callable[[], Any], pipe: int) -> None:
    code = 1
    try:
        try:
            report: tuple[str, Any] = ("ok", work())
        except BaseException:
            report = ("error", traceback.format_exc())
        with os.fdopen(pipe, "wb") as out:
            pickle.dump(report, out, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        os._exit(code)


class PeakGrowth:
    """How much this process's peak memory (RSS) grows from now: a forked child's own
    measure (an import's part reader, a benchmark's phase), since the parent sees none of
    it. It resets the process's peak where Linux allows it (VmHWM), so it is for a child
    alone; elsewhere it reads the peak since the process began (ru_maxrss)."""

    def __init__(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")
        except OSError:
            pass
        rss = _status_bytes("VmRSS")
        self.start = rss if rss is not None else _maxrss()

    def bytes(self) -> int:
        peak = _status_bytes("VmHWM")
        return max(0, (peak if peak is not None else _maxrss()) - self.start)


def _maxrss() -> int:
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def _status_bytes(key: str) -> int | None:
    """A figure of /proc/self/status (VmRSS, VmHWM...) in bytes; None where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
