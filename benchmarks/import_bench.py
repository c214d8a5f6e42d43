"""`benchmark import`: `trace_import` end to end against the floor of the same work.

The input is real agent runs (benchmarks/realruns.py: the tau2-bench simulations of
../shared/data repeated with fresh ids, 100 MB by default), generated into a temporary
folder. The raw floor parses the same file with orjson and writes the same block and
trace rows (same columns, same payloads) with the driver's fastest bulk path
(`traces.bulk.insert_rows`: COPY on PostgreSQL, `executemany` on SQLite) in one
transaction, flushing every FLUSH_ROWS blocks as the import does, into two tables made
for the run with no index, constraint or trigger (dropped after). On PostgreSQL
search is built after the rows (migration 0019): the command also reports the time until
searchable (the import, then the search that must find a word of it at once) and the time
until indexed (the import, then the search worker's `search_index_build` draining the
queue, timed in a child of its own), each against the floor. Each phase
runs in a forked child, so that its peak memory growth is its own: the child's
peak RSS (VmHWM, reset at start) minus its RSS at start. Everything written is
deleted at the end.
"""

import gc
import multiprocessing
import os
import re
import sys
import tempfile
import time
import traceback
import uuid
from argparse import ArgumentParser
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction
from django.test.utils import override_settings
from django.utils import timezone

from benchmarks.realruns import DEFAULT_DATA, Generated, generate_long_trace, generate_real
from traces import ids, jsontext
from traces.bulk import BLOCK_COLUMNS, TRACE_COLUMNS, adapt_datetime, insert_rows
from traces.forked import PeakGrowth
from traces.models import (
    Annotation,
    ApiKey,
    Block,
    Dataset,
    Image,
    Membership,
    Organization,
    Trace,
    TraceEvent,
    TraceImage,
)
from traces.selectors.search import traces_matching
from traces.services.imports import FLUSH_ROWS, trace_import
from traces.services.search_index import search_index_drain
from traces.validation import reward_of

HELP = "import a synthetic JSONL with trace_import and compare with the bulk-write floor"
TARGET_RATIO = 2.0
TARGET_SEARCHABLE_RATIO = 3.0  # issue 10: search built after the rows
TARGET_MEMORY_MB = 150.0
# The floor and the import measured this many times, alternately: the ratio judged is
# the median of the rounds' (a floor moved by 40% between two runs on an idle machine).
DEFAULT_ROUNDS = 3
MEMORY_PER_LARGEST_TRACE = 2.0  # or twice the largest trace, when that is more
MB = 1_000_000


@dataclass
class Phase:
    name: str
    seconds: float
    blocks: int
    peak_growth_mb: float
    # CPU seconds of the child (user + system): on SQLite all of the work, on PostgreSQL
    # the client's only. On a loaded machine it moves less than the wall time.
    cpu_seconds: float = 0.0
    load: float = 0.0  # the 1-minute load average when the phase began

    @property
    def rate(self) -> float:
        return self.blocks / self.seconds if self.seconds else 0.0


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--size-mb", type=float, default=100.0,
        help="MB of JSONL to generate from the real runs (default 100)",
    )  # fmt: skip
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA,
        help="folder of tau2-bench runs to repeat (default ../shared/data)",
    )  # fmt: skip
    parser.add_argument(
        "--input", type=Path, default=None,
        help="import this JSONL as it is instead of generating one",
    )  # fmt: skip
    parser.add_argument(
        "--keep-file", type=Path, default=None, help="write the JSONL here, keep it"
    )
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS,
        help="measure the floor and the import this many times, alternately, each from a "
        f"settled database; the median of their ratios is judged (default {DEFAULT_ROUNDS})",
    )  # fmt: skip
    parser.add_argument(
        "--long-trace-mb", type=float, default=10.0,
        help="MB of the one long trace whose import memory is measured (default 10; 0: none)",
    )  # fmt: skip


