"""gunicorn's settings for production (README.md, "Production"):
`gunicorn -c gunicorn.conf.py`.

Sized from the machine's cores: a process per core, plus one, runs Python in parallel
(the GIL keeps one process on one core); threads in each process overlap the waits on
the database and on slow clients, two a core, at most 8. Every Django thread keeps its
own database connection, so one server holds up to workers x threads of them (12 on 2
cores, 72 on 8): keep the sum over the servers within PostgreSQL's max_connections (100
by default), with WEB_CONCURRENCY and GUNICORN_THREADS if needed.
"""

import os


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _positive(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = int(raw)
    if value < 1:
        raise ValueError(f"{name}={raw!r} must be a positive number")
    return value


CORES = _cores()

wsgi_app = "explorer.wsgi:application"
# The loopback only: gunicorn's threads must sit behind a buffering proxy (nginx) on the
# same machine, never face clients directly (a slow client holds a thread: slowloris).
bind = os.environ.get("BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = _positive("WEB_CONCURRENCY", CORES + 1)
threads = _positive("GUNICORN_THREADS", min(2 * CORES, 8))
# A long upload is one request; gthread workers keep answering the arbiter meanwhile.
timeout = 120
graceful_timeout = 30
keepalive = 5
accesslog = "-"
errorlog = "-"
