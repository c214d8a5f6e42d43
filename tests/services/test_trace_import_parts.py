"""A large JSON Lines file is read in parts by forked processes at once
(traces/services/imports.py `_read_parts`): the import must store exactly what one
process reading the whole file stores, and report the same duplicates and problems."""

import base64
import io
import json
import os
import sqlite3
import threading

import pytest
from django.db import connection

from tests.sqlite_lock import sqlite_only
from traces import forked
from traces.errors import ImportFailed
from traces.ingest.parts import cut
from traces.models import Block, Image, Trace, TraceImage
from traces.services import imports
from traces.services.imports import trace_import
from traces.spool import StagedRows

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2).decode()


def chat(n: int, *, error: bool = False, image: bool = False, padding: int = 200) -> dict:
    user: object = f"question {n} " + "x" * padding
    if image:
        url = f"data:image/png;base64,{PNG}"
        user = [
            {"type": "text", "text": f"look {n}"},
            {"type": "image_url", "image_url": {"url": url}},
        ]
    call = {"id": f"c{n}", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    tool = {"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n}"}
    if error:
        tool["error"] = True
    return {
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": f"answer {n}", "tool_calls": [call]},
            tool,
        ],
        "metadata": {"task": f"t{n % 7}", "reward": n % 2},
    }


def jsonl(values: list) -> bytes:
    return b"".join((v if isinstance(v, bytes) else json.dumps(v).encode()) + b"\n" for v in values)


def a_file_of_every_case() -> bytes:
    """Traces spread so that every part has some: duplicates of traces in earlier parts
    and in the same part, tool errors, images (one shared across parts), blank lines."""
    def case(n: int) -> dict:
        return chat(n, error=n % 9 == 0, image=n % 13 == 0)

    values: list = [{"metadata": {"benchmark": "parts"}}]
    for n in range(60):
        values.append(case(n))
        if n % 10 == 5:
            values.append(case(n - 5))  # a duplicate of a trace a few lines before
        if n % 17 == 3:
            values.append(b"")  # a blank line
    values.append(case(1))  # a duplicate of the second trace, in the last part
    return jsonl(values)


def stored(dataset_name: str) -> list:
    """Everything the import stored in the dataset, without ids and times."""
    traces = Trace.objects.filter(dataset__name=dataset_name).order_by("index")
    out = []
    for trace in traces:
        blocks = list(Block.objects.filter(trace=trace).order_by("number"))
        number = {b.id: b.number for b in blocks}
        images = sorted(
            TraceImage.objects.filter(trace=trace).values_list("image__sha256", flat=True)
        )
        out.append((
            trace.index, trace.name, trace.metadata, trace.extra, trace.reward,
            trace.content_hash, trace.block_count, trace.block_counts, trace.tool_errors,
            trace.task, trace.trial, images,
            [(b.number, b.sub_type, b.payload, b.metadata, b.raw, number.get(b.parent_id),
              b.turn, b.act, b.step, b.is_error, b.call_id) for b in blocks],
        ))  # fmt: skip
    return out


def result_of(result) -> dict:
    return {
        "traces": result.traces, "blocks": result.blocks, "images": result.images,
        "skipped": result.skipped, "files": result.files, "formats": result.formats,
        "metadata_kept": result.metadata_kept,
    }  # fmt: skip


@pytest.fixture
def in_parts(monkeypatch, settings):
    """Files of a few kilobytes are cut into parts, three at most."""
    settings.IMPORT_WORKERS = 3
    monkeypatch.setattr(imports, "PART_MIN_BYTES", 2048)


def import_as(org, name: str, data: bytes, stream=None, **kwargs):
    return trace_import(
        organization=org, dataset_name=name,
        files=[("runs.jsonl", stream or io.BytesIO(data))], **kwargs,
    )  # fmt: skip


def test_the_test_file_is_cut_in_three_parts(in_parts):
    data = a_file_of_every_case()
    parts = cut(io.BytesIO(data), size=len(data), parts=3)
    assert len(parts) == 3
    assert parts[0].start == 0 and parts[-1].end == len(data)
    assert all(data[p.start - 1 : p.start] == b"\n" for p in parts[1:])


def test_parts_store_what_one_process_stores(org, in_parts, settings):
    data = a_file_of_every_case()
    in_parts_result = import_as(org, "parts", data)
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)
    assert in_parts_result.traces == 60 and len(in_parts_result.skipped) == 7
    assert Image.objects.count() == 1
    # No block of a trace left out is written.
    assert Block.objects.count() == in_parts_result.blocks + whole_result.blocks
    assert in_parts_result.part_peak_growth > 0  # measured in a child: parts were read