def _input(options: Mapping[str, Any], tmp: str, log: Callable[[str], None]) -> Generated:
    given: Path | None = options.get("input")
    if given is not None:
        lines = largest = 0
        with open(given, "rb") as stream:
            for line in stream:
                lines += 1
                largest = max(largest, len(line))
        return Generated(given, lines, 0, given.stat().st_size, largest)
    size_mb: float = options.get("size_mb", 100.0)
    if size_mb <= 0:
        raise ValueError("--size-mb must be positive")
    path = options.get("keep_file") or Path(tmp) / "traces.jsonl"
    log(f"generating {size_mb:g} MB of real runs into {path} ...")
    return generate_real(path, size_mb=size_mb, data=options.get("data") or DEFAULT_DATA)


def run(options: Mapping[str, Any], log: Callable[[str], None]) -> str:
    rounds = options.get("rounds") or DEFAULT_ROUNDS
    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="benchmark-import-") as tmp:
        generated = _input(options, tmp, log)
        path = generated.path
        log(f"{generated.bytes / MB:.1f} MB, {generated.traces} traces")
        tag = uuid.uuid4().hex[:12]
        long_result: tuple[Generated, Phase] | None = None
        searched, indexed = 0.0, None
        measured: list[tuple[Phase, Phase]] = []
        organizations: list[Organization] = []
        try:
            for n in range(1, rounds + 1):
                organization = Organization.objects.create(
                    slug=f"benchmark-{tag}-{n}", name="benchmark"
                )
                organizations.append(organization)
                floor_dataset = Dataset.objects.create(
                    organization=organization, name=f"benchmark-floor-{tag}"
                )
                log(f"round {n} of {rounds}: floor: orjson + bulk write into bare tables ...")
                settle()
                with raw_tables():
                    floor = in_child("floor", partial(raw_floor, path, floor_dataset))
                log(f"round {n} of {rounds}: import: trace_import ...")
                settle()
                imported = in_child(
                    "import", partial(timed_import, path, organization, f"import-{tag}")
                )
                measured.append((floor, imported))
                if n < rounds:  # the next round starts from the same database
                    delete_organization_rows(organization)
                    organizations.pop()
            started = time.perf_counter()
            found = search_finds(path, organization, f"import-{tag}")
            searched = time.perf_counter() - started
            if connection.vendor == "postgresql":
                log("search worker: search_index_build until the queue is empty ...")
                indexed = in_child("index", search_index_drain)
            long_mb = options.get("long_trace_mb", 0.0) or 0.0
            if long_mb > 0:
                long = generate_long_trace(
                    Path(tmp) / "long.jsonl", size_mb=long_mb,
                    data=options.get("data") or DEFAULT_DATA,
                )  # fmt: skip
                log(f"long trace: one trace of {long.bytes / MB:.1f} MB ...")
                long_phase = in_child(
                    "long", lambda: timed_import(long.path, organization, f"long-{tag}")
                )
                long_result = (long, long_phase)
        finally:
            log("cleaning up ...")
            for organization in organizations:
                delete_organization_rows(organization)
    last_floor, last_import = measured[-1]
    rendered = _render(generated, measured, long_result, found)
    return rendered + _render_search_built_later(last_import, last_floor, searched, indexed, found)


