"""`benchmark api`: the REST API (spec/004) served by gunicorn, against floors of the same run.

One gunicorn (gthread workers, HTTP/1.1 keep-alive) is started on a free port of
127.0.0.1, connected to the database this process uses (its DATABASE_URL is built
from `connection.settings_dict`, so a test run's server uses the test database).
A fresh organization and API key are made for the run; everything written is
deleted at the end and the server is always stopped.

- latency: one keep-alive connection; `GET whoami` (the cheapest authenticated
  call) and a one-block `POST .../blocks` (an agent's turns: user and assistant
  messages, a think, tool calls under the assistant message, their results)
  are timed in turns, after a warm-up; median and p99 of each, and their ratios.
- throughput: a synthetic JSONL (benchmarks.synthetic) sent as
  `blocks:batch` requests of 1,000 blocks (the blocks and raw copies the import
  makes of it; traces of about 10,000 blocks), timed from sending a request to
  having read its answer; against the import benchmark's floor (orjson +
  `traces.bulk.insert_rows`) on the same file, in a forked child.
- stitched: a trace of --stitched-blocks blocks written by batches, then
  `GET blocks.stitched` (median of 5) against the floor of reading the same rows
  and columns in one query with a raw cursor and decoding their JSON text with
  orjson, in this process (median of 5); then the same tree a page at a time
  (`?limit=200` messages, following `next_cursor`): the first page against one indexed
  query for its rows, and the walk through every page (each block once).
- explorer push: about ten clients at once pushing multi-trace requests with dozens of
  inline PNGs to Invariant Explorer's POST /api/v1/push/trace (benchmarks/explorer_push.py);
  the p99 of their answer times against the client's 5 s timeout.
"""

import http.client
import math
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from argparse import ArgumentParser
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from django.conf import settings
from django.db import connection

from benchmarks.explorer_push import explorer_pushes, render_pushes
from benchmarks.import_bench import Phase, delete_organization_rows, floor_write, in_child
from benchmarks.synthetic import generate
from traces.models import ApiKey, Block
from traces.services.api_keys import api_key_create
from traces.services.blocks import BATCH_MAX
from traces.services.datasets import dataset_get_or_create
from traces.services.organizations import organization_get_or_create

