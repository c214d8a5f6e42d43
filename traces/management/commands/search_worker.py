"""`manage.py search_worker`: builds full-text search after the rows (PostgreSQL). Runs
beside the web server (`make run`; README, production); `--once` drains the queue and
exits. The work is traces.services.search_index.search_index_build."""

import signal
import threading

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection

from traces.services.search_index import BATCH, search_index_build, search_queue_emptied

POLL_SECONDS = 1.0


class Command(BaseCommand):
    help = "Index the text of newly written traces for search (PostgreSQL; SQLite needs none)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="drain the queue and exit")
        parser.add_argument("--batch", type=int, default=BATCH, help="traces a transaction")

    def handle(self, *args, once: bool, batch: int, **options):
        if connection.vendor != "postgresql":
            self.stdout.write("search worker: nothing to do on SQLite (search scans the rows)")
            return
        stop = threading.Event()
        if not once:
            # SIGTERM (the process manager, `make run`) and Ctrl-C end the loop between
            # batches: a batch's transaction commits or rolls back, never half-written.
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
        total = 0
        since_emptied = 0  # traces indexed since the queue was last found empty
        while not stop.is_set():
            try:
                done = search_index_build(limit=batch)
            except DatabaseError as exc:  # a lost connection, a deadlock: try again later
                if once:
                    raise
                self.stderr.write(f"search worker: {exc}; retrying")
                connection.close()
                done = 0
            total += done
            since_emptied += done
            if done:
                continue
            if since_emptied:
                search_queue_emptied()
                since_emptied = 0
            if once:
                break
            stop.wait(POLL_SECONDS)
        self.stdout.write(f"search worker: {total} trace{'s' if total != 1 else ''} indexed")