def settle() -> None:
    """Every timed phase starts from the same database: no dead rows of an earlier phase
    (or run) for autovacuum to clean up while it runs, and no dirty pages or WAL of one
    for a checkpoint to write. A phase's own checkpoint and vacuum stay in its time."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return
        tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in (Block, Trace))
        cursor.execute(f"VACUUM (ANALYZE) {tables}")
        try:
            cursor.execute("CHECKPOINT")
        except DatabaseError:  # neither superuser nor pg_checkpoint: the WAL stays
            pass


def _render_search_built_later(
    imported: Phase, floor: Phase, searched: float, indexed: Phase | None, found: str
) -> str:
    """Search after the rows (PostgreSQL): when the import's text can be found (it must
    be at once: search reads a queued trace directly) and when the worker has indexed it."""
    if indexed is None or not floor.seconds:
        return ""
    searchable = imported.seconds + searched
    ratio = searchable / floor.seconds
    verdict = "PASS" if ratio <= TARGET_SEARCHABLE_RATIO and found.startswith("yes") else "FAIL"
    done = imported.seconds + indexed.seconds
    return (
        f"\ntime until searchable: {searchable:.2f} s (import, then the search that finds "
        f"its word: {searched:.2f} s) = {ratio:.2f}x the floor "
        f"(target <= {TARGET_SEARCHABLE_RATIO}) {verdict}"
        f"\ntime until indexed: {done:.2f} s (import, then the search worker: "
        f"{indexed.seconds:.2f} s for {indexed.blocks} traces, load {indexed.load:.2f}) "
        f"= {done / floor.seconds:.2f}x the floor"
    )


def _probe_word(path: Path) -> str | None:
    """A word of the last trace's messages (8 letters or more), for the search check."""
    last = b""
    with open(path, "rb") as stream:
        for line in stream:
            if line.strip():
                last = line
    try:
        messages = orjson.loads(last).get("messages") or []
    except (orjson.JSONDecodeError, AttributeError):
        return None
    for event in messages:
        content = event.get("content") if isinstance(event, dict) else None
        if isinstance(content, str) and (word := re.search(r"[A-Za-z]{8,}", content)):
            return word.group()
    return None


def search_finds(path: Path, organization: Organization, dataset_name: str) -> str:
    """Whether the trace list's search finds a word of the imported text as soon as the
    import has returned (no index built later): "yes (word)", "NO (word)", or why not
    checked."""
    word = _probe_word(path)
    if word is None:
        return "not checked (no word of 8 letters in the last trace)"
    traces = Trace.objects.filter(organization=organization, dataset__name=dataset_name)
    return f"{'yes' if traces_matching(traces=traces, text=word).exists() else 'NO'} ({word!r})"


def timed_import(path: Path, organization: Organization, dataset_name: str) -> tuple[int, int]:
    """The blocks imported, and how much the processes that read parts of the file
    (settings.IMPORT_WORKERS) grew by at most: they run beside this one."""
    with open(path, "rb") as stream:
        result = trace_import(
            organization=organization, dataset_name=dataset_name, files=[(path.name, stream)]
        )
    return result.blocks, result.part_peak_growth


def floor_rows(
    path: Path, *, organization_id: int, dataset_id: str, now: Any
) -> Iterator[tuple[tuple, list[tuple]]]:
    """(trace row, its block rows) for each line of `path`: orjson, and the least work
    that makes the rows the import makes (same blocks, columns and payloads). Reads the
    lines of `benchmarks.realruns` (tau2-bench's flat calls, outputs linked by `id`,
    reasoning in `raw_data`) and of `benchmarks.synthetic` (OpenAI's calls)."""
    dumps, new_id = jsontext.dumps, ids.block_id
    with open(path, "rb") as stream:
        for index, line in enumerate(stream):
            value = orjson.loads(line)
            trace_id = ids.trace_id()
            block_rows: list[tuple] = []
            calls: dict[str, str] = {}
            for i, event in enumerate(value["messages"]):
                meta = {"event_index": i}
                if event["role"] == "tool":
                    call_id = event.get("tool_call_id") or event["id"]
                    payload = {"call_id": call_id, "output": event.get("content")}
                    block_rows.append((
                        new_id(), trace_id, "OBSERVE", "TOOL_RESULT", calls[call_id],
                        dumps(payload), dumps(meta), dumps(event), "{}", call_id, None,
                        now, now,
                    ))  # fmt: skip
                    continue
                message_id = new_id()
                payload = {"role": event["role"], "content": event.get("content")}
                block_rows.append((
                    message_id, trace_id, "MESSAGE", "MESSAGE", None, dumps(payload),
                    dumps(meta), dumps(event), "{}", None, None, now, now,
                ))  # fmt: skip
                think = event.get("reasoning_content") or (
                    (event.get("raw_data") or {}).get("message") or {}
                ).get("reasoning_content")
                if think:
                    block_rows.append((
                        new_id(), trace_id, "ACT", "THINK", message_id, dumps({"text": think}),
                        dumps(meta), None, "{}", None, None, now, now,
                    ))  # fmt: skip
                for j, call in enumerate(event.get("tool_calls") or ()):
                    function = call.get("function") or call
                    arguments = function["arguments"]
                    if isinstance(arguments, str):
                        arguments = orjson.loads(arguments)
                    call_id = call["id"]
                    calls[call_id] = block_id = new_id()
                    payload = {"call_id": call_id, "name": function["name"], "arguments": arguments}
                    block_rows.append((
                        block_id, trace_id, "ACT", "TOOL_CALL", message_id, dumps(payload),
                        dumps({"event_index": i, "call_index": j}), None, "{}", call_id, None,
                        now, now,
                    ))  # fmt: skip
            metadata = value.get("metadata") or {}
            trace_row = (
                trace_id, organization_id, dataset_id, index, "", dumps(metadata), "{}",
                reward_of(metadata.get("reward")), len(block_rows), now, now,
            )  # fmt: skip
            yield trace_row, block_rows


