"""Crafted files, failures and races against the forked part readers
(traces/services/imports.py `_read_parts`), from an attacker's review: every file is read
in parts and whole (IMPORT_WORKERS=1), and both must store and report the same."""

import io
import json
import os
import sys
import threading
import time

import pytest

from tests.services.test_trace_import_parts import chat, jsonl, result_of, stored
from traces import ids
from traces.errors import ImportFailed
from traces.ingest.parts import cut
from traces.services import imports
from traces.services.imports import trace_import


@pytest.fixture
def in_parts(monkeypatch, settings):
    settings.IMPORT_WORKERS = 3
    monkeypatch.setattr(imports, "PART_MIN_BYTES", 2048)


def run(org, name, data, files=None, **kw):
    files = files or [("runs.jsonl", io.BytesIO(data))]
    try:
        return (
            "ok",
            result_of(trace_import(organization=org, dataset_name=name, files=files, **kw)),
        )
    except ImportFailed as exc:
        return ("failed", exc.problems)


def compare(org, settings, data, tag, files_factory=None):
    settings.IMPORT_WORKERS = 3
    a = run(org, tag + "-p", data, files_factory() if files_factory else None)
    settings.IMPORT_WORKERS = 1
    b = run(org, tag + "-w", data, files_factory() if files_factory else None)
    return a, b


def assert_same(org, settings, data, tag="x"):
    parts = cut(io.BytesIO(data), size=len(data), parts=3)
    assert len(parts) > 1
    a, b = compare(org, settings, data, tag)
    assert a == b
    assert stored(tag + "-p") == stored(tag + "-w")
    return a


def many(n=60, **kw):
    return [chat(i, error=i % 9 == 0, image=i % 13 == 0, **kw) for i in range(n)]


def test_crlf_no_trailing_newline_blank_lines(org, in_parts, settings):
    lines = [json.dumps(v).encode() for v in many()]
    data = (
        b"\r\n".join(lines[:20])
        + b"\r\n   \r\n\t\r\n"
        + b"\r\n".join(lines[20:] + [json.dumps(chat(3)).encode()])
    )
    assert_same(org, settings, data, "crlf")


def test_metadata_line_first_and_later(org, in_parts, settings):
    vals = [{"metadata": {"bench": "x"}}] + many()
    vals.insert(45, {"metadata": {"bench": "late"}})
    kind, problems = assert_same(org, settings, jsonl(vals), "meta")
    assert kind == "failed"


def test_blank_first_lines_then_metadata(org, in_parts, settings):
    data = b"\n\n" + jsonl([{"metadata": {"a": 1}}] + many())
    assert_same(org, settings, data, "blankmeta")


def test_invalid_utf8_in_later_part(org, in_parts, settings):
    lines = jsonl(many()).split(b"\n")
    lines[50] = lines[50].replace(b"answer", b"ans\xff\xfewer", 1)
    kind, _ = assert_same(org, settings, b"\n".join(lines), "utf8")
    assert kind == "failed"


def test_too_deep_in_later_part(org, in_parts, settings):
    lines = jsonl(many()).split(b"\n")
    deep = {
        "messages": [{"role": "user", "content": "x"}],
        "metadata": {"d": json.loads("[" * 300 + "]" * 300)},
    }
    lines[50] = json.dumps(deep).encode()
    kind, _ = assert_same(org, settings, b"\n".join(lines), "deep")
    assert kind == "failed"


def test_over_1000_problems_spread_across_parts(org, in_parts, settings):
    bad = [b'{"messages": "no"}'] * 700
    data = jsonl(many(20)) + b"\n".join(bad) + b"\n" + jsonl(many(20)) + b"\n".join(bad) + b"\n"
    kind, problems = assert_same(org, settings, data, "cap")
    assert kind == "failed" and len(problems) == 1001


