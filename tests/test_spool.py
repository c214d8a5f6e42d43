"""traces/spool.py, and the import's spool on every way out: no file left in any
directory, no descriptor left open."""

import io
import itertools
import os

import pytest
from django.db import connection, transaction

from tests.conftest import as_file
from tests.killed import killed_midway
from tests.sqlite_lock import busy_timeout, sqlite_only, write_lock_held_elsewhere
from traces import forked
from traces.bulk import TRACE_COLUMNS, adapt_datetime
from traces.errors import ImportFailed
from traces.models import Block, Trace
from traces.services.imports import trace_import
from traces.spool import (
    BATCH_BYTES,
    BATCH_ROWS,
    STAGES_MAX,
    KeySpool,
    RecordSpool,
    RowSpool,
    StagedRows,
    row_spool,
)

LINES = b"".join(b'[{"role": "user", "content": "trace %d"}]\n' % n for n in range(30))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_files() -> list[str]:
    """What this process's descriptors point at (a deleted file ends " (deleted)")."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the descriptor listdir itself held
            pass
    return found


def warm_up(org) -> None:
    """One import first: SQLite keeps a temporary file of its own (nameless, one per
    connection) open after its first large transaction."""
    trace_import(organization=org, dataset_name="warm-up", files=[as_file(LINES, "w.jsonl")])


@pytest.fixture
def temp_dir(tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    return tmp_path


def test_records_come_back_in_order_across_batches(temp_dir):
    spool = RecordSpool()
    records = [(n, f"text {n}", b"\x00" * n, None) for n in range(BATCH_ROWS * 2 + 7)]
    for record in records:
        spool.add(record)
    assert list(spool) == records
    assert list(temp_dir.iterdir()) == []  # no name on disk, ever
    spool.close()


def test_a_large_record_goes_to_disk_at_once(temp_dir):
    """Batches are cut by size too: 500 images of 20 MB are never held together."""
    spool = RecordSpool()
    spool.add(("small",), 10)
    assert spool.file.tell() == 0  # batched in memory
    spool.add(("image", b"\x89PNG" * 1000), BATCH_BYTES)
    assert spool.file.tell() > 4000  # written with the batch it ended
    assert list(spool) == [("small",), ("image", b"\x89PNG" * 1000)]
    spool.close()


def test_keys_live_in_an_unlinked_file_of_the_upload_temp_dir(temp_dir):
    """KeySpool's SQLite file goes where the other spools go (SQLite's own temporary
    database went to TMPDIR), without a name once open."""
    keys = KeySpool()
    try:
        keys.update(f"{n:064x}" for n in range(5000))
        assert f"{4999:064x}" in keys and "nope" not in keys and keys.count == 5000
        assert list(temp_dir.iterdir()) == []
        held = [t for t in open_files() if t.startswith(f"{temp_dir}/keys-")]
        assert len(held) == 1 and held[0].endswith(" (deleted)"), open_files()
    finally:
        keys.close()


def test_close_lets_go_of_the_keys_file_after_an_update(temp_dir):
    """close() ends the spool: its unlinked file, and the disk it holds, are let go then,
    not when the object is garbage collected. (Attacker review: after `update()`, whose
    executemany statement is left unreset on the spool's cursor, sqlite3's close() leaves
    the database open until the cursor is freed.)"""
    keys = KeySpool()
    keys.update(f"{n:064x}" for n in range(5000))
    keys.close()
    held = [t for t in open_files() if t.startswith(f"{temp_dir}/keys-")]
    assert held == []


def test_rows_left_out_since_a_mark_are_not_written(org, temp_dir):
    """A duplicate trace's rows, spooled before it was known to be one, are taken back
    (or, once pickled with other rows, skipped by their key at the write); the
    rows before and after them are written, values with tabs, line breaks and
    backslashes too."""
    from django.utils import timezone

    from traces.models import Dataset

    dataset = Dataset.objects.create(organization=org, name="d")
    spool = RowSpool(Trace._meta.db_table, TRACE_COLUMNS, key=4)  # key: the name here
    now = adapt_datetime(timezone.now())
    added = 0

    def add(name: str) -> None:
        nonlocal added
        row = (f"tr_{added}", org.pk, dataset.pk, added, name, "{}", "{}",
               None, 0, now, now)  # fmt: skip
        spool.add(row)
        added += 1

    for _ in range(BATCH_ROWS - 1):
        add("kept\tone\nline\\")
    since = spool.mark()
    add("across a batch")
    add("across a batch")  # the batch is pickled with the first of these
    spool.leave_out("across a batch", since)
    since = spool.mark()
    add("in the batch")
    spool.leave_out("in the batch", since)
    add("last")
    assert spool.count == BATCH_ROWS
    spool.insert()
    spool.close()
    names = list(Trace.objects.order_by("index").values_list("name", flat=True))
    assert names == ["kept\tone\nline\\"] * (BATCH_ROWS - 1) + ["last"]


def test_a_successful_import_leaves_nothing(org, temp_dir):
    warm_up(org)
    before = open_descriptors()
    trace_import(organization=org, dataset_name="runs", files=[as_file(LINES, "a.jsonl")])
    assert Trace.objects.filter(dataset__name="runs").count() == 30
    assert open_descriptors() == before and list(temp_dir.iterdir()) == []


def test_a_failed_import_leaves_nothing(org, temp_dir):
    warm_up(org)
    before = open_descriptors()
    bad = LINES + b'[{"role": "tool", "tool_call_id": "nope", "content": "x"}]\n'
    with pytest.raises(ImportFailed):
        trace_import(organization=org, dataset_name="runs", files=[as_file(bad, "a.jsonl")])
    assert open_descriptors() == before and list(temp_dir.iterdir()) == []
    assert not Block.objects.filter(trace__dataset__name="runs").exists()


class BreaksMidway(io.BytesIO):
    """A file whose disk fails after its first lines (an exception mid import)."""

    def readline(self, *args):
        if self.tell() > len(LINES) // 2:
            raise OSError("I/O error")
        return super().readline(*args)


def test_an_exception_mid_read_leaves_nothing(org, temp_dir):
    before = open_descriptors()
    with pytest.raises(OSError):
        trace_import(
            organization=org, dataset_name="runs", files=[("a.jsonl", BreaksMidway(LINES))]
        )
    assert open_descriptors() == before and list(temp_dir.iterdir()) == []
    assert not Trace.objects.exists()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_an_exception_in_the_write_phase_leaves_nothing(org, temp_dir):
    from django.db import OperationalError

    warm_up(org)
    busy_timeout(100)
    with write_lock_held_elsewhere():
        pass  # SQLite keeps a closed connection's descriptor while this one has the file
    before = open_descriptors()
    with write_lock_held_elsewhere(), pytest.raises(OperationalError):
        trace_import(organization=org, dataset_name="runs", files=[as_file(LINES, "a.jsonl")])
    assert open_descriptors() == before and list(temp_dir.iterdir()) == []
    assert not Trace.objects.filter(dataset__name="runs").exists()


@pytest.mark.django_db(transaction=True)
def test_a_killed_import_leaves_nothing(org, temp_dir):
    def work(stall):
        # progress() is called once a trace is spooled: the worker dies mid import.
        files = [as_file(LINES)]
        trace_import(organization=org, dataset_name="runs", files=files, progress=lambda _: stall())

    killed_midway(work)
    assert list(temp_dir.iterdir()) == []
    assert not Trace.objects.exists()


def attached() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA database_list")
        return [row[1] for row in cursor.fetchall() if row[1] not in ("main", "temp")]


def trace_rows(org, count: int, name: str = "kept"):
    from django.utils import timezone

    from traces.models import Dataset

    dataset, _ = Dataset.objects.get_or_create(organization=org, name="d")
    now = adapt_datetime(timezone.now())
    for n in range(count):
        index = next(_indexes)  # the order rows were made in
        yield (f"tr_{name}_{n}", org.pk, dataset.pk, index, name, "{}", "{}", None, 0, now, now)


_indexes = itertools.count()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_staged_rows_left_out_since_a_mark_are_not_written(org, temp_dir):
    """As RowSpool's: rows taken back from the batch, or once written to the staged
    database, deleted from it; the rows after them still come in the order added."""
    spool = row_spool(Trace._meta.db_table, TRACE_COLUMNS, key=4)
    assert isinstance(spool, StagedRows)
    kept = list(trace_rows(org, BATCH_ROWS - 1, "kept\tone\nline\\"))
    for row in kept:
        spool.add(row)
    since = spool.mark()
    for row in trace_rows(org, 2, "across a batch"):  # written with the first of these
        spool.add(row)
    spool.leave_out("across a batch", since)
    since = spool.mark()
    spool.add(next(trace_rows(org, 1, "in the batch")))
    spool.leave_out("in the batch", since)
    spool.add(next(trace_rows(org, 1, "last")))
    assert spool.count == BATCH_ROWS
    spool.flush()  # as an import does before its transaction
    with transaction.atomic():
        spool.insert()
    spool.close()
    names = list(Trace.objects.order_by("index").values_list("name", flat=True))
    assert names == ["kept\tone\nline\\"] * (BATCH_ROWS - 1) + ["last"]
    assert attached() == []


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_staged_rows_skip_the_keys_left_out_by_another_process(org, temp_dir, readers_may_stage):
    """A part's reader writes its rows; the importer then names traces it leaves out."""
    spool = row_spool(Trace._meta.db_table, TRACE_COLUMNS, key=0, for_child=True)
    rows = list(trace_rows(org, 1200))
    def read() -> tuple[int, int]:
        spool.open_here()
        for row in rows:
            spool.add(row)
        return spool.state()

    spool.restore(forked.Forked(read).result())
    assert spool.count == len(rows)
    spool.left_out.update(row[0] for row in rows[::3])
    spool.count -= 400
    with transaction.atomic():
        spool.insert()
    spool.close()
    assert sorted(Trace.objects.values_list("id", flat=True)) == sorted(
        row[0] for n, row in enumerate(rows) if n % 3
    )


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_staged_database_has_no_name_once_open_and_is_let_go_at_close(temp_dir):
    spool = row_spool(Block._meta.db_table, ("id",))
    assert isinstance(spool, StagedRows) and attached() == [spool.schema]
    assert list(temp_dir.iterdir()) == []
    with connection.cursor() as cursor:
        # Else the commit of an import with two of them wrote a super-journal beside the
        # application's database (attacker review).
        cursor.execute(f"PRAGMA {spool.schema}.journal_mode")
        assert cursor.fetchone()[0] == "off"
    held = [t for t in open_files() if t.startswith(f"{temp_dir}/stage-")]
    assert held and all(t.endswith(" (deleted)") for t in held), open_files()
    spool.close()
    spool.close()  # once or more
    assert attached() == [] and not [t for t in open_files() if "/stage-" in t]


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_staged_database_no_reader_opened_is_unlinked_at_close(temp_dir, readers_may_stage):
    spool = row_spool(Block._meta.db_table, ("id",), for_child=True)
    assert len(list(temp_dir.iterdir())) == 1  # until the reader opens it
    spool.close()
    assert list(temp_dir.iterdir()) == [] and attached() == []


@pytest.mark.django_db(transaction=True)
def test_rows_are_staged_only_on_sqlite_outside_a_transaction_with_an_attachment_free(
    temp_dir,
):
    outside = row_spool(Block._meta.db_table, ("id",))
    with transaction.atomic():
        inside = row_spool(Block._meta.db_table, ("id",))
    assert isinstance(inside, RowSpool)
    assert isinstance(outside, StagedRows) == (connection.vendor == "sqlite")
    outside.close()
    inside.close()
    if connection.vendor != "sqlite":
        return
    spools = [row_spool(Block._meta.db_table, ("id",)) for _ in range(STAGES_MAX + 2)]
    assert [isinstance(s, StagedRows) for s in spools] == [True] * STAGES_MAX + [False] * 2
    for spool in spools:
        spool.close()
    assert attached() == []