def test_parts_skip_what_the_dataset_has(org, in_parts, settings):
    data = a_file_of_every_case()
    settings.IMPORT_WORKERS = 1
    import_as(org, "parts", jsonl([chat(50), chat(2)]))
    import_as(org, "whole", jsonl([chat(50), chat(2)]))
    settings.IMPORT_WORKERS = 3
    in_parts_result = import_as(org, "parts", data)
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)
    # chat(2), and chat(50) twice: the second is a duplicate of the dataset's too.
    reasons = [s["reason"] for s in in_parts_result.skipped]
    assert reasons.count("in_dataset") == 3 and reasons.count("in_upload") == 6


def test_parts_keep_duplicates_when_they_are_allowed(org, in_parts, settings):
    data = a_file_of_every_case()
    in_parts_result = import_as(org, "parts", data, allow_duplicates=True)
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data, allow_duplicates=True)
    assert stored("parts") == stored("whole")
    assert in_parts_result.traces == whole_result.traces == 67


def test_a_real_file_is_read_in_parts_too(org, in_parts, settings, tmp_path):
    data = a_file_of_every_case()
    path = tmp_path / "runs.jsonl"
    path.write_bytes(data)
    with open(path, "rb") as stream:
        in_parts_result = import_as(org, "parts", data, stream=stream)
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)


def problems_of(org, data: bytes) -> list:
    with pytest.raises(ImportFailed) as caught:
        import_as(org, "broken", data)
    return caught.value.problems


def test_problems_in_later_parts_name_their_line_and_trace_in_the_whole_file(
    org, in_parts, settings
):
    lines = a_file_of_every_case().split(b"\n")
    lines[40] = b'{"messages": [broken'
    lines[70] = json.dumps({"messages": "not a list"}).encode()
    data = b"\n".join(lines)
    found = problems_of(org, data)
    settings.IMPORT_WORKERS = 1
    assert found == problems_of(org, data)
    assert [p["line"] for p in found] == [41, 71]
    assert not Trace.objects.filter(dataset__name="broken").exists()


def test_a_part_whose_reader_fails_is_read_again_by_the_importer(org, in_parts, monkeypatch):
    def fails_in_the_child():
        raise RuntimeError("a reader that fails")

    monkeypatch.setattr(forked, "PeakGrowth", fails_in_the_child)  # made in the child only
    data = a_file_of_every_case()
    result = import_as(org, "parts", data)
    assert result.traces == 60
    monkeypatch.undo()  # a file this small is read whole again
    import_as(org, "whole", data)
    assert stored("parts") == stored("whole")


def test_a_child_that_dies_is_reported_as_failed():
    child = forked.Forked(lambda: os._exit(3))
    with pytest.raises(forked.ChildFailed, match="without a report"):
        child.result()


def test_a_child_gives_back_what_it_returned_and_its_error():
    assert forked.Forked(lambda: {"a": [1, 2]}).result() == {"a": [1, 2]}
    with pytest.raises(forked.ChildFailed, match="ZeroDivisionError"):
        forked.Forked(lambda: 1 / 0).result()


def test_progress_goes_through_the_whole_file_as_the_first_part_is_read(org, in_parts):
    data = a_file_of_every_case()
    first = cut(io.BytesIO(data), size=len(data), parts=3)[0]
    steps: list[int] = []
    import_as(org, "parts", data, progress=steps.append)
    assert sum(steps) == len(data)
    # Before the other parts are taken, it had shown more than the first part's bytes.
    assert len(steps) > 2 and sum(steps[:-1]) > 2 * first.end


def test_a_file_read_in_parts_has_its_traces_ids_in_file_order(org, in_parts):
    # The API lists traces by id: in parts as in one process, that is the file's order.
    import_as(org, "parts", a_file_of_every_case())
    by_id = Trace.objects.filter(dataset__name="parts").order_by("id")
    assert list(by_id.values_list("index", flat=True)) == list(range(60))
    # Later ids still sort after them.
    later = import_as(org, "later", jsonl([chat(1000)]))
    newest = Trace.objects.order_by("-id").first()
    assert newest.dataset_id == later.dataset.pk



# Outside a transaction, SQLite's part readers write their rows into throwaway databases
# that the import's connection attached (traces/spool.py StagedRows); the tests above run
# inside the test's transaction, where the rows are pickled (RowSpool).


