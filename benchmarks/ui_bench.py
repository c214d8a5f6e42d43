"""`benchmark ui`: the trace page, the dataset page and its search, against floors of the run.

Data (all under a fresh organization, deleted at the end; `--scale` shrinks it):

- two chat traces of the same shape, imported with `trace_import` in forked children:
  1,000 blocks with about 1 MB of payloads, and a hundred times that (100,000 blocks,
  about 100 MB), at every --scale;
- a dataset of 100,000 short traces of 10 blocks each (the 1,000,000-block search
  corpus), written by the import benchmark's floor (orjson + `traces.bulk.insert_rows`:
  the same rows and JSON as the import writes) in a forked child; rewards 0, 1 and
  partial credit, `task_id` groups, a rare word (NEEDLE) in about 1% of the traces.

Measurements, in this process, through Django's test Client signed in as a member of
the organization (median of REPEAT after a warm-up):

- trace page: the first response of GET /t/<id>/, its HTML size and the peak of the
  memory Python allocates while serving it (tracemalloc, one more request), against the
  floor of the rows that response shows: one indexed query for exactly those blocks
  (all columns, in stitched order, LIMIT the number the page shows) and decoding their
  JSON text with orjson; and the 100x trace's page against the 1x trace's page;
- dataset page: GET /d/<id>/ (first page, counts, accuracy, histogram, and the groups
  table by task_id) against hand-written SQL of the same numbers: the counts, mean,
  range and histogram bins of the rewards, and the first page of 50 traces with their
  first user message and tools;
- search: EXPLAIN ANALYZE of the dataset page's search (`traces_matching` over the
  dataset's traces), whether it uses the GIN index `block_search_document` (built by the
  search worker, run here to the end before measuring), and the time of
  the search request the page's search box sends (htmx, the trace list only).

The targets are PostgreSQL's; on SQLite the command runs at a smaller default scale and
the search is a scan.
"""

import gc
import math
import os
import random
import re
import statistics
import tempfile
import time
import tracemalloc
import uuid
from argparse import ArgumentParser
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from benchmarks.api_bench import trace_page_floor
from benchmarks.import_bench import (
    delete_organization_rows,
    floor_write,
    in_child,
    timed_import,
)
from benchmarks.synthetic import EventWriter
from traces import ids, jsontext
from traces.bulk import TRACE_COLUMNS, adapt_datetime, insert_rows
from traces.models import Block, BlockSearch, Dataset, Membership, Organization, Trace
from traces.selectors.search import traces_matching
from traces.selectors.stats import (
    default_group_key,
    metadata_keys,
    reward_histogram,
    reward_summary,
    rewards_by_key,
    tools_used,
    with_first_user_message,
)
from traces.services.datasets import dataset_get_or_create
from traces.services.organizations import organization_get_or_create
from traces.services.search_index import search_index_drain

HELP = "trace page, dataset page and dataset search against SQL floors (PostgreSQL targets)"
TARGET_TRACE_RATIO = 3.0
TARGET_HTML_MB = 1.5
TARGET_SCALING = 1.5
TARGET_DATASET_RATIO = 2.0
TRACE_BLOCKS = 1_000
TRACE_PAYLOAD_BYTES = 1_000_000
LARGER = 100  # the second trace has this many times the blocks and bytes
DATASET_TRACES = 100_000  # traces with blocks (the search corpus); scaled by --scale
DATASET_ALL_TRACES = 1_000_000  # the dataset's traces in all: the rest are trace rows only
TARGET_FRAGMENT_RATIO = 3.0  # each page and fragment of the dataset view against its floor
BLOCKS_PER_DATASET_TRACE = 10  # 100,000 traces make the 1,000,000-block search corpus
DATASET_TASKS_SHARE = 100  # traces per task_id
SQLITE_SCALE = 0.05  # the default --scale on SQLite
REPEAT = 5
PAGE_SIZE = 50  # explorer.dataset_page.PAGE_SIZE
NEEDLE = "segfault"  # the searched word: in none of the generated text but NEEDLE_RATE's
NEEDLE_RATE = 0.01  # of the dataset's traces
INDEX_NAME = "block_search_document"  # migration 0019
MB = 1_000_000
MS = 1000


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help=f"fraction of the full sizes (default 1.0 on PostgreSQL, {SQLITE_SCALE} on SQLite)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data (print where)")
    parser.add_argument(
        "--only", choices=("trace", "dataset"), default=None, help="measure one page only"
    )
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument(
        "--trace-blocks",
        type=int,
        default=TRACE_BLOCKS,
        help=f"blocks of the smaller trace (default {TRACE_BLOCKS:,}; the other has "
        f"{LARGER} times as many), at every --scale",
    )
    parser.add_argument(
        "--dataset-traces",
        type=int,
        default=None,
        help=f"the dataset's traces in all (default {DATASET_ALL_TRACES:,}, at every --scale)",
    )


