"""`benchmark api`'s Explorer part: about ten clients at once, each pushing multi-trace
requests with dozens of inline PNGs to Invariant Explorer's POST /api/v1/push/trace (2.1's
performance floor: every request answered within the client's 5 s timeout). Each client
has its own keep-alive connection and thread; every request's time from sending to
having read its answer is kept, and their p99 is reported against the 5 s target."""

import base64
import http.client
import os
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field

import orjson

TARGET_P99_SECONDS = 5.0


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def noise_png(side: int) -> bytes:
    """A valid RGB PNG of random pixels: it does not compress (about 3 x side^2 bytes),
    and no two are the same, so the server stores every one."""
    rows = b"".join(b"\x00" + os.urandom(side * 3) for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"".join([
        b"\x89PNG\r\n\x1a\n", _chunk(b"IHDR", header),
        _chunk(b"IDAT", zlib.compress(rows, 1)), _chunk(b"IEND", b""),
    ])  # fmt: skip


def _trace(images: list[str], n: int) -> list[dict]:
    """An agent's run with a screenshot in each turn, half as Invariant's `base64_img: `
    string content, half as `image_url` parts (both ways 2.1 stores)."""
    events = [{"role": "user", "content": f"Find the settings page, run {n}."}]
    for k, image in enumerate(images):
        call_id = f"c{n}_{k}"
        events.append({
            "role": "assistant", "content": f"Step {k}: taking a screenshot.",
            "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "screenshot", "arguments": '{"full_page": false}'}}],
        })  # fmt: skip
        if k % 2:
            events.append({"role": "tool", "tool_call_id": call_id,
                           "content": f"base64_img: {image}"})  # fmt: skip
        else:
            part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}}
            events.append({"role": "tool", "tool_call_id": call_id, "content": [part]})
    events.append({"role": "assistant", "content": "Done."})
    return events


@dataclass
class Pushes:
    clients: int
    requests: int  # per client
    traces: int  # per request
    images: int  # per request
    request_bytes: int = 0
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0


def explorer_pushes(
    *, port: int, secret: str, dataset: str, clients: int, requests: int, traces: int,
    images: int, side: int = 96,
) -> Pushes:  # fmt: skip
    """Run the clients together; each sends `requests` pushes of `traces` traces holding
    `images` images in all (new pixels each, so every image is stored)."""
    found = Pushes(clients, requests, traces, images)
    lock, barrier = threading.Lock(), threading.Barrier(clients)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def bodies(client: int) -> list[bytes]:
        out = []
        for r in range(requests):
            pngs = [base64.b64encode(noise_png(side)).decode() for _ in range(images)]
            per = max(1, images // traces)
            runs = [_trace(pngs[t * per : (t + 1) * per], t) for t in range(traces)]
            out.append(orjson.dumps({"messages": runs, "annotations": None,
                                     "metadata": [{"client": client, "request": r}] * traces,
                                     "dataset": dataset}))  # fmt: skip
        return out

    def client(n: int) -> None:
        prepared = bodies(n)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            barrier.wait(timeout=120)
            for body in prepared:
                started = time.perf_counter()
                connection.request("POST", "/api/v1/push/trace", body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                took = time.perf_counter() - started
                with lock:
                    found.seconds.append(took)
                    found.request_bytes += len(body)
                    if response.status != 200:
                        found.errors.append(f"{response.status}: {data[:200]!r}")
        except Exception as exc:  # noqa: BLE001 - reported, and the run fails on it
            with lock:
                found.errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found.wall = time.perf_counter() - started
    return found


def render_pushes(found: Pushes, percentile) -> list[str]:
    ms = 1000
    if not found.seconds:
        return [f"explorer push: no request answered ({'; '.join(found.errors[:3])})"]
    p99 = percentile(found.seconds, 0.99)
    ok = p99 < TARGET_P99_SECONDS and not found.errors
    return [
        f"explorer push (POST /api/v1/push/trace): {found.clients} clients at once, "
        f"{found.requests} requests each of {found.traces} traces and {found.images} inline "
        f"PNGs, {found.request_bytes / len(found.seconds) / 1e6:.2f} MB a request",
        f"  {len(found.seconds)} requests in {found.wall:.1f} s, {len(found.errors)} failed"
        + (f" (first: {found.errors[0]})" if found.errors else ""),
        f"  median {sorted(found.seconds)[len(found.seconds) // 2] * ms:.0f} ms, "
        f"p99 {p99 * ms:.0f} ms, max {max(found.seconds) * ms:.0f} ms",
        f"explorer push p99: {p99:.2f} s (target < {TARGET_P99_SECONDS:.0f} s) "
        f"{'PASS' if ok else 'FAIL'}",
    ]