HELP = "one-block POST latency, blocks:batch throughput and blocks.stitched, served by gunicorn"
TARGET_LATENCY_RATIO = 3.0
TARGET_BATCH_RATIO = 0.5
TARGET_STITCHED_RATIO = 3.0
BATCH_BLOCKS = BATCH_MAX  # blocks per blocks:batch request
TRACE_BLOCKS = 10_000  # the batch phase starts a new trace past this many blocks
BLOCKS_PER_SYNTHETIC_TRACE = 140  # about, for sizing the generated file
WARMUP = 20
STITCHED_REPEAT = 5
STITCHED_PAGE = 200  # messages a page of blocks.stitched asks for
READY_SECONDS = 60
MB = 1_000_000
STITCHED_COLUMNS = (
    "id", "block_type", "sub_type", "parent_block_id", "payload", "metadata", "raw", "extra",
    "created_at", "updated_at", "call_id", "result_seq",
)  # fmt: skip


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--requests", type=int, default=300, help="timed requests of each latency endpoint"
    )
    parser.add_argument(
        "--batch-blocks", type=int, default=50_000, help="blocks sent by blocks:batch (about)"
    )
    parser.add_argument(
        "--stitched-blocks", type=int, default=10_000, help="blocks of the stitched trace"
    )
    parser.add_argument(
        "--explorer-clients", type=int, default=10, help="Explorer clients pushing at once"
    )
    parser.add_argument(
        "--explorer-requests", type=int, default=5, help="pushes each Explorer client sends"
    )
    parser.add_argument(
        "--explorer-images", type=int, default=36, help="inline PNGs in each Explorer push"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker")
    parser.add_argument("--seed", type=int, default=20250101)


# -- the server -------------------------------------------------------------------------


def database_url(settings_dict: Mapping[str, Any]) -> str:
    """A DATABASE_URL (explorer/settings.py) naming the database of `settings_dict`."""
    engine, name = settings_dict["ENGINE"], str(settings_dict["NAME"] or "")
    if engine == "django.db.backends.sqlite3":
        if not name or name == ":memory:" or name.startswith("file:"):
            raise RuntimeError(
                f"the API benchmark needs an SQLite database file another process can open, "
                f"not {name!r}"
            )
        return "sqlite:///" + os.path.abspath(name)
    if engine == "django.db.backends.postgresql":
        user = quote(str(settings_dict.get("USER") or ""), safe="")
        password = quote(str(settings_dict.get("PASSWORD") or ""), safe="")
        auth = f"{user}:{password}@" if password else f"{user}@" if user else ""
        host = quote(str(settings_dict.get("HOST") or ""), safe="")
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        options = {
            key: value
            for key, value in (settings_dict.get("OPTIONS") or {}).items()
            if isinstance(value, str | int) and not isinstance(value, bool)
        }
        query = f"?{urlencode(options)}" if options else ""
        return f"postgres://{auth}{host}{port}/{quote(name, safe='')}{query}"
    raise RuntimeError(f"the API benchmark does not know the database engine {engine}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn serving this project on 127.0.0.1, stopped on leaving the `with`."""

    def __init__(self, *, workers: int, threads: int, log_path: Path) -> None:
        self.workers, self.threads, self.log_path = workers, threads, log_path
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        module, _, name = settings.WSGI_APPLICATION.rpartition(".")
        return [
            sys.executable, "-m", "gunicorn", f"{module}:{name}",
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(self.workers),
            "--worker-class", "gthread",
            "--threads", str(self.threads),
            "--keep-alive", "30",
            "--timeout", "300",
            "--log-level", "warning",
            "--error-logfile", "-",
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE,
            "DATABASE_URL": database_url(connection.settings_dict),
            "DEBUG": "0",
            # With DEBUG off the server refuses the development key; this one signs
            # nothing the benchmark keeps.
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
        }

    def __enter__(self) -> "Server":
        log = open(self.log_path, "wb")
        try:
            self.process = subprocess.Popen(
                self.command(),
                cwd=settings.BASE_DIR,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_tail(self, size: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-size:].decode(errors="replace")
        except OSError:
            return ""

    def wait_ready(self, path: str, headers: dict[str, str]) -> None:
        """Until `GET path` answers 200; fail at once on another answer or on exit."""
        assert self.process is not None
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"gunicorn exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            probe = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                probe.request("GET", path, headers=headers)
                response = probe.getresponse()
                body = response.read()
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gunicorn did not answer in {READY_SECONDS} s:\n{self.log_tail()}"
                    ) from None
                time.sleep(0.1)
                continue
            finally:
                probe.close()
            if response.status != 200:
                raise RuntimeError(
                    f"GET {path} answered {response.status}: {body[:500]!r}\n{self.log_tail()}"
                )
            return

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Api:
    """One keep-alive HTTP/1.1 connection to the organization's API."""

    def __init__(self, port: int, org: str, secret: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.prefix = f"/v1/organizations/{org}"
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.opened = 0  # connections opened: 1 while keep-alive holds

    def call(self, method: str, path: str, body: bytes | None = None, expect: int = 200):
        """(seconds from sending to having read the answer, the answer's body)."""
        if self.connection.sock is None:
            self.opened += 1
        started = time.perf_counter()
        self.connection.request(method, self.prefix + path, body=body, headers=self.headers)
        response = self.connection.getresponse()
        data = response.read()
        seconds = time.perf_counter() - started
        if response.status != expect:
            raise RuntimeError(f"{method} {path} answered {response.status}: {data[:500]!r}")
        return seconds, data

    def trace_create(self, name: str) -> str:
        body = orjson.dumps({"name": name})
        return orjson.loads(self.call("POST", "/traces", body, expect=201)[1])["id"]

    def close(self) -> None:
        self.connection.close()


# -- latency ----------------------------------------------------------------------------

_WORDS = (
    "the agent order customer file returns value error request tool result check update "
    "config module function test pass fail build deploy user account item price refund "
    "flight booking cancel status data model token query index cache déjà naïve 東京 ✓"
).split()
# An agent's turn, one block at a time: what it is, and its payload's size in characters.
TURN = (
    ("user", 200), ("assistant", 300), ("think", 400), ("call", 100), ("result", 800),
    ("call", 100), ("result", 800), ("answer", 500),
)  # fmt: skip


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words).capitalize() + "."


class Conversation:
    """One-block bodies as an agent appends them, each under the block it answers."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.step = 0
        self.assistant: str | None = None
        self.call: tuple[str, str] | None = None  # (block id, call_id)

    def next(self) -> tuple[str, dict[str, Any]]:
        kind, size = TURN[self.step % len(TURN)]
        self.step += 1
        text = _text(self.rng, size)
        if kind == "user":
            return kind, {"sub_type": "MESSAGE", "payload": {"role": "user", "content": text}}
        if kind in ("assistant", "answer"):
            return kind, {"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": text}}
        if kind == "think":
            return kind, {
                "sub_type": "THINK", "parent_block_id": self.assistant, "payload": {"text": text},
            }  # fmt: skip
        if kind == "call":
            call_id = f"call_{self.step:06d}_{self.rng.getrandbits(40):010x}"
            self.call = ("", call_id)
            arguments = {"path": f"src/{self.rng.choice(_WORDS)}.py", "query": text, "limit": 20}
            return kind, {
                "sub_type": "TOOL_CALL",
                "parent_block_id": self.assistant,
                "payload": {"call_id": call_id, "name": "search_code", "arguments": arguments},
            }
        assert self.call is not None
        return kind, {
            "sub_type": "TOOL_RESULT",
            "parent_block_id": self.call[0],
            "payload": {"call_id": self.call[1], "output": text},
        }

    def created(self, kind: str, block_id: str) -> None:
        if kind == "assistant":
            self.assistant = block_id
        elif kind == "call":
            assert self.call is not None
            self.call = (block_id, self.call[1])


@dataclass
class Latency:
    whoami: list[float]
    post: list[float]
    opened: int


def _latency(api: Api, requests: int, seed: int) -> Latency:
    trace_id = api.trace_create("benchmark api latency")
    conversation = Conversation(seed)
    path = f"/traces/{trace_id}/blocks"
    whoami: list[float] = []
    post: list[float] = []
    opened = api.opened
    for i in range(WARMUP + requests):
        kind, block = conversation.next()
        body = orjson.dumps(block)
        seconds_whoami, _ = api.call("GET", "/whoami")
        seconds_post, data = api.call("POST", path, body, expect=201)
        conversation.created(kind, orjson.loads(data)["id"])
        if i >= WARMUP:
            whoami.append(seconds_whoami)
            post.append(seconds_post)
    return Latency(whoami, post, api.opened - opened + 1)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


# -- batches ----------------------------------------------------------------------------


def synthetic_blocks(path: Path) -> Iterator[list[dict[str, Any]]]:
    """Each trace of a synthetic JSONL as batch items, made as the import makes blocks.

    Parents are named by `ref`s (unique in the file); `send_batch` turns those of
    earlier batches into block ids.
    """
    serial = 0
    with open(path, "rb") as stream:
        for line in stream:
            blocks: list[dict[str, Any]] = []
            calls: dict[str, str] = {}
            for event in orjson.loads(line)["messages"]:
                if event["role"] == "tool":
                    call_id = event["tool_call_id"]
                    blocks.append({
                        "sub_type": "TOOL_RESULT", "parent_block_id": calls[call_id],
                        "payload": {"call_id": call_id, "output": event["content"]}, "raw": event,
                    })  # fmt: skip
                    continue
                serial += 1
                message = f"m{serial}"
                blocks.append({
                    "ref": message, "sub_type": "MESSAGE",
                    "payload": {"role": event["role"], "content": event.get("content")},
                    "raw": event,
                })  # fmt: skip
                if "reasoning_content" in event:
                    blocks.append({
                        "sub_type": "THINK", "parent_block_id": message,
                        "payload": {"text": event["reasoning_content"]},
                    })  # fmt: skip
                for call in event.get("tool_calls") or ():
                    serial += 1
                    calls[call["id"]] = ref = f"c{serial}"
                    function = call["function"]
                    blocks.append({
                        "ref": ref, "sub_type": "TOOL_CALL", "parent_block_id": message,
                        "payload": {
                            "call_id": call["id"], "name": function["name"],
                            "arguments": function["arguments"],
                        },
                    })  # fmt: skip
            yield blocks


@dataclass
class Sent:
    requests: int = 0
    blocks: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.blocks / self.seconds if self.seconds else 0.0


def send_batch(
    api: Api, trace_id: str, blocks: list[dict[str, Any]], ids: dict[str, str], sent: Sent
) -> None:
    """POST one blocks:batch; note the ids of its refs, for later batches' parents."""
    refs: set[str] = set()
    items = []
    for block in blocks:
        parent = block.get("parent_block_id")
        if parent is not None and parent not in refs:
            block = {**block, "parent_block_id": ids[parent]}
        if "ref" in block:
            refs.add(block["ref"])
        items.append(block)
    body = orjson.dumps({"blocks": items})
    seconds, data = api.call("POST", f"/traces/{trace_id}/blocks:batch", body, expect=201)
    created = orjson.loads(data)["blocks"]
    for item, out in zip(items, created, strict=True):
        if "ref" in item:
            ids[item["ref"]] = out["id"]
    sent.requests += 1
    sent.blocks += len(items)
    sent.bytes += len(body)
    sent.seconds += seconds


def send_traces(
    api: Api, traces: Iterator[list[dict[str, Any]]], *, trace_blocks: int, name: str
) -> tuple[Sent, list[str]]:
    """Send synthetic traces in batches of BATCH_BLOCKS into API traces of about
    `trace_blocks` blocks (a new one starts at a synthetic trace's boundary)."""
    sent = Sent()
    made: list[str] = []
    pending: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    trace_id, in_trace = "", 0

    def flush(everything: bool) -> None:
        nonlocal in_trace
        while len(pending) >= BATCH_BLOCKS or (everything and pending):
            batch = pending[:BATCH_BLOCKS]
            del pending[:BATCH_BLOCKS]
            send_batch(api, trace_id, batch, ids, sent)
            in_trace += len(batch)

    for blocks in traces:
        if not trace_id:
            trace_id, in_trace = api.trace_create(f"{name} {len(made) + 1}"), 0
            made.append(trace_id)
            ids.clear()
        pending.extend(blocks)
        flush(everything=False)
        if in_trace + len(pending) >= trace_blocks:
            flush(everything=True)
            trace_id = ""
    if trace_id:
        flush(everything=True)
    return sent, made


def first_blocks(traces: Iterator[list[dict[str, Any]]], count: int) -> Iterator[list[dict]]:
    """The first `count` blocks (parents always come before their children)."""
    left = count
    for blocks in traces:
        if left <= 0:
            return
        yield blocks[:left]
        left -= len(blocks)


# -- stitched ---------------------------------------------------------------------------


def stitched_floor(trace_id: str) -> int:
    """The same rows and columns as blocks.stitched reads, in one query, JSON decoded."""
    qn = connection.ops.quote_name
    columns = ", ".join(qn(c) for c in STITCHED_COLUMNS)
    sql = (
        f"SELECT {columns} FROM {qn(Block._meta.db_table)} WHERE {qn('trace_id')} = %s "
        f"ORDER BY {qn('number')}"
    )
    return _decoded_count(sql, [trace_id])


def _decoded_count(sql: str, params: list[Any]) -> int:
    """Run `sql`, whose first eight columns are a block's id, types, parent and its four
    JSON columns as text, and decode those with orjson; how many rows it read."""
    loads = orjson.loads
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [
            (bid, block_type, sub_type, parent, loads(payload), loads(metadata),
             None if raw is None else loads(raw), loads(extra), *rest)
            for (bid, block_type, sub_type, parent, payload, metadata, raw, extra, *rest)
            in cursor.fetchall()
        ]  # fmt: skip
    return len(rows)


def trace_page_floor(trace_id: str, shown: int) -> int:
    """The rows the first response shows, in one indexed query (the stitched order's
    index, LIMIT what it shows), their JSON text decoded with orjson."""
    qn = connection.ops.quote_name
    columns = ", ".join(qn(c) for c in _FLOOR_COLUMNS)
    sql = (
        f"SELECT {columns} FROM {qn(Block._meta.db_table)} WHERE {qn('trace_id')} = %s "
        f"AND {qn('turn')} >= 0 ORDER BY {qn('turn')}, {qn('act')}, {qn('step')}, "
        f"{qn('result_seq')}, {qn('created_at')}, {qn('id')} LIMIT {int(shown)}"
    )
    return _decoded_count(sql, [trace_id])


_FLOOR_COLUMNS = (
    "id", "block_type", "sub_type", "parent_block_id", "payload", "metadata", "raw", "extra",
    "created_at", "updated_at", "call_id", "result_seq", "turn", "act", "step", "number",
)  # fmt: skip


def count_nodes(tree: dict[str, Any]) -> int:
    stack = list(tree["messages"])
    for orphans in tree["orphans"].values():
        stack.extend(orphans)
    count = 0
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.get("children") or ())
    return count


@dataclass
class Stitched:
    blocks: int
    response_bytes: int
    built: Sent
    server: list[float]
    floor: list[float]
    page_blocks: int = 0  # blocks of the first page of `limit=STITCHED_PAGE` messages
    page: list[float] | None = None
    page_floor: list[float] | None = None
    walk_seconds: float = 0.0  # every page, following next_cursor
    walk_pages: int = 0


def _stitched(api: Api, path: Path, blocks: int) -> Stitched:
    built, (trace_id,) = send_traces(
        api,
        first_blocks(synthetic_blocks(path), blocks),
        trace_blocks=blocks,
        name="benchmark api stitched",
    )
    url = f"/traces/{trace_id}/blocks.stitched"
    _, data = api.call("GET", url)  # warm-up, and a check of what it answers
    answered = count_nodes(orjson.loads(data))
    if answered != blocks:
        raise RuntimeError(f"blocks.stitched answered {answered} blocks, not {blocks}")
    server = [api.call("GET", url)[0] for _ in range(STITCHED_REPEAT)]
    if stitched_floor(trace_id) != blocks:
        raise RuntimeError(f"the floor query did not read {blocks} blocks")
    floor = []
    for _ in range(STITCHED_REPEAT):
        started = time.perf_counter()
        stitched_floor(trace_id)
        floor.append(time.perf_counter() - started)
    found = Stitched(blocks, len(data), built, server, floor)
    _stitched_pages(api, url, trace_id, found)
    return found


def _stitched_pages(api: Api, url: str, trace_id: str, found: Stitched) -> None:
    """blocks.stitched a page at a time: the first page against the floor of its rows,
    and the walk through every page, which must give every block once."""
    first = f"{url}?limit={STITCHED_PAGE}"
    _, data = api.call("GET", first)
    found.page_blocks = count_nodes(orjson.loads(data))
    found.page = [api.call("GET", first)[0] for _ in range(STITCHED_REPEAT)]
    found.page_floor = []
    for _ in range(STITCHED_REPEAT):
        started = time.perf_counter()
        trace_page_floor(trace_id, found.page_blocks)
        found.page_floor.append(time.perf_counter() - started)
    seen, cursor, started = 0, "0", time.perf_counter()
    while cursor is not None:
        _, data = api.call("GET", f"{url}?limit={STITCHED_PAGE}&cursor={cursor}")
        page = orjson.loads(data)
        seen += count_nodes(page)
        cursor = page["next_cursor"]
        found.walk_pages += 1
    found.walk_seconds = time.perf_counter() - started
    if seen != found.blocks:
        raise RuntimeError(f"the pages of blocks.stitched gave {seen} blocks, not {found.blocks}")


# -- the run ----------------------------------------------------------------------------


def _positive(options: Mapping[str, Any], key: str) -> int:
    value = options[key]
    if value < 1:
        raise ValueError(f"--{key.replace('_', '-')} must be at least 1")
    return value


def run(options: Mapping[str, Any], log: Callable[[str], None]) -> str:
    requests = _positive(options, "requests")
    batch_blocks = _positive(options, "batch_blocks")
    stitched_blocks = _positive(options, "stitched_blocks")
    workers = _positive(options, "workers")
    threads = _positive(options, "threads")
    seed: int = options.get("seed", 20250101)
    tag = uuid.uuid4().hex[:12]
    organization = organization_get_or_create(slug=f"benchmark-api-{tag}")
    try:
        key = api_key_create(organization=organization, name="benchmark api")
        floor_dataset, _ = dataset_get_or_create(
            organization=organization, name=f"benchmark-floor-{tag}"
        )
        with tempfile.TemporaryDirectory(prefix="benchmark-api-") as tmp:
            batch_file, stitched_file = Path(tmp) / "batch.jsonl", Path(tmp) / "stitched.jsonl"
            log(f"generating about {batch_blocks} + {stitched_blocks} blocks ...")
            generate(
                batch_file, traces=math.ceil(batch_blocks / BLOCKS_PER_SYNTHETIC_TRACE), seed=seed
            )
            generate(
                stitched_file,
                traces=math.ceil(stitched_blocks / BLOCKS_PER_SYNTHETIC_TRACE) + 2,
                seed=seed + 1,
            )
            server = Server(workers=workers, threads=threads, log_path=Path(tmp) / "gunicorn.log")
            log(f"starting gunicorn on 127.0.0.1:{server.port} ...")
            with server:
                api = Api(server.port, organization.slug, key.secret)
                try:
                    server.wait_ready(api.prefix + "/whoami", api.headers)
                    log(f"latency: {requests} + {WARMUP} warm-up requests of each ...")
                    latency = _latency(api, requests, seed)
                    log(f"blocks:batch: {batch_file.stat().st_size / MB:.0f} MB of JSONL ...")
                    batch, _ = send_traces(
                        api,
                        synthetic_blocks(batch_file),
                        trace_blocks=TRACE_BLOCKS,
                        name="benchmark api batch",
                    )
                    log("floor: orjson + bulk write of the same file ...")
                    floor = in_child("floor", lambda: floor_write(batch_file, floor_dataset))
                    api.close()  # idle past the server's keep-alive: the next call reconnects
                    log(f"stitched: writing and reading a {stitched_blocks}-block trace ...")
                    stitched = _stitched(api, stitched_file, stitched_blocks)
                    log(f"explorer push: {options['explorer_clients']} clients at once ...")
                    pushes = explorer_pushes(
                        port=server.port, secret=key.secret, dataset=f"explorer-{tag}",
                        clients=_positive(options, "explorer_clients"),
                        requests=_positive(options, "explorer_requests"),
                        traces=3, images=_positive(options, "explorer_images"),
                    )  # fmt: skip
                finally:
                    api.close()
    finally:
        log("cleaning up ...")
        ApiKey.objects.filter(organization=organization).delete()
        delete_organization_rows(organization)
    report = _render(latency, batch, floor, stitched, workers, threads)
    return "\n".join([report, *render_pushes(pushes, percentile)])


def _verdict(ratio: float, target: float, at_most: bool) -> str:
    ok = ratio <= target if at_most else ratio >= target
    sign = "<=" if at_most else ">="
    return f"{ratio:.2f} (target {sign} {target}) {'PASS' if ok else 'FAIL'}"


def _render(
    latency: Latency, batch: Sent, floor: Phase, stitched: Stitched, workers: int, threads: int
) -> str:
    ms = 1000
    floor_blocks, floor_seconds = floor.blocks, floor.seconds
    who_median, post_median = statistics.median(latency.whoami), statistics.median(latency.post)
    who_p99, post_p99 = percentile(latency.whoami, 0.99), percentile(latency.post, 0.99)
    floor_rate = floor_blocks / floor_seconds if floor_seconds else 0.0
    batch_ratio = batch.rate / floor_rate if floor_rate else 0.0
    server_median = statistics.median(stitched.server)
    floor_median = statistics.median(stitched.floor)
    stitched_ratio = server_median / floor_median if floor_median else float("inf")
    requests = len(latency.post)
    return "\n".join([
        f"benchmark api: gunicorn gthread, {workers} workers x {threads} threads, "
        f"keep-alive; database {connection.vendor}",
        f"latency: {requests} requests of each after {WARMUP} warm-up, in turns, on "
        f"{latency.opened} keep-alive connection(s)",
        f"  {'endpoint':<28}{'median ms':>10}{'p99 ms':>10}",
        f"  {'GET whoami':<28}{who_median * ms:>10.2f}{who_p99 * ms:>10.2f}",
        f"  {'POST blocks (one block)':<28}{post_median * ms:>10.2f}{post_p99 * ms:>10.2f}",
        f"ratio one-block POST/whoami median: {_verdict(post_median / who_median, TARGET_LATENCY_RATIO, True)}",  # noqa: E501
        f"ratio one-block POST/whoami p99: {_verdict(post_p99 / who_p99, TARGET_LATENCY_RATIO, True)}",  # noqa: E501
        f"throughput: blocks:batch of {BATCH_BLOCKS} blocks, traces of about {TRACE_BLOCKS} "
        "blocks, one connection",
        f"  blocks:batch  {batch.requests} requests, {batch.blocks} blocks, "
        f"{batch.bytes / MB:.1f} MB of JSON, {batch.seconds:.2f} s, {batch.rate:.0f} blocks/s",
        f"  import floor  {floor_blocks} blocks, {floor_seconds:.2f} s, {floor_rate:.0f} blocks/s",
        f"ratio blocks:batch/floor: {_verdict(batch_ratio, TARGET_BATCH_RATIO, False)}",
        f"stitched: a {stitched.blocks}-block trace (written in {stitched.built.requests} "
        f"batches, {stitched.built.rate:.0f} blocks/s), {stitched.response_bytes / MB:.1f} MB "
        f"answer, median of {STITCHED_REPEAT}",
        f"  GET blocks.stitched                    {server_median * ms:>9.1f} ms",
        f"  floor: one query + orjson, in-process  {floor_median * ms:>9.1f} ms",
        f"ratio blocks.stitched/floor: {_verdict(stitched_ratio, TARGET_STITCHED_RATIO, True)}",
        *_render_pages(stitched),
    ])  # fmt: skip


def _render_pages(stitched: Stitched) -> list[str]:
    if not stitched.page or not stitched.page_floor:
        return []
    ms = 1000
    page, floor = statistics.median(stitched.page), statistics.median(stitched.page_floor)
    return [
        f"stitched a page at a time (limit={STITCHED_PAGE} messages, cursor), median of "
        f"{STITCHED_REPEAT}:",
        f"  first page ({stitched.page_blocks} blocks)          {page * ms:>9.1f} ms",
        f"  floor: one indexed query for its rows  {floor * ms:>9.1f} ms",
        f"ratio first page/floor: {_verdict(page / floor, TARGET_STITCHED_RATIO, True)}",
        f"  every page: {stitched.walk_pages} requests, {stitched.walk_seconds * ms:.0f} ms "
        f"(the whole tree in one answer: {statistics.median(stitched.server) * ms:.0f} ms)",
    ]
