"""`benchmark compare`: comparing two 10,000-block traces (issue 12), against a floor.

Data (under a fresh organization, deleted at the end; `--scale` shrinks it): a chat
trace of 10,000 blocks made by `ui_bench.write_long_trace` (about 10 MB of payloads), and
a second trial of the same task: the same events with the third and every 50th tool call given other
arguments, every 200th turn's text changed, and a few user turns inserted, so that the
two runs share long identical stretches and diverge often. Both are imported with
`trace_import`.

Measurements (median of REPEAT after a warm-up):

- floor: fetching both traces' signature rows (id, sub type and payload of each block)
  with one indexed query each (`block_number`), and decoding the payloads with orjson;
- `trace_compare`: the selector (both queries, the signatures and the alignment);
- the API: GET /v1/organizations/<org>/compare/traces?a=&b= (every step, as JSON);
- the page: GET /compare/traces/?a=&b= (its first window of steps), signed in as a member.

The targets are the page budget of the performance issue: the page and the API within
TARGET_RATIO times the floor.
"""

import statistics
import tempfile
import time
from argparse import ArgumentParser
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from django.db import connection
from django.urls import reverse

from benchmarks.import_bench import timed_import
from benchmarks.ui_bench import (
    _cleanup,
    _get,
    _load,
    _timed,
    _verdict,
    signed_in_member,
    write_long_trace,
)
from traces.models import Block, Trace
from traces.selectors.compare import trace_compare

HELP = "compare two 10,000-block traces: selector, API and page against a one-query floor"
BLOCKS = 10_000
PAYLOAD_BYTES = 10_000_000
TARGET_RATIO = 3.0
REPEAT = 5


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--scale", type=float, default=1.0, help="fraction of the full size (10,000 blocks)"
    )
    parser.add_argument("--seed", type=int, default=20250101)


def second_trial(line: bytes) -> bytes:
    """The same run with other arguments now and then, other texts, inserted turns."""
    trace = orjson.loads(line)
    events = []
    calls = 0
    for n, event in enumerate(trace["messages"]):
        if event.get("tool_calls"):
            for call in event["tool_calls"]:
                calls += 1
                if calls % 50 == 0 or calls == 3:
                    call["function"]["arguments"] = orjson.dumps({"changed": calls}).decode()
        elif n % 200 == 0 and isinstance(event.get("content"), str) and n > 0:
            event["content"] = event["content"][: len(event["content"]) // 2] + " (otherwise)"
        if n % 997 == 0 and n > 0 and event.get("role") == "user":
            events.append({"role": "user", "content": f"one more thing, {n}"})
        events.append(event)
    trace["messages"] = events
    return orjson.dumps(trace) + b"\n"


def floor(trace_ids: list[str]) -> int:
    """Both traces' signature rows, one indexed query each, payloads decoded."""
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {qn('id')}, {qn('sub_type')}, {qn('payload')} FROM {qn(Block._meta.db_table)} "
        f"WHERE {qn('trace_id')} = %s ORDER BY {qn('number')}"
    )
    loads, count = orjson.loads, 0
    with connection.cursor() as cursor:
        for trace_id in trace_ids:
            cursor.execute(sql, [trace_id])
            count += len([(i, s, loads(p)) for i, s, p in cursor.fetchall()])
    return count


def run(options: Mapping[str, Any], log: Callable[[str], None]) -> str:
    scale = options.get("scale") or 1.0
    if not 0 < scale <= 10:
        raise ValueError("--scale must be in (0, 10]")
    seed: int = options.get("seed", 20250101)
    blocks = max(20, round(BLOCKS * scale))
    organization, user, client = signed_in_member("benchmark-compare")
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="benchmark-compare-") as tmp:
            first = Path(tmp) / "a.jsonl"
            log(f"generating a {blocks}-block trace and a second trial of it ...")
            write_long_trace(
                first, blocks=blocks, payload_bytes=max(20_000, round(PAYLOAD_BYTES * scale)),
                seed=seed,
            )  # fmt: skip
            second = Path(tmp) / "b.jsonl"
            second.write_bytes(second_trial(first.read_bytes()))
            log("importing both with trace_import ...")
            timed_import(first, organization, "benchmark-compare-a")
            timed_import(second, organization, "benchmark-compare-b")
        a = Trace.objects.get(organization=organization, dataset__name="benchmark-compare-a")
        b = Trace.objects.get(organization=organization, dataset__name="benchmark-compare-b")
        ids = [a.pk, b.pk]
        log(f"measuring, {REPEAT} runs each ...")
        load = _load()
        floor_s, rows = _timed(lambda: floor(ids), REPEAT)
        selector_s, result = _timed(lambda: trace_compare(a=a, b=b), REPEAT)
        api_url = f"/v1/organizations/{organization.slug}/compare/traces?a={a.pk}&b={b.pk}"
        api_s, api_body = _timed(_get(client, api_url), REPEAT)
        page_url = f"{reverse('compare-traces')}?a={a.pk}&b={b.pk}"
        page_s, html = _timed(_get(client, page_url), REPEAT)
        steps = len(orjson.loads(api_body)["steps"])
        if b'id="first-divergence"' not in html:
            raise RuntimeError("the comparison page shows no first divergence")
    finally:
        log("cleaning up ...")
        _cleanup(organization, user, client)
    log(f"done in {time.perf_counter() - started:.0f} s")
    return _render(
        scale, load, a.block_count, b.block_count, rows, result, steps, len(html),
        floor_s, selector_s, api_s, page_s,
    )  # fmt: skip


def _render(
    scale, load, blocks_a, blocks_b, rows, result, steps, html_bytes, floor_s, selector_s,
    api_s, page_s,
) -> str:  # fmt: skip
    med = statistics.median
    f = med(floor_s)
    lines = [
        f"benchmark compare: database {connection.vendor}, scale {scale:g}, in-process test "
        f"Client signed in as a member, median of {REPEAT} after a warm-up; {load}",
        f"traces: {blocks_a} and {blocks_b} blocks; {steps} aligned steps, "
        f"{result.same_count} identical, first divergence at step "
        f"{(result.first_divergence or 0) + 1}",
        f"floor (both traces' signature rows, one indexed query each, decoded): "
        f"{f * 1000:.1f} ms for {rows} rows",
        f"trace_compare (selector): {med(selector_s) * 1000:.1f} ms",
        f"API GET compare/traces: {med(api_s) * 1000:.1f} ms",
        f"page GET /compare/traces/: {med(page_s) * 1000:.1f} ms, {html_bytes / 1e6:.2f} MB HTML",
        f"ratio selector/floor: {med(selector_s) / f:.2f}",
        f"ratio API/floor: {med(api_s) / f:.2f} {_verdict(round(med(api_s) / f, 2), TARGET_RATIO)}",
        f"ratio page/floor: {med(page_s) / f:.2f} "
        f"{_verdict(round(med(page_s) / f, 2), TARGET_RATIO)}",
    ]
    return "\n".join(lines) + "\n"