# -- data -------------------------------------------------------------------------------


def _payload_size(payload: dict[str, Any]) -> int:
    return len(orjson.dumps(payload))


def write_long_trace(path: Path, *, blocks: int, payload_bytes: int, seed: int) -> int:
    """One JSONL line: a chat trace of exactly `blocks` blocks (as the import makes them)
    whose payloads total about `payload_bytes`; returns that total as generated.

    An agent's session: a system prompt, a task, then turns that are either a message or
    an assistant message with 1-3 tool calls (now and then a reasoning text) and their
    outputs. Outputs are large (2-200 KB) while the payloads are behind the target size,
    small (100 B-2 KB) otherwise, so that the total lands near it.
    """
    writer = EventWriter(seed)
    rng = writer.rng
    per_block = payload_bytes / blocks
    events: list[dict[str, Any]] = []
    made = size = 0

    def message(role: str, content: str | None) -> None:
        nonlocal made, size
        events.append({"role": role, "content": content})
        made += 1
        size += _payload_size({"role": role, "content": content})

    message("system", writer.text(1000, 4000))
    message("user", writer.text(50, 1000))
    turn, last = 0, "user"
    while made < blocks:
        turn += 1
        left = blocks - made
        if left > 8 and rng.random() < 0.4:
            calls = writer.tool_calls(0, turn)
            event: dict[str, Any] = {
                "role": "assistant",
                "content": None if rng.random() < 0.6 else writer.text(20, 400),
                "tool_calls": calls,
            }
            made += 1
            size += _payload_size({"role": "assistant", "content": event["content"]})
            if rng.random() < 0.15:
                event["reasoning_content"] = writer.text(100, 2000)
                made += 1
                size += _payload_size({"text": event["reasoning_content"]})
            events.append(event)
            for call in calls:
                function = call["function"]
                arguments = function["arguments"]
                if isinstance(arguments, str):
                    arguments = orjson.loads(arguments)
                made += 1
                size += _payload_size(
                    {"call_id": call["id"], "name": function["name"], "arguments": arguments}
                )
            for call in calls:
                behind = size < per_block * made
                output = writer.text(2_000, 200_000) if behind else writer.text(100, 2_000)
                events.append({"role": "tool", "tool_call_id": call["id"], "content": output})
                made += 1
                size += _payload_size({"call_id": call["id"], "output": output})
            last = "assistant"
        else:
            role = "user" if last == "assistant" and left > 1 else "assistant"
            message(role, writer.text(50, 2000) if role == "assistant" else writer.text(20, 500))
            last = role
    line = {"messages": events, "metadata": {"task_id": "long-session", "reward": 1}}
    path.write_bytes(orjson.dumps(line) + b"\n")
    return size


def _reward(rng) -> float | None:
    draw = rng.random()
    if draw < 0.05:
        return None
    if draw < 0.6:
        return 1
    if draw < 0.9:
        return 0
    return rng.choice((0.25, 0.5, 0.75))


def write_dataset(path: Path, *, traces: int, seed: int) -> tuple[int, int]:
    """`traces` JSONL lines of BLOCKS_PER_DATASET_TRACE blocks each: system prompt, task,
    two tool calls with their outputs, an answer and a follow-up. Returns (blocks, traces
    whose tool output holds NEEDLE)."""
    writer = EventWriter(seed)
    rng = writer.rng
    prompts = [writer.text(200, 600) for _ in range(10)]
    tasks = max(1, traces // DATASET_TASKS_SHARE)
    with_needle = 0
    with open(path, "wb") as out:
        for index in range(traces):
            needle_at = rng.randrange(2) if rng.random() < NEEDLE_RATE else -1
            with_needle += needle_at >= 0
            events: list[dict[str, Any]] = [
                {"role": "system", "content": prompts[index % len(prompts)]},
                {"role": "user", "content": writer.text(50, 400)},
            ]
            for turn in range(2):
                call = writer.tool_calls(index, turn)[0]
                content = None if rng.random() < 0.6 else writer.text(20, 200)
                events.append({"role": "assistant", "content": content, "tool_calls": [call]})
                output = writer.text(50, 1500)
                if turn == needle_at:
                    cut = rng.randrange(len(output))
                    output = f"{output[:cut]} {NEEDLE} {output[cut:]}"
                events.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            events.append({"role": "assistant", "content": writer.text(50, 600)})
            events.append({"role": "user", "content": writer.text(20, 200)})
            metadata: dict[str, Any] = {"task_id": f"task-{index % tasks}", "model": "bench-1"}
            reward = _reward(rng)
            if reward is not None:
                metadata["reward"] = reward
            out.write(orjson.dumps({"messages": events, "metadata": metadata}) + b"\n")
    return traces * BLOCKS_PER_DATASET_TRACE, with_needle


def _payload_bytes(trace_id: str) -> int:
    """The stored size of a trace's payloads, in bytes."""
    length = "octet_length(payload)"
    if connection.vendor == "sqlite":
        length = "length(CAST(payload AS BLOB))"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(SUM({length}), 0) FROM traces_block WHERE trace_id = %s", [trace_id]
        )
        return int(cursor.fetchone()[0])


