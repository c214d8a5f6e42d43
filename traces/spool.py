"""Rows kept on disk between reading an upload and writing it (traces/services/imports.py).

Every spool is an anonymous temporary file: it has no name in any directory, so nothing
is left behind however the process ends (an exception, a killed worker), and memory
stays flat however many rows an upload has.

- `RecordSpool`: Python tuples, read back in order; pickled a batch at a time (one
  pickle a row costs more than the rest of the import's work on the row).
- `RowSpool`: the rows of one table, as tuples of values the driver takes (JSON columns
  as text), written with the database's bulk path (traces/bulk.py: psycopg's COPY
  `write_row` on PostgreSQL, one `executemany` on SQLite). Rows spooled before it was
  known that they are not wanted (a duplicate trace's blocks) are left out of the write
  by the value of their key column (`leave_out`).
- `KeySpool`: a set of short keys (a trace's content hash), for the questions an import
  asks once a trace ("has the dataset, or this upload, this trace already?").
"""

import os
import pickle
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence

from django.conf import settings

from traces.bulk import insert_rows

BATCH_ROWS = 500
BATCH_BYTES = 4 << 20  # a batch is pickled sooner when its large values reach this


def anonymous_file():
    """A read/write binary temporary file without a name on disk."""
    return tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)


class RecordSpool:
    def __init__(self) -> None:
        self.file = anonymous_file()
        self.count = 0
        self._batch: list[tuple] = []
        self._batch_bytes = 0

    def add(self, record: tuple, size: int = 0) -> None:
        """`size`: the bytes of its large values, if the caller knows them."""
        self._batch.append(record)
        self._batch_bytes += size
        self.count += 1
        if len(self._batch) >= BATCH_ROWS or self._batch_bytes >= BATCH_BYTES:
            self._dump()

    def _dump(self) -> None:
        if self._batch:
            # Protocol 5 writes a large bytes value straight to the file, without a copy.
            pickle.dump(self._batch, self.file, protocol=5)
            self._batch, self._batch_bytes = [], 0

    def flush(self) -> None:
        """Every record into the file: another process may read them from there (the
        one that shares the file: traces/services/imports.py's parts)."""
        self._dump()
        self.file.flush()

    def __iter__(self) -> Iterator[tuple]:
        self.flush()
        self.file.seek(0)
        left = self.count
        while left:
            batch = pickle.load(self.file)
            left -= len(batch)
            # Each record is let go as soon as it is given: a batch is freed as it is read.
            batch.reverse()
            while batch:
                yield batch.pop()

    def close(self) -> None:
        self._batch = []
        self.file.close()


class RowSpool:
    """Rows of one table kept as records, on both databases: PostgreSQL's COPY text was
    once escaped here field by field in Python, which cost ~30% of a PostgreSQL import;
    psycopg's `write_row` formats the same rows in C."""

    def __init__(self, table: str, columns: Sequence[str], key: int = 1) -> None:
        """`key`: the index of the column `leave_out` names rows by (an id)."""
        self.table = table
        self.columns = tuple(columns)
        self.key = key
        self.left_out: set[str] = set()
        self.records = RecordSpool()
        self.count = 0

    def add(self, row: tuple, size: int = 0) -> None:
        """`size`: the bytes of the row's large values, if the caller knows them."""
        self.count += 1
        self.records.add(row, size)

    def mark(self) -> tuple[int, int, int]:
        """Where the spool is now: `leave_out` takes back the rows added after it."""
        return self.records.file.tell(), len(self.records._batch), self.count

    def leave_out(self, key: str, since: tuple[int, int, int]) -> None:
        """The rows added since the mark `since`, all with `key` in the key column, are
        not written. Those still in the batch are taken back; once pickled with other
        rows, they are named by their key and skipped at the write."""
        position, batch, count = since
        records = self.records
        if records.file.tell() == position:  # not pickled yet: still in the batch
            records.count -= len(records._batch) - batch
            del records._batch[batch:]
        else:
            self.left_out.add(key)
        self.count = count

    def insert(self) -> None:
        """Write every row into the table (but those left out), in the current
        transaction."""
        if not self.count:
            return
        rows: Iterator[tuple] = iter(self.records)
        if self.left_out:
            rows = (row for row in rows if row[self.key] not in self.left_out)
        insert_rows(self.table, self.columns, rows)

    def close(self) -> None:
        self.records.close()


KEY_CACHE_KIB = 1024  # SQLite's page cache of a KeySpool: what it may hold in memory


class KeySpool:
    """A set of short strings kept on disk, not in memory: a private temporary SQLite
    database with a bounded page cache (KEY_CACHE_KIB). A set of 64-character hashes took
    ~300 bytes a trace in memory (13 MB for an upload of 1 GB, and a dataset of a million
    traces would have taken 300 MB to read before an upload of one trace); here memory is
    the same for ten keys and ten million, and a look-up costs a few microseconds.

    Its file is made where the other spools go (FILE_UPLOAD_TEMP_DIR, where an operator
    puts room for uploads; SQLite's own temporary database would go to TMPDIR) and
    unlinked once SQLite has it open, so it too leaves nothing behind however the process
    ends (but for an instant while it is made)."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="keys-", dir=settings.FILE_UPLOAD_TEMP_DIR)
        os.close(fd)
        try:
            self._db = sqlite3.connect(path, isolation_level=None)
            for pragma in (
                f"cache_size = -{KEY_CACHE_KIB}",
                "journal_mode = OFF",  # a throwaway database: nothing to roll back or recover
                "synchronous = OFF",
            ):
                self._db.execute(f"PRAGMA {pragma}")
            # Written, so open: from here SQLite reads and writes the unlinked file.
            self._db.execute("CREATE TABLE keys (key TEXT PRIMARY KEY) WITHOUT ROWID")
        finally:
            os.unlink(path)
        # One transaction until closed, never committed: no write of a page per key.
        self._db.execute("BEGIN")
        # One cursor for every look-up: sqlite3 keeps a reference to each cursor made,
        # dropped only every 200, and a new one a key costs time too.
        self._cursor = self._db.cursor()
        self.count = 0

    def add(self, key: str) -> None:
        self.count += self._cursor.execute("INSERT OR IGNORE INTO keys VALUES (?)", (key,)).rowcount

    def update(self, keys: Iterable[str]) -> None:
        self.count += self._cursor.executemany(
            "INSERT OR IGNORE INTO keys VALUES (?)", ((key,) for key in keys)
        ).rowcount

    def __contains__(self, key: str) -> bool:
        found = self._cursor.execute("SELECT 1 FROM keys WHERE key = ?", (key,)).fetchone()
        return found is not None

    def chunks(self, size: int) -> Iterator[list[str]]:
        """Every key, `size` at a time (in key order)."""
        cursor = self._db.execute("SELECT key FROM keys")
        while rows := cursor.fetchmany(size):
            yield [key for (key,) in rows]

    def close(self) -> None:
        # The cursor first: an executemany's statement left on it kept the database, and
        # its unlinked file's disk, open until the spool was garbage collected.
        self._cursor.close()
        self._db.close()