def long_chat(n, size=(1 << 20) + 1000):
    return {"messages": [{"role": "user", "content": f"q{n} " + "y" * 2000}] * (size // 2000)}


def test_long_lines_at_boundaries(org, in_parts, settings):
    vals = many(10) + [long_chat(1)] + many(10) + [long_chat(2), long_chat(1)] + many(5)
    data = jsonl(vals)[:-1]  # no trailing newline, last line long? no: short
    assert_same(org, settings, data, "long")


@pytest.mark.slow
def test_long_last_line_without_newline(org, in_parts, settings):
    data = jsonl(many(1200, padding=2000)) + json.dumps(long_chat(3)).encode()
    assert_same(org, settings, data, "longlast")


def test_long_line_invalid_utf8_then_problem_in_later_part(org, in_parts, settings):
    bad_long = json.dumps(long_chat(4)).encode().replace(b"yyyy", b"y\xff\xfey", 1)
    vals = (
        many(5) + [bad_long] + many(40) + [b'{"messages": "no"}'] + many(40) + [b'{"messages": 1}']
    )
    kind, problems = assert_same(org, settings, jsonl(vals), "longutf8")
    assert kind == "failed"


def test_very_deep_long_line_then_problems_in_later_parts(org, in_parts, settings):
    deep = b"[" * 3000 + b" " * (1 << 20) + b"]" * 3000
    vals = (
        many(5)
        + [deep]
        + many(400, padding=3000)
        + [b'{"messages": "no"}']
        + many(400, padding=3000)
        + [b'{"messages": 1}']
    )
    a, b = compare(org, settings, jsonl(vals), "deeplong")
    assert a == b


@pytest.mark.slow
def test_fork_while_another_thread_makes_ids_does_not_hang_the_import(
    org, in_parts, settings, monkeypatch
):
    """A threaded server (runserver, gunicorn --threads): another request makes ids (here
    in a loop, as another import does) while this import forks its readers. A child that
    inherited traces.ids._lock held by a thread it does not have would wait for ever on
    its first id. A reader that has not ended 30 s after its fork is taken as hung (and
    killed): its part is 30 KB. The loop's thread would make each of the importer's
    SQLite steps wait for the GIL the whole switch interval (5 ms: an import took up to
    100 s), so the interval is short here."""
    from traces import forked

    children: list[tuple[int, float]] = []
    real_init = forked.Forked.__init__

    def recording_init(self, work):
        real_init(self, work)
        children.append((self.pid, time.monotonic()))

    monkeypatch.setattr(forked.Forked, "__init__", recording_init)
    stop = threading.Event()

    def other_request():
        while not stop.is_set():
            ids.block_id()

    hung = []

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # Z: ended
        except OSError:
            return False  # reaped

    def watchdog():
        while not stop.wait(1):
            for pid, forked_at in list(children):
                if time.monotonic() - forked_at > 30 and running(pid):
                    hung.append(pid)
                    os.kill(pid, 9)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    other = threading.Thread(target=other_request, daemon=True)
    dog = threading.Thread(target=watchdog, daemon=True)
    other.start()
    dog.start()
    try:
        for n in range(5):
            run(org, f"busy{n}", jsonl(many(300)))
    finally:
        stop.set()
        other.join()
        dog.join()
        sys.setswitchinterval(switch)
    assert len(children) >= 10
    assert not hung, f"{len(hung)} of {len(children)} readers hung: waiting on ids._lock?"


def test_ids_made_in_parent_and_children_never_collide(org, in_parts, settings, monkeypatch):
    """traces.ids counts up within a millisecond (or while the clock stands still or
    stepped back) from state the child inherits at the fork: the parent (reading part 0)
    and a child (reading part 1) that make ids in that millisecond make the same ids.
    The clock is held still here to make the millisecond wide; one process alone never
    makes an id twice under the same clock (IMPORT_WORKERS=1 passes)."""
    import types

    frozen = time.time_ns()
    monkeypatch.setattr(ids, "time", types.SimpleNamespace(time_ns=lambda: frozen))
    ids.block_id()  # the state the children inherit: this millisecond, counting up
    data = jsonl(many(300))
    trace_import(organization=org, dataset_name="ids", files=[("a.jsonl", io.BytesIO(data))])


def open_fds() -> set:
    return set(os.listdir("/proc/self/fd"))


def test_fds_are_not_leaked_by_imports_ok_or_failed(org, in_parts, settings, tmp_path):
    data = jsonl(many(300))
    bad = data + b'{"messages": 1}\n'
    run(org, "warm", data)
    before = open_fds()
    run(org, "ok", data)
    run(org, "bad", bad)
    path = tmp_path / "r.jsonl"
    path.write_bytes(bad)
    with open(path, "rb") as f:
        run(org, "badfile", b"", files=[("r.jsonl", f)])
    assert open_fds() == before


def test_a_fork_that_fails_is_read_here_and_leaks_no_descriptor(
    org, in_parts, settings, monkeypatch
):
    """os.fork can fail (EAGAIN: RLIMIT_NPROC or the pid limit; ENOMEM: a large parent
    under strict overcommit): the part is to be read here, as when a child fails."""
    data = jsonl(many(300))
    run(org, "warm", data)
    before = open_fds()

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    try:
        outcome = run(org, "nofork", data)
    except OSError as exc:
        outcome = ("raised", repr(exc))
    leaked = open_fds() - before
    assert not leaked, f"{len(leaked)} descriptors leaked ({outcome})"
    assert outcome[0] == "ok", outcome


def test_uploaded_ranges_of_one_request_read_in_parts(org, in_parts, settings, monkeypatch):
    calls = []
    real = imports._read_parts
    monkeypatch.setattr(imports, "_read_parts", lambda *a, **k: calls.append(1) or real(*a, **k))
    from explorer.upload_files import RangeUploadedFile
    from tests.explorer.test_upload_files import multipart_request
    from traces.services.uploads import uploaded_files

    contents = {
        "a.jsonl": jsonl(many(100)),
        "b.jsonl": jsonl([{"metadata": {"x": 1}}] + many(120)[::-1]) + b"\r\n\r\n",
        "c.jsonl": jsonl(many(200)[50:])[:-1],
    }

    def files():
        request = multipart_request(contents)
        got = request.FILES.getlist("files")
        assert all(isinstance(f, RangeUploadedFile) for f in got)
        return list(uploaded_files(got))  # NB: closes each; re-open lazily below

    def factory():
        request = multipart_request(contents)
        return uploaded_files(request.FILES.getlist("files"))

    a, b = compare(org, settings, b"", "ranges", files_factory=factory)
    assert a == b and a[0] == "ok"
    assert stored("ranges-p") == stored("ranges-w")
    assert len(calls) == 3


def failing(n):
    t = chat(n, error=n % 4 == 0, image=n % 5 == 0)
    t["metadata"]["failure"] = {"step": 1, "agent": "a", "reason": f"r{n % 3}"}
    return t


def annotations(name):
    from traces.models import Annotation, Block

    out = []
    for a in Annotation.objects.filter(trace__dataset__name=name).order_by("trace__index"):
        number = Block.objects.get(id=a.block_id).number if a.block_id else None
        out.append((a.trace.index, number, a.label.name, a.comment))
    return out


def normalized(name):
    rows = stored(name)
    out = []
    for r in rows:
        md = dict(r[2])
        if "failure" in md:
            md["failure"] = {k: v for k, v in md["failure"].items() if k != "block"}
        out.append((r[0], r[1], md, *r[3:]))
    return out


def test_failures_images_errors_and_duplicates_across_parts(org, in_parts, settings):

    vals = [failing(n % 37) for n in range(150)]  # duplicates spread over every part
    settings.IMPORT_WORKERS = 1
    trace_import(
        organization=org,
        dataset_name="fp-p",
        files=[("s", io.BytesIO(jsonl([failing(36), failing(2)])))],
    )
    trace_import(
        organization=org,
        dataset_name="fp-w",
        files=[("s", io.BytesIO(jsonl([failing(36), failing(2)])))],
    )
    a, b = compare(org, settings, jsonl(vals), "fp")
    assert a == b and a[0] == "ok"
    assert normalized("fp-p") == normalized("fp-w")
    assert annotations("fp-p") == annotations("fp-w")
    assert a[1]["traces"] == 35


@pytest.mark.slow
def test_a_child_killed_mid_read_is_replaced_and_reaped(org, in_parts, settings, monkeypatch):
    from traces import forked

    children = []
    real_init = forked.Forked.__init__

    def recording_init(self, work):
        real_init(self, work)
        children.append(self.pid)
        if len(children) == 1:
            threading.Timer(0.05, lambda pid=self.pid: os.kill(pid, 9)).start()

    data = jsonl(many(3000))
    settings.IMPORT_WORKERS = 1
    whole = run(org, "k-w", data)
    settings.IMPORT_WORKERS = 3
    run(org, "warm", jsonl(many(300)))
    before = open_fds()
    monkeypatch.setattr(forked.Forked, "__init__", recording_init)
    parts = run(org, "k-p", data)
    assert parts == whole
    assert stored("k-p") == stored("k-w")
    assert open_fds() == before
    for pid in children:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already


def test_nothing_left_in_the_temp_dir(org, in_parts, settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    run(org, "t1", jsonl(many(300)))
    run(org, "t2", jsonl(many(300)) + b'{"messages": 1}\n')
    assert list(tmp_path.iterdir()) == []