# -- timing -----------------------------------------------------------------------------


def _timed(work: Callable[[], Any], repeat: int = REPEAT) -> tuple[list[float], Any]:
    """Seconds of each of `repeat` runs after a warm-up, and the last run's result."""
    result = work()
    seconds = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        result = work()
        seconds.append(time.perf_counter() - started)
    return seconds, result


# The trace page and its floor take milliseconds: each is run this many times, in turn
# (a page, then its floor), so that a machine that slows down for a while (a VM's
# neighbours) slows both, not one of them.
PAIRED_REPEAT = 21


def _paired(
    page: Callable[[], Any], floor: Callable[[], Any]
) -> tuple[list[float], Any, list[float], Any]:
    """Seconds of each run of `page` and of `floor`, taken in turn after a warm-up of
    each, and each one's last result."""
    page_result, floor_result = page(), floor()
    page_seconds, floor_seconds = [], []
    for _ in range(PAIRED_REPEAT):
        for work, seconds in ((page, page_seconds), (floor, floor_seconds)):
            gc.collect()
            started = time.perf_counter()
            result = work()
            seconds.append(time.perf_counter() - started)
            if work is page:
                page_result = result
            else:
                floor_result = result
    return page_seconds, page_result, floor_seconds, floor_result


def _get(client: Client, url: str, **headers: str) -> Callable[[], bytes]:
    def get() -> bytes:
        response = client.get(url, **headers)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}")
        return response.content

    return get


def _host() -> str:
    """A host name the settings allow, for the test Client's requests."""
    allowed = list(settings.ALLOWED_HOSTS)
    if "testserver" in allowed or "*" in allowed or not allowed:
        return "testserver"
    return allowed[0].lstrip(".")


class _Medians:
    """The medians of a page's timings (`page`) and of its floor's (`floor`)."""

    page: list[float]
    floor: list[float]

    @property
    def page_median(self) -> float:
        return statistics.median(self.page)

    @property
    def floor_median(self) -> float:
        return statistics.median(self.floor)


@dataclass
class TracePage(_Medians):
    blocks: int
    payload_bytes: int
    import_seconds: float
    page: list[float]
    html_bytes: int
    shown: int  # blocks the first response shows
    floor: list[float]
    peak_bytes: int  # what Python allocates at most while serving the page
    first: float = 0.0  # seconds of the first view after the import (it fills the cache)


_SHOWN = re.compile(rb"<article class=\"block [^>]*\bid=\"(tb_[A-Za-z0-9_-]+)\"")