@pytest.fixture
def staged_inserts(monkeypatch):
    """(rows, keys left out) of each staged spool that wrote its rows."""
    made = []
    insert = StagedRows.insert

    def counted(self):
        made.append((self.count, len(self.left_out)))
        insert(self)

    monkeypatch.setattr(StagedRows, "insert", counted)
    return made


@pytest.fixture
def temp_dir(tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    return tmp_path


def attached() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA database_list")
        return [row[1] for row in cursor.fetchall() if row[1] not in ("main", "temp")]


@sqlite_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allow_duplicates", [False, True])
def test_staged_parts_store_what_one_process_stores(
    org, in_parts, settings, staged_inserts, allow_duplicates, temp_dir, readers_may_stage
):
    data = a_file_of_every_case()
    in_parts_result = import_as(org, "parts", data, allow_duplicates=allow_duplicates)
    assert len(staged_inserts) == 3  # the importer's part and the two readers'
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data, allow_duplicates=allow_duplicates)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)
    assert in_parts_result.traces == (67 if allow_duplicates else 60)
    assert Block.objects.count() == in_parts_result.blocks + whole_result.blocks
    assert list(temp_dir.iterdir()) == [] and attached() == []


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_staged_parts_skip_what_the_dataset_has(
    org, in_parts, settings, staged_inserts, readers_may_stage
):
    data = a_file_of_every_case()
    settings.IMPORT_WORKERS = 1
    import_as(org, "parts", jsonl([chat(50), chat(2), chat(30)]))
    import_as(org, "whole", jsonl([chat(50), chat(2), chat(30)]))
    settings.IMPORT_WORKERS = 3
    staged_inserts.clear()
    in_parts_result = import_as(org, "parts", data)
    # The readers wrote rows of traces the dataset has: left out by their keys.
    assert any(left_out for _, left_out in staged_inserts[1:])
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)
    assert Block.objects.count() == sum(
        t.block_count for t in Trace.objects.all()
    )  # no block of a trace left out


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_staged_part_whose_reader_fails_is_read_again_and_leaves_nothing(
    org, in_parts, monkeypatch, temp_dir
):
    def fails_in_the_child():
        raise RuntimeError("a reader that fails")

    monkeypatch.setattr(forked, "PeakGrowth", fails_in_the_child)  # made in the child only
    data = a_file_of_every_case()
    assert import_as(org, "parts", data).traces == 60
    monkeypatch.undo()
    import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert list(temp_dir.iterdir()) == [] and attached() == []


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_readers_forked_beside_another_thread_pickle_their_rows(
    org, in_parts, settings, staged_inserts, temp_dir
):
    """A threaded server's other thread may be inside SQLite (its allocator's mutex held)
    at the fork: a reader that then called SQLite waited for that mutex for ever, and its
    part was read again here after two minutes (attacker and researcher review). Beside
    another thread, the readers pickle their rows; only the importer's own are staged."""
    stop = threading.Event()

    def other_request() -> None:
        while not stop.is_set():
            db = sqlite3.connect(":memory:")
            db.execute("SELECT 1")
            db.close()

    other = threading.Thread(target=other_request)
    other.start()
    try:
        assert not forked.alone()
        data = a_file_of_every_case()
        in_parts_result = import_as(org, "parts", data)
    finally:
        stop.set()
        other.join()
    assert len(staged_inserts) == 1  # the importer's own part
    settings.IMPORT_WORKERS = 1
    whole_result = import_as(org, "whole", data)
    assert stored("parts") == stored("whole")
    assert result_of(in_parts_result) == result_of(whole_result)
    assert list(temp_dir.iterdir()) == [] and attached() == []


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_part_read_here_after_a_failed_fork_has_no_name_on_disk_meanwhile(
    org, in_parts, monkeypatch, temp_dir, readers_may_stage
):
    """A part whose reader could not be forked is read here once the first part is: its
    staged database is opened (and unlinked) at once, not left named in the temp dir all
    that time, where a process killed meanwhile would leave it (attacker review)."""
    named_while_reading = []
    read_items = imports._read_items

    def watched(*args, **kwargs):
        named_while_reading.extend(path.name for path in temp_dir.iterdir())
        return read_items(*args, **kwargs)

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(imports, "_read_items", watched)
    monkeypatch.setattr(os, "fork", no_fork)
    result = import_as(org, "nofork", a_file_of_every_case())
    assert result.traces == 60
    assert named_while_reading == []
    assert list(temp_dir.iterdir()) == [] and attached() == []