def _write_rows(path: Path, *, trace_table: str, block_table: str, dataset: Dataset) -> int:
    """Every row of `path` into the two tables, in one transaction, FLUSH_ROWS blocks at
    a time; the blocks written."""
    now = adapt_datetime(timezone.now())
    trace_rows: list[tuple] = []
    block_rows: list[tuple] = []
    total = 0

    def flush() -> None:
        insert_rows(trace_table, TRACE_COLUMNS, trace_rows)
        insert_rows(block_table, BLOCK_COLUMNS, block_rows)
        trace_rows.clear()
        block_rows.clear()

    with transaction.atomic():
        for trace_row, blocks in floor_rows(
            path, organization_id=dataset.organization_id, dataset_id=dataset.pk, now=now
        ):
            trace_rows.append(trace_row)
            block_rows.extend(blocks)
            total += len(blocks)
            if len(block_rows) >= FLUSH_ROWS:
                flush()
        flush()
    return total


def floor_write(path: Path, dataset: Dataset) -> int:
    """The import's rows written into the application's own tables (their indexes,
    constraints and triggers included): the floor of the API benchmarks."""
    return _write_rows(
        path, trace_table=Trace._meta.db_table, block_table=Block._meta.db_table, dataset=dataset
    )


RAW_TRACE_TABLE = "benchmark_raw_trace"
RAW_BLOCK_TABLE = "benchmark_raw_block"


@contextmanager
def raw_tables() -> Iterator[None]:
    """Two tables with the columns of traces and blocks and nothing else: no index, no
    constraint (not even NOT NULL: `CREATE TABLE AS` copies none), no trigger."""
    qn = connection.ops.quote_name
    pairs = ((RAW_TRACE_TABLE, Trace), (RAW_BLOCK_TABLE, Block))
    with connection.cursor() as cursor:
        for table, model in pairs:
            cursor.execute(f"DROP TABLE IF EXISTS {qn(table)}")
            cursor.execute(
                f"CREATE TABLE {qn(table)} AS SELECT * FROM {qn(model._meta.db_table)} WHERE 1 = 0"
            )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            for table, _ in pairs:
                cursor.execute(f"DROP TABLE IF EXISTS {qn(table)}")


def raw_floor(path: Path, dataset: Dataset) -> int:
    """The raw floor of an import: orjson parse of every line and the driver's bulk write
    (COPY / one executemany in a transaction) of the same rows into the raw tables."""
    return _write_rows(
        path, trace_table=RAW_TRACE_TABLE, block_table=RAW_BLOCK_TABLE, dataset=dataset
    )