def _peak(work: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _trace_page(client: Client, trace: Trace, import_seconds: float) -> TracePage:
    get = _get(client, reverse("trace", args=[trace.pk]))
    # The first view after the import draws every block it shows and keeps the drawing
    # (the render cache, Block.rendered); the views after read it. Both are reported.
    gc.collect()
    started = time.perf_counter()
    html = get()
    first = time.perf_counter() - started
    if b'id="row-0"' not in html:
        raise RuntimeError(f"the page of trace {trace.pk} shows no row")
    shown = len(set(_SHOWN.findall(html)))
    page, html, floor, read = _paired(get, lambda: trace_page_floor(trace.pk, shown))
    if read != shown:
        raise RuntimeError(f"the floor read {read} blocks, the page shows {shown}")
    return TracePage(
        trace.block_count, _payload_bytes(trace.pk), import_seconds, page, len(html), shown,
        floor, _peak(get), first,
    )  # fmt: skip


# -- the dataset page's numbers in hand-written SQL -----------------------------------


@dataclass
class DatasetNumbers:
    traces: int
    rewarded: int
    mean: float | None
    lowest: float | None
    highest: float | None
    bins: list[int]
    page: list[tuple]


UNIT_BINS = [(i / 10, (i + 1) / 10, i == 9) for i in range(10)]  # the data's rewards are in 0..1


def _first_page_sql() -> str:
    if connection.vendor == "postgresql":
        tools = (
            "SELECT array_agg(DISTINCT (b.payload::json) ->> 'name') FROM traces_block b "
            "WHERE b.trace_id = t.id AND b.sub_type = 'TOOL_CALL'"
        )
    else:
        tools = (
            "SELECT group_concat(DISTINCT json_extract(b.payload, '$.name')) FROM traces_block b "
            "WHERE b.trace_id = t.id AND b.sub_type = 'TOOL_CALL'"
        )
    first_user = (
        "SELECT b.payload FROM traces_block b WHERE b.trace_id = t.id AND "
        "b.sub_type = 'MESSAGE' AND b.payload LIKE '%%\"role\":\"user\"%%' "
        "ORDER BY b.number LIMIT 1"
    )
    # Every column the trace list shows (its usage columns after the first nine).
    return (
        'SELECT t.id, t."index", t.name, t.reward, t.block_count, t.created_at, '
        f"t.updated_at, ({first_user}), ({tools}), t.task, t.trial, t.tool_errors, "
        "t.input_tokens, t.output_tokens, t.cost_usd, t.duration_seconds FROM traces_trace t "
        f'WHERE t.dataset_id = %s ORDER BY t."index" LIMIT {PAGE_SIZE}'
    )


def dataset_floor(dataset_id: str) -> DatasetNumbers:
    """The counts, accuracy, histogram and first page of the dataset page, in raw SQL."""
    bins = ", ".join(
        f"COUNT(*) FILTER (WHERE reward >= {low} AND reward {'<=' if closed else '<'} {high})"
        if connection.vendor == "postgresql"
        else f"SUM(reward >= {low} AND reward {'<=' if closed else '<'} {high})"
        for low, high, closed in UNIT_BINS
    )
    loads = orjson.loads
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COUNT(reward), AVG(reward), MIN(reward), MAX(reward), "
            f"MAX(updated_at), {bins} FROM traces_trace WHERE dataset_id = %s",
            [dataset_id],
        )
        traces, rewarded, mean, lowest, highest, _latest, *counts = cursor.fetchone()
        cursor.execute(_first_page_sql(), [dataset_id])
        page = [(*row[:7], row[7] and loads(row[7]), *row[8:]) for row in cursor.fetchall()]
    return DatasetNumbers(
        traces, rewarded, mean, lowest, highest, [int(c or 0) for c in counts], page
    )


def _check_numbers(dataset: Dataset, floor: DatasetNumbers) -> None:
    """The floor computes what the page shows (the app's selectors, once, untimed)."""
    traces = Trace.objects.filter(dataset=dataset)
    summary = reward_summary(traces=traces)
    histogram = reward_histogram(traces=traces, summary=summary)
    if histogram.kind not in ("unit", "binary"):
        raise RuntimeError(f"the generated rewards give a {histogram.kind!r} histogram")
    app_bins = [b.count for b in histogram.bins]
    if histogram.kind == "binary":
        app_bins = [app_bins[0], *([0] * 8), app_bins[1]]
    mine = (floor.traces, floor.rewarded, floor.lowest, floor.highest, floor.bins)
    app = (summary.traces, summary.rewarded, summary.lowest, summary.highest, app_bins)
    if mine != app or not math.isclose(floor.mean or 0, summary.mean or 0, rel_tol=1e-9):
        raise RuntimeError(f"the floor's numbers {mine} are not the page's {app}")
    first = list(traces.order_by("index").values_list("id", flat=True)[:PAGE_SIZE])
    if [row[0] for row in floor.page] != first:
        raise RuntimeError("the floor's first page is not the page's")


@dataclass
class Figure(_Medians):
    """One response of the dataset view against the raw SQL of the same numbers."""

    name: str
    page: list[float]
    floor: list[float]
    peak_bytes: int


@dataclass
class DatasetPage(_Medians):
    traces: int
    blocks: int
    build_seconds: float
    page: list[float]
    html_bytes: int
    floor: list[float]
    parts: dict[str, float]
    partials: dict[str, float]
    figures: list[Figure] = field(default_factory=list)


