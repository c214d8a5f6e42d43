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
"""

import pickle
import tempfile
from collections.abc import Iterator, Sequence

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

    def __iter__(self) -> Iterator[tuple]:
        self._dump()
        self.file.flush()
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