def in_child(name: str, work: Callable[[], int | tuple[int, int]]) -> Phase:
    """Run `work` in a forked child; it reports (seconds, blocks, peak growth). `work`
    returns the blocks, or the blocks and the peak growth of processes of its own that
    ran beside it (bytes), added to the child's."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    connections.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    # The child must never finalize the parent's objects: a psycopg connection collected
    # there would send PostgreSQL's Terminate on a socket the parent still uses.
    gc.collect()
    gc.freeze()
    child = context.Process(target=_child, args=(work, sender), name=f"benchmark-{name}")
    try:
        child.start()
    finally:
        gc.unfreeze()
    sender.close()
    try:
        message = receiver.recv()
    except EOFError:  # killed (out of memory?) before it could report
        message = ("error", "the child died without a report")
    child.join()
    if message[0] != "ok":
        raise RuntimeError(f"phase {name} failed (exit code {child.exitcode}):\n{message[1]}")
    _, seconds, blocks, growth, cpu, load = message
    return Phase(name, seconds, blocks, growth, cpu, load)


# The parent's connections as the child found them: kept referenced, never used or closed.
_INHERITED: list[Any] = []


def _forget_inherited_connections() -> None:
    """Make the child open connections of its own. close_all() in the parent does not
    always drop its connection (one closed inside an atomic block late in a full suite
    stayed open and was inherited: the child then shared the parent's socket, and one
    child's close at exit ended the session the next child and the parent still used,
    "server closed the connection unexpectedly"). The inherited connection is neither used
    nor closed here (closing sends Terminate on the shared socket), only set aside; the
    child exits without finalizing it."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None:
            _INHERITED.append(conn.connection)
            conn.connection = None
        conn.in_atomic_block = False
        conn.atomic_blocks = []
        conn.savepoint_ids = []
        conn.needs_rollback = False
        conn.closed_in_transaction = False


def _child(work: Callable[[], int | tuple[int, int]], sender: Connection) -> None:
    _forget_inherited_connections()
    try:
        peak = PeakGrowth()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        started, cpu = time.perf_counter(), _cpu_seconds()
        # Django's query log (on with DEBUG, which benchmarks run with) keeps each query's
        # SQL: an import's 85 duplicate checks of 500 hashes took 2.9 MB of 1 GB's growth,
        # which a server (DEBUG off) never keeps.
        with override_settings(DEBUG=False):
            done = work()
        seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
        blocks, beside = done if isinstance(done, tuple) else (done, 0)
        growth = (peak.bytes() + beside) / MB
        sender.send(("ok", seconds, blocks, growth, cpu, load))
    except BaseException:
        sender.send(("error", traceback.format_exc()))
    finally:
        connections.close_all()
        sender.close()


