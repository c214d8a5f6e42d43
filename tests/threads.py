"""Running writers at once, for the concurrency tests."""

import threading
import time

from django.db import connection


def run_together(workers):
    """Run the callables in threads released together by a barrier; their outcomes (a
    return value or the exception raised) in the order of `workers`. Each thread's
    database connection (Django opens one a thread) is closed when it ends."""
    barrier = threading.Barrier(len(workers))
    outcomes: list[object] = [None] * len(workers)

    def run(index, work):
        try:
            barrier.wait(timeout=30)
            outcomes[index] = work()
        except BaseException as exc:  # kept as the outcome
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer never finished"
    return outcomes


def waiting_for_a_lock() -> int:
    """How many sessions of this test's PostgreSQL database wait for a lock. (pg_locks is
    the whole server's: the other test worker's waits were counted too, and a row lock's
    wait names no database.)"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def until_one_waits_for_a_lock(seconds: float = 30) -> int:
    """waiting_for_a_lock(), once it is not 0 or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while not (waiting := waiting_for_a_lock()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return waiting
