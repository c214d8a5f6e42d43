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
- `StagedRows`: on SQLite, `RowSpool`'s rows in a throwaway SQLite database that the
  import's own connection has attached: the write is one INSERT ... SELECT (`row_spool`
  says which of the two a spool is).
- `KeySpool`: a set of short keys (a trace's content hash), for the questions an import
  asks once a trace ("has the dataset, or this upload, this trace already?").
"""

import itertools
import logging
import os
import pickle
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence

import orjson
from django.conf import settings
from django.db import DatabaseError, connection

from traces import forked
from traces.bulk import insert_rows

logger = logging.getLogger(__name__)

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

    def open_here(self) -> None:
        """Nothing to do: its file is shared with a forked reader as it is."""

    def flush(self) -> None:
        self.records.flush()

    def state(self) -> tuple[int, int]:
        """What a forked reader of a part (traces/services/imports.py) hands back beside
        the rows, which it flushes to the file: the parent's copy takes it (`restore`)."""
        self.records.flush()
        return self.count, self.records.count

    def restore(self, state: tuple[int, int]) -> None:
        self.count, self.records.count = state

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


# The schema names a StagedRows database is attached under (unique in the process).
_STAGES = itertools.count()


class StagedRows:
    """SQLite only: the rows of one table in a throwaway SQLite database (an unlinked file
    of the upload temp dir, one table without index or constraint), which the process
    that reads them writes as it reads (a forked reader of a part its own, when forked
    from a process without another thread: `row_spool`), and which
    the import's connection has attached since the spool was made: the write is one
    INSERT ... SELECT, in which SQLite copies each row without Python binding each of
    its values. A 100 MB import: 0.55 s against 1.1 s for `executemany` of pickled
    rows; the readers' writes cost them 0.28 s a half instead of 0.1 s, on two cores.

    Made outside any transaction (SQLite attaches only there; `row_spool` falls back to
    a RowSpool inside one), by the parent of the readers: its file is made, attached,
    then opened by the process that writes it (`open_here`: at once for a spool of the
    importer's own, by the forked reader for a part's), which unlinks it. Its name is
    on disk only until then, and nothing is left however the processes end after it;
    the attached database lives on, nameless, until `close` detaches it."""

    def __init__(
        self, table: str, columns: Sequence[str], key: int = 1, *, for_child: bool = False
    ) -> None:
        """`for_child`: a forked reader opens it (`open_here`), not this process."""
        self.table = table
        self.columns = tuple(columns)
        self.key = key
        self.left_out: set[str] = set()
        self.count = 0  # the rows to write
        self.stored = 0  # the rows in the database and in the batch
        self._batch: list[tuple] = []
        self._db: sqlite3.Connection | None = None
        self._db_pid = 0
        self.schema = f"traces_stage_{next(_STAGES)}"
        fd, self.path = tempfile.mkstemp(prefix="stage-", dir=settings.FILE_UPLOAD_TEMP_DIR)
        os.close(fd)
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"ATTACH DATABASE %s AS {self.schema}", [self.path])
                # No journal here either: a transaction that begins locks every database
                # attached, and with more than one of them journaled its commit wrote a
                # super-journal beside the application's database (left there if the
                # process died in it) and journals beside these.
                cursor.execute(f"PRAGMA {self.schema}.journal_mode = OFF")
        except BaseException:
            os.unlink(self.path)
            raise
        self._attached_by = os.getpid()  # the process whose connection attached it
        if not for_child:
            try:
                self.open_here()
            except BaseException:
                self.close()
                raise

    def open_here(self) -> None:
        """Open the database in this process to write rows into it, and unlink its file
        (once: in the process that writes it, which a forked reader is)."""
        if self._db is not None and self._db_pid == os.getpid():
            return
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        for pragma in ("journal_mode = OFF", "synchronous = OFF"):  # a throwaway database
            db.execute(f"PRAGMA {pragma}")
        columns = ", ".join(f"c{n}" for n in range(len(self.columns)))
        db.execute(f"CREATE TABLE IF NOT EXISTS rows ({columns})")
        db.execute("BEGIN")  # one transaction until flushed: no write of a page a batch
        self._db, self._db_pid = db, os.getpid()

    def add(self, row: tuple, size: int = 0) -> None:
        self._batch.append(row)
        self.count += 1
        self.stored += 1
        if len(self._batch) >= BATCH_ROWS:
            self._write_batch()

    def _write_batch(self) -> None:
        if self._batch:
            if self._db is None:
                raise RuntimeError("StagedRows.open_here was not called in this process")
            marks = ", ".join(["?"] * len(self.columns))
            self._db.executemany(f"INSERT INTO rows VALUES ({marks})", self._batch)
            self._batch = []

    def mark(self) -> tuple[int, int]:
        """Where the spool is now: `leave_out` takes back the rows added after it."""
        return self.stored, self.count

    def leave_out(self, key: str, since: tuple[int, int]) -> None:
        """The rows added since the mark `since` (all with `key`) are not written: they
        are the last ones, taken back from the batch and, once written, from the
        database (by rowid, which counts the rows in the order they were added)."""
        stored, count = since
        written = self.stored - len(self._batch)
        if stored >= written:
            del self._batch[stored - written :]
        else:
            self._batch = []
            self._db.execute("DELETE FROM rows WHERE rowid > ?", (stored,))
        self.stored, self.count = stored, count

    def flush(self) -> None:
        """Every row into the database, committed, and this process's connection to it
        closed: the attached database reads them from there."""
        if self._db is not None and self._db_pid == os.getpid():
            self._write_batch()
            self._db.execute("COMMIT")
            self._db.close()
            self._db = None

    def state(self) -> tuple[int, int]:
        """See RowSpool.state."""
        self.flush()
        return self.count, self.stored

    def restore(self, state: tuple[int, int]) -> None:
        self.count, self.stored = state

    def insert(self) -> None:
        """Write every row into the table (but those of keys left out), in the current
        transaction, in the order they were added. `flush` them before it began: a
        transaction that begins takes a lock on every database attached, and reads
        their tables as they were then."""
        if self._db is not None:
            raise RuntimeError("StagedRows.insert: flush the rows before the transaction")
        if not self.count:
            return
        qn = connection.ops.quote_name
        columns = ", ".join(qn(c) for c in self.columns)
        values = ", ".join(f"c{n}" for n in range(len(self.columns)))
        sql = (
            f"INSERT INTO main.{qn(self.table)} ({columns}) "
            f"SELECT {values} FROM {self.schema}.rows"
        )
        params: list[str] = []
        if self.left_out:
            # One parameter however many: a JSON array SQLite reads into a lookup once.
            sql += f" WHERE c{self.key} NOT IN (SELECT value FROM json_each(%s))"
            params.append(orjson.dumps(sorted(self.left_out)).decode())
        with connection.cursor() as cursor:
            cursor.execute(sql + " ORDER BY rowid", params)

    def close(self) -> None:
        """Let go of the database (this process's connection, its file if no process
        opened it, and, outside a transaction, its attachment); in any process, once or
        more."""
        if self._db is not None and self._db_pid == os.getpid():
            self._db.close()
        self._db = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        # Only the process that attached it: a forked reader never touches the
        # connection it inherited.
        if self._attached_by == os.getpid() and not connection.in_atomic_block:
            self._attached_by = 0
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"DETACH DATABASE {self.schema}")
            except DatabaseError as exc:  # the connection closed meanwhile: nothing held
                logger.warning("could not detach %s: %s", self.schema, exc)


# How many StagedRows one connection may have attached at once: SQLite's limit is 10.
STAGES_MAX = 8


def row_spool(
    table: str, columns: Sequence[str], key: int = 1, *, for_child: bool = False
) -> "RowSpool | StagedRows":
    """A StagedRows where it can be (SQLite, outside a transaction, an attachment free,
    and, for a forked reader, a process without another thread: `forked.alone`), else a
    RowSpool."""
    if for_child and not forked.alone():
        return RowSpool(table, columns, key)  # the child must not call SQLite
    if connection.vendor == "sqlite" and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA database_list")
            attached = sum(1 for row in cursor.fetchall() if row[1].startswith("traces_stage_"))
        if attached < STAGES_MAX:
            return StagedRows(table, columns, key, for_child=for_child)
    return RowSpool(table, columns, key)


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