def _cpu_seconds() -> float:
    """CPU of this process and of the children it has waited for (an import's part
    readers), user and system."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def delete_organization_rows(organization: Organization) -> None:
    """Delete every row the benchmark wrote, with plain SQL (no row-by-row cascade)."""
    qn = connection.ops.quote_name
    block, trace, dataset, org, key, member, image, link, events, notes = (
        qn(m._meta.db_table)
        for m in (Block, Trace, Dataset, Organization, ApiKey, Membership, Image, TraceImage,
                  TraceEvent, Annotation)
    )  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        for table in (link, notes, events, block):
            cursor.execute(
                f"DELETE FROM {table} WHERE trace_id IN "
                f"(SELECT id FROM {trace} WHERE organization_id = %s)",
                [organization.pk],
            )
        for table in (image, trace, dataset, key, member):
            cursor.execute(f"DELETE FROM {table} WHERE organization_id = %s", [organization.pk])
        cursor.execute(f"DELETE FROM {org} WHERE id = %s", [organization.pk])


def median_round(measured: list[tuple[Phase, Phase]]) -> tuple[Phase, Phase]:
    """The round whose ratio is the median (the lower middle one of an even count)."""
    by_ratio = sorted(measured, key=lambda pair: _ratio(pair[1], pair[0]))
    return by_ratio[(len(by_ratio) - 1) // 2]


def _ratio(imported: Phase, floor: Phase) -> float:
    return imported.seconds / floor.seconds if floor.seconds else float("inf")


def _render(
    generated: Generated,
    measured: list[tuple[Phase, Phase]],
    long_result: tuple[Generated, Phase] | None = None,
    found: str = "",
) -> str:
    floor, imported = median_round(measured)
    ratio = _ratio(imported, floor)
    vendor = connection.vendor
    bulk = "COPY (psycopg)" if vendor == "postgresql" else "one executemany in a transaction"
    largest = generated.largest_line / MB
    memory_target = max(TARGET_MEMORY_MB, MEMORY_PER_LARGEST_TRACE * largest)
    settled = (
        "VACUUM (ANALYZE) of blocks and traces, then CHECKPOINT"
        if vendor == "postgresql"
        else "wal_checkpoint(TRUNCATE)"
    )
    lines = [
        f"benchmark import: {generated.traces} traces, {generated.bytes / MB:.1f} MB of JSONL "
        f"(largest trace {largest:.2f} MB), database {vendor}",
        f"floor: orjson parse of every line + {bulk} of the same rows into tables with no "
        "index, constraint or trigger, in this run",
        f"import: trace_import, the file read by up to {settings.IMPORT_WORKERS} processes "
        "at once (IMPORT_WORKERS), then one transaction; the floor: one process",
        f"rounds: {len(measured)}, floor then import, each phase after {settled}; the import's "
        "rows deleted before the next round; the round shown is the one of the median ratio",
        "peak memory: growth of the peak RSS (VmHWM of /proc, reset at start) of a forked "
        "child that runs the phase, plus that of the processes that read parts of the file "
        "beside it (settings.IMPORT_WORKERS), Django's query log off; the most of any round",
        "CPU: seconds of CPU of the child process and of the processes it forked (on "
        "PostgreSQL without the server's); "
        "load: the 1-minute load average when the phase began "
        f"({os.cpu_count()} CPUs)",
        f"{'phase':<8}{'seconds':>10}{'blocks':>10}{'blocks/s':>12}{'peak memory growth':>21}"
        f"{'CPU':>9}{'load':>7}",
    ]
    for phase in (imported, floor):
        lines.append(
            f"{phase.name:<8}{phase.seconds:>10.2f}{phase.blocks:>10}{phase.rate:>12.0f}"
            f"{phase.peak_growth_mb:>18.1f} MB{phase.cpu_seconds:>9.2f}{phase.load:>7.2f}"
        )
    lines.append(
        "every round (import / floor seconds = ratio): "
        + ", ".join(f"{i.seconds:.2f} / {f.seconds:.2f} = {_ratio(i, f):.2f}" for f, i in measured)
    )
    lines.append(
        f"ratio import/floor: {ratio:.2f} (target <= {TARGET_RATIO}) "
        f"{'PASS' if ratio <= TARGET_RATIO else 'FAIL'}"
    )
    if vendor == "sqlite" and floor.cpu_seconds:
        # SQLite works in the process: its CPU is all of the work, and moves less than the
        # wall time when other processes share the cores.
        lines.append(f"CPU ratio import/floor: {imported.cpu_seconds / floor.cpu_seconds:.2f}")
    if found:
        lines.append(f"search finds imported text when the import returns: {found}")
    memory = max(i.peak_growth_mb for _, i in measured)
    lines.append(
        f"peak memory growth: {memory:.0f} MB (target <= {memory_target:.0f} MB) "
        f"{'PASS' if memory <= memory_target else 'FAIL'}"
    )
    if long_result is not None:
        long, phase = long_result
        size = long.bytes / MB
        times = phase.peak_growth_mb / size if size else 0.0
        lines.append(
            f"long trace: one trace of {size:.1f} MB ({long.events} events) imported in "
            f"{phase.seconds:.2f} s, peak memory growth {phase.peak_growth_mb:.0f} MB = "
            f"{times:.1f}x the trace (target <= {MEMORY_PER_LARGEST_TRACE:.1f}x) "
            f"{'PASS' if times <= MEMORY_PER_LARGEST_TRACE else 'FAIL'}"
        )
    return "\n".join(lines)