def _parts(dataset: Dataset) -> dict[str, float]:
    """Seconds of each selector the page calls (one call each, after the page's warm-up)."""
    traces = Trace.objects.filter(dataset=dataset)
    parts: dict[str, float] = {}

    def timed(name: str, work: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        result = work()
        parts[name] = time.perf_counter() - started
        return result

    summary = timed("summary", lambda: reward_summary(traces=traces))
    timed("histogram", lambda: reward_histogram(traces=traces, summary=summary))
    keys = timed("metadata keys", lambda: metadata_keys(traces=traces))
    key = default_group_key(keys)
    if key:
        timed(f"groups by {key}", lambda: rewards_by_key(traces=traces, key=key))

    def first_page() -> None:
        rows = with_first_user_message(traces.defer("metadata", "extra").order_by("index"))
        shown = list(rows[:PAGE_SIZE])
        traces.count()
        tools_used(trace_ids=[t.pk for t in shown])

    timed("first page", first_page)
    return parts


def _dataset_page(client: Client, dataset: Dataset, blocks: int, seconds: float) -> DatasetPage:
    traces = Trace.objects.filter(dataset=dataset).count()
    url = reverse("dataset", args=[dataset.pk])
    page, html = _timed(_get(client, url))
    if f"{traces} trace".encode() not in html:
        raise RuntimeError(f"the dataset page does not say {traces} traces")
    floor, numbers = _timed(lambda: dataset_floor(dataset.pk))
    _check_numbers(dataset, numbers)
    partials = {
        target: statistics.median(
            _timed(_get(client, url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target))[0]
        )
        for target in ("groups", "traces")
    }
    return DatasetPage(traces, blocks, seconds, page, len(html), floor, _parts(dataset), partials)


def write_trace_rows(dataset: Dataset, *, first_index: int, count: int, seed: int) -> int:
    """`count` more traces of the dataset as bare rows (no blocks), bulk-inserted: rewards
    as `write_dataset` draws them, `task_id` groups of about DATASET_TASKS_SHARE traces
    each over the whole dataset."""
    rng = random.Random(seed)
    now = adapt_datetime(timezone.now())
    org_id, dataset_id = dataset.organization_id, dataset.pk
    tasks = max(1, (first_index + count) // DATASET_TASKS_SHARE)
    dumps = jsontext.dumps
    chunk: list[tuple] = []
    with transaction.atomic():
        for index in range(first_index, first_index + count):
            metadata: dict[str, Any] = {"task_id": f"task-{index % tasks}", "model": "bench-1"}
            reward = _reward(rng)
            if reward is not None:
                metadata["reward"] = reward
            chunk.append(
                (ids.trace_id(), org_id, dataset_id, index, "", dumps(metadata), "{}", reward,
                 0, now, now)
            )  # fmt: skip
            if len(chunk) >= 50_000:
                insert_rows(Trace._meta.db_table, TRACE_COLUMNS, chunk)
                chunk = []
        insert_rows(Trace._meta.db_table, TRACE_COLUMNS, chunk)
    return 0


def groups_floor(dataset_id: str, key: str) -> int:
    """The groups fragment's numbers in hand-written SQL: the metadata keys of the
    dataset's traces, and per value of `key` the traces, rewarded traces, mean reward and
    successes."""
    if connection.vendor == "postgresql":
        keys = (
            "SELECT DISTINCT k FROM traces_trace t, LATERAL json_object_keys(t.metadata::json) "
            "AS k WHERE t.dataset_id = %s ORDER BY k LIMIT 200"
        )
        value = "(metadata::json -> %s)::text"
        success = "COUNT(*) FILTER (WHERE reward >= 0.999999 AND reward <= 1.000001)"
    else:
        keys = (
            "SELECT DISTINCT e.key FROM traces_trace t, json_each(t.metadata) AS e "
            "WHERE t.dataset_id = %s ORDER BY e.key LIMIT 200"
        )
        value = "json_extract(metadata, '$.' || %s)"
        success = "SUM(reward >= 0.999999 AND reward <= 1.000001)"
    with connection.cursor() as cursor:
        cursor.execute(keys, [dataset_id])
        cursor.fetchall()
        cursor.execute(
            f"SELECT {value} AS v, COUNT(*), COUNT(reward), AVG(reward), {success} "
            "FROM traces_trace WHERE dataset_id = %s GROUP BY v",
            [key, dataset_id],
        )
        return len(cursor.fetchall())


def traces_floor(dataset_id: str) -> int:
    """The trace list fragment's numbers in hand-written SQL: how many traces, and the
    first page with each trace's first user message and tools."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM traces_trace WHERE dataset_id = %s", [dataset_id])
        cursor.fetchone()
        cursor.execute(_first_page_sql(), [dataset_id])
        rows = [(*row[:7], row[7] and orjson.loads(row[7]), row[8]) for row in cursor.fetchall()]
    return len(rows)


def _figures(client: Client, dataset: Dataset, key: str) -> list[Figure]:
    url = reverse("dataset", args=[dataset.pk])
    htmx = {"HTTP_HX_REQUEST": "true"}
    cases = (
        ("page", _get(client, url), lambda: dataset_floor(dataset.pk)),
        (
            "groups fragment",
            _get(client, url, **htmx, HTTP_HX_TARGET="groups"),
            lambda: groups_floor(dataset.pk, key),
        ),
        (
            "traces fragment",
            _get(client, url, **htmx, HTTP_HX_TARGET="traces"),
            lambda: traces_floor(dataset.pk),
        ),
    )
    figures = []
    for name, get, floor in cases:
        page, _ = _timed(get)
        floor_seconds, _ = _timed(floor)
        figures.append(Figure(name, page, floor_seconds, _peak(get)))
    return figures


# -- search -----------------------------------------------------------------------------


@dataclass
class Search:
    blocks: int
    matched: int
    expected: int
    request: list[float]
    plan: str
    uses_index: bool

    @property
    def request_median(self) -> float:
        return statistics.median(self.request)

    @property
    def plan_ms(self) -> float | None:
        found = re.search(r"Execution Time: ([\d.]+) ms", self.plan)
        return float(found[1]) if found else None


def _search(client: Client, dataset: Dataset, blocks: int, expected: int) -> Search:
    traces = Trace.objects.filter(dataset=dataset)
    found = traces_matching(traces=traces, text=NEEDLE).order_by("index")
    if connection.vendor == "postgresql":
        plan = found.explain(analyze=True)
        uses_index = INDEX_NAME in plan
    else:
        plan = found.explain()
        uses_index = False
    matched = found.count()
    url = f"{reverse('dataset', args=[dataset.pk])}?q={NEEDLE}"
    request, html = _timed(_get(client, url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="traces"))
    shown = re.search(rb"of (\d+) traces? matching the filters", html)
    if matched and (shown is None or int(shown[1]) != matched):
        raise RuntimeError(f"the search request does not say {matched} traces match")
    return Search(blocks, matched, expected, request, plan, uses_index)


# -- the run ----------------------------------------------------------------------------


def _sizes(scale: float, trace_blocks: int = TRACE_BLOCKS) -> dict[str, int]:
    return {
        "trace_blocks": trace_blocks,
        "trace_bytes": TRACE_PAYLOAD_BYTES * trace_blocks // TRACE_BLOCKS,
        "dataset_traces": max(20, round(DATASET_TRACES * scale)),
    }


def _vacuum() -> None:
    """What autovacuum does in time after bulk writes (planner statistics, the GIN
    index's pending list, the visibility map), done now so that it does not run
    during the measurements. Outside a transaction (VACUUM cannot run in one)."""
    if connection.vendor != "postgresql" or not connection.get_autocommit():
        return
    with connection.cursor() as cursor:
        for table in (Trace._meta.db_table, Block._meta.db_table, BlockSearch._meta.db_table):
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")


def signed_in_member(prefix: str) -> tuple[Organization, Any, Client]:
    """A new organization and a member of it (both named `<prefix>-<random tag>`), and a
    test Client signed in as that member; `_cleanup` removes all three."""
    tag = uuid.uuid4().hex[:12]
    organization = organization_get_or_create(slug=f"{prefix}-{tag}")
    user = get_user_model().objects.create_user(username=f"{prefix}-{tag}")
    Membership.objects.create(user=user, organization=organization, role="member")
    client = Client(HTTP_HOST=_host())
    client.force_login(user)
    return organization, user, client


def _cleanup(organization: Organization, user, client: Client) -> None:
    client.logout()  # deletes its session
    Membership.objects.filter(user=user).delete()
    user.delete()
    delete_organization_rows(organization)


def run(options: Mapping[str, Any], log: Callable[[str], None]) -> str:
    scale = options.get("scale")
    if scale is None:
        scale = 1.0 if connection.vendor == "postgresql" else SQLITE_SCALE
    if not 0 < scale <= 10:
        raise ValueError("--scale must be in (0, 10]")
    seed: int = options.get("seed", 20250101)
    keep: bool = options.get("keep", False)
    sizes = _sizes(scale, max(10, options.get("trace_blocks") or TRACE_BLOCKS))
    only = options.get("only")
    all_traces = options.get("dataset_traces") or DATASET_ALL_TRACES
    organization, user, client = signed_in_member("benchmark-ui")
    started = time.perf_counter()
    dataset_page = search = None
    try:
        with tempfile.TemporaryDirectory(prefix="benchmark-ui-") as tmp:
            made: list[tuple[Trace, float]] = []
            for n, factor in enumerate((1, LARGER) if only != "dataset" else ()):
                blocks = sizes["trace_blocks"] * factor
                path = Path(tmp) / f"trace-{n}.jsonl"
                log(f"generating a {blocks}-block trace ...")
                generated = write_long_trace(
                    path, blocks=blocks, payload_bytes=sizes["trace_bytes"] * factor, seed=seed + n
                )
                log(f"importing it ({generated / MB:.1f} MB of payloads) with trace_import ...")
                name = f"benchmark-ui-trace-{n}"
                phase = in_child(
                    f"import-{n}", lambda p=path, d=name: timed_import(p, organization, d)
                )
                path.unlink()
                trace = Trace.objects.get(organization=organization, dataset__name=name)
                made.append((trace, phase.seconds))
            if only != "trace":
                path = Path(tmp) / "dataset.jsonl"
                traces = sizes["dataset_traces"]
                log(f"generating a dataset of {traces} traces ...")
                blocks, with_needle = write_dataset(path, traces=traces, seed=seed + 2)
                dataset, _ = dataset_get_or_create(
                    organization=organization, name="benchmark-ui-dataset"
                )
                Dataset.objects.filter(pk=dataset.pk).update(
                    metadata={"accuracy": 0.6, "model": "bench-1", "benchmark": "ui"}
                )
                dataset.refresh_from_db()
                log(f"writing its {blocks} blocks (orjson + bulk write, as the import) ...")
                built = in_child("dataset", lambda: floor_write(path, dataset))
                path.unlink()
                more = max(0, all_traces - traces)
                log(f"bulk-inserting {more} more traces (rows only) ...")
                rows_phase = in_child(
                    "dataset-rows",
                    lambda: write_trace_rows(
                        dataset, first_index=traces, count=more, seed=seed + 3
                    ),
                )
        log("search worker: indexing what was written ...")
        search_index_drain()
        log("VACUUM (ANALYZE) ...")
        vacuum_started = time.perf_counter()
        _vacuum()
        log(f"  {time.perf_counter() - vacuum_started:.0f} s")
        log(f"built in {time.perf_counter() - started:.0f} s")
        load = _load()
        # As a server answers (DEBUG off): with DEBUG, which benchmarks run with, Django
        # logs each query, and a page makes ten where its floor makes one.
        with override_settings(DEBUG=False):
            pages = []
            for trace, seconds in made:
                log(f"trace page of {trace.block_count} blocks: page and floor, {REPEAT} each ...")
                pages.append(_trace_page(client, trace, seconds))
            if only != "trace":
                log(f"dataset page of {traces} traces: page and raw SQL, {REPEAT} each ...")
                dataset_page = _dataset_page(client, dataset, built.blocks, built.seconds)
                dataset_page.build_seconds += rows_phase.seconds
                log("dataset page and fragments against their floors ...")
                dataset_page.figures = _figures(client, dataset, "task_id")
                log(f"search for {NEEDLE!r} over {built.blocks} blocks ...")
                search = _search(client, dataset, built.blocks, with_needle)
        if keep:
            log(
                f"kept: organization {organization.slug}, user {user.username} (no password), "
                f"traces {', '.join(reverse('trace', args=[t.pk]) for t, _ in made)}"
            )
    finally:
        if not keep:
            log("cleaning up ...")
            _cleanup(organization, user, client)
    log(f"done in {time.perf_counter() - started:.0f} s")
    return _render(scale, load, pages, dataset_page, search)


def _load() -> str:
    """The machine's CPUs and load before the measurements (other work skews them)."""
    if not hasattr(os, "getloadavg"):
        return f"{os.cpu_count()} CPUs"
    return f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} before measuring"


def _verdict(value: float, target: float) -> str:
    return f"(target <= {target}) {'PASS' if value <= target else 'FAIL'}"


def _render(
    scale: float,
    load: str,
    pages: list[TracePage],
    data: DatasetPage | None,
    search: Search | None,
) -> str:
    vendor = connection.vendor
    lines = [
        f"benchmark ui: database {vendor}, scale {scale:g}, in-process test Client signed in "
        f"as a member, DEBUG off, median of {REPEAT} after a warm-up; {load}",
    ]
    if pages:
        lines += _render_trace_pages(pages)
    if data is not None and search is not None:
        lines += _render_dataset(data, search)
    return "\n".join(lines)


def _render_trace_pages(pages: list[TracePage]) -> list[str]:
    small, large = pages
    trace_ratio = small.page_median / small.floor_median
    html_mb = small.html_bytes / MB
    scaling = large.page_median / small.page_median
    lines = [
        "trace page (GET /t/<id>/, first response) against its floor: one indexed query "
        "for the blocks it shows + orjson; 'first ms': the first view after the import, "
        "which draws the blocks and keeps them (render cache), 'page ms' the views after "
        f"(median of {PAIRED_REPEAT}, each view followed by a run of its floor):",
        f"  {'blocks':>7}{'payloads':>11}{'import s':>10}{'shown':>7}{'floor ms':>10}"
        f"{'first ms':>10}{'page ms':>9}{'ratio':>7}{'peak MB':>9}{'HTML MB':>9}",
    ]
    for page in pages:
        lines.append(
            f"  {page.blocks:>7}{page.payload_bytes / MB:>8.1f} MB{page.import_seconds:>10.1f}"
            f"{page.shown:>7}{page.floor_median * MS:>10.1f}{page.first * MS:>10.1f}"
            f"{page.page_median * MS:>9.1f}"
            f"{page.page_median / page.floor_median:>7.2f}{page.peak_bytes / MB:>9.1f}"
            f"{page.html_bytes / MB:>9.2f}"
        )
    large_ratio = large.page_median / large.floor_median
    return [
        *lines,
        f"ratio trace page/floor: {small.blocks} blocks {trace_ratio:.2f} "
        f"{_verdict(trace_ratio, TARGET_TRACE_RATIO)}; {large.blocks} blocks {large_ratio:.2f} "
        f"{_verdict(large_ratio, TARGET_TRACE_RATIO)}",
        f"trace page HTML: {html_mb:.2f} MB {_verdict(html_mb, TARGET_HTML_MB)}",
        f"ratio trace page {large.blocks}/{small.blocks} blocks: {scaling:.2f} "
        f"{_verdict(scaling, TARGET_SCALING)}",
    ]


def _render_dataset(data: DatasetPage, search: Search) -> list[str]:
    dataset_ratio = data.page_median / data.floor_median
    vendor = connection.vendor
    lines = []
    if vendor != "postgresql":
        lines.append(
            "note: the search targets are PostgreSQL's; on SQLite the search is a scan (no "
            "full-text index)"
        )
    lines.append(
        f"dataset view at {data.traces} traces, each response against the raw SQL of its numbers:"
    )
    lines.append(f"  {'figure':<17}{'floor ms':>10}{'time ms':>10}{'ratio':>8}{'peak MB':>9}")
    for figure in data.figures:
        ratio = figure.page_median / figure.floor_median
        lines.append(
            f"  {figure.name:<17}{figure.floor_median * MS:>10.1f}"
            f"{figure.page_median * MS:>10.1f}{ratio:>8.2f}{figure.peak_bytes / MB:>9.1f} "
            f"{_verdict(ratio, TARGET_FRAGMENT_RATIO)}"
        )
    lines += [
        f"dataset page (GET /d/<id>/: first page, counts, accuracy, histogram, groups): "
        f"{data.traces} traces, {data.blocks} blocks (written in {data.build_seconds:.1f} s)",
        f"  page {data.page_median * MS:.1f} ms, {data.html_bytes / MB:.2f} MB of HTML",
        f"  raw SQL (counts, mean, range, histogram; first {PAGE_SIZE} traces with first "
        f"message and tools) {data.floor_median * MS:.1f} ms",
        "  its htmx fragments: "
        + ", ".join(f"{name} {seconds * MS:.1f} ms" for name, seconds in data.partials.items()),
        "  its selectors, one call each: "
        + ", ".join(f"{name} {seconds * MS:.1f} ms" for name, seconds in data.parts.items()),
        f"ratio dataset page/raw SQL: {dataset_ratio:.2f} "
        f"{_verdict(dataset_ratio, TARGET_DATASET_RATIO)}",
    ]
    plan_ms = search.plan_ms
    lines.append(
        f"search {NEEDLE!r} over {search.blocks} blocks: {search.matched} traces match "
        f"({search.expected} hold it); search request (htmx trace list) "
        f"{search.request_median * MS:.1f} ms"
        + (f"; EXPLAIN ANALYZE {plan_ms:.1f} ms" if plan_ms is not None else "")
    )
    lines += [f"  | {line}" for line in search.plan.splitlines()]
    uses = "yes" if search.uses_index else "no"
    if vendor == "postgresql":
        verdict = "PASS" if search.uses_index else "FAIL"
        lines.append(f"uses index: {uses} ({INDEX_NAME}; target yes) {verdict}")
    else:
        lines.append(f"uses index: {uses} (SQLite scans; the target is PostgreSQL's) N/A")
    return lines
