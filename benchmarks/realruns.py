"""The import benchmark's input: a JSONL of real agent runs, as large as asked.

The runs are the tau2-bench simulation files of `../shared/data` (or any folder of
files in tau2-bench's shape, `{info, tasks, simulations: [...]}`): each simulation
becomes one line `{"messages": [...], "metadata": {...}}` with its messages exactly
as the file has them (flat tool calls, outputs linked by `id`, the provider's
`raw_data`, reasoning), and the runs are repeated until the file reaches the size
asked for. Each copy gets fresh ids: its tool-call ids and its simulation id carry
the copy's number, so no two traces share a call id or a name.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings

from benchmarks import synthetic

MB = 1_000_000
DEFAULT_DATA = Path(settings.BASE_DIR).parent / "shared" / "data"


@dataclass
class Generated(synthetic.Generated):
    largest_line: int = 0


@dataclass
class _Run:
    """One simulation, serialized once; `ids` are the call ids its copies rename."""

    messages: bytes
    ids: re.Pattern[bytes] | None
    metadata: dict[str, Any]
    events: int


def _call_ids(messages: list[Any]) -> set[str]:
    found: set[str] = set()
    for event in messages:
        if not isinstance(event, dict):
            continue
        for call in event.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                found.add(call["id"])
    return found


def load_runs(data: Path) -> list[_Run]:
    """Every simulation of every tau2-bench-shaped JSON file under `data`."""
    runs: list[_Run] = []
    for path in sorted(data.rglob("*.json")):
        try:
            top = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if not isinstance(top, dict) or not isinstance(top.get("simulations"), list):
            continue
        info = top.get("info") if isinstance(top.get("info"), dict) else {}
        agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
        for sim in top["simulations"]:
            messages = sim.get("messages") if isinstance(sim, dict) else None
            if not isinstance(messages, list) or not messages:
                continue
            ids = _call_ids(messages)
            quoted = sorted((orjson.dumps(i) for i in ids), key=len, reverse=True)
            pattern = re.compile(b"|".join(re.escape(q) for q in quoted)) if ids else None
            reward_info = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
            metadata = {
                "source": path.name,
                "model": agent.get("llm"),
                "task_id": sim.get("task_id"),
                "trial": sim.get("trial"),
                "reward": reward_info.get("reward"),
            }
            runs.append(_Run(orjson.dumps(messages), pattern, metadata, len(messages)))
    return runs


def _runs_in(data: Path) -> list[_Run]:
    if not data.is_dir():
        raise ValueError(f"{data} is absent: pass --data with a folder of tau2-bench runs")
    runs = load_runs(data)
    if not runs:
        raise ValueError(f"{data} holds no tau2-bench simulation")
    return runs


def _renamed(run: _Run, copy: int) -> bytes:
    """The run's messages with each quoted call id "call_x" as "call_x-c<copy>"."""
    if run.ids is None:
        return run.messages
    suffix = f"-c{copy}".encode()
    return run.ids.sub(lambda m: m[0][:-1] + suffix + b'"', run.messages)


def generate_real(path: Path, *, size_mb: float, data: Path = DEFAULT_DATA) -> Generated:
    """Write copies of the real runs under `data` to `path` until it holds `size_mb` MB
    (at least one trace), a line at a time."""
    runs = _runs_in(data)
    target = int(size_mb * MB)
    traces = events = size = largest = 0
    with open(path, "wb") as out:
        while size < target or not traces:
            copy = traces // len(runs)
            run = runs[traces % len(runs)]
            messages = _renamed(run, copy)
            metadata = {**run.metadata, "copy": copy, "name": f"{run.metadata['task_id']} c{copy}"}
            line = b'{"messages":' + messages + b',"metadata":' + orjson.dumps(metadata) + b"}\n"
            out.write(line)
            traces += 1
            events += run.events
            size += len(line)
            largest = max(largest, len(line))
    return Generated(path=path, traces=traces, events=events, bytes=size, largest_line=largest)


def generate_long_trace(path: Path, *, size_mb: float, data: Path = DEFAULT_DATA) -> Generated:
    """One trace of about `size_mb` MB: the real runs' messages one after the other, each
    copy with fresh call ids (the shape of an agent that ran a long time, many events of
    a few KB)."""
    runs = _runs_in(data)
    target = int(size_mb * MB)
    parts: list[bytes] = []
    size = events = n = 0
    while size < target or not parts:
        run = runs[n % len(runs)]
        messages = _renamed(run, n)
        parts.append(messages[1:-1])  # the events, without the array's brackets
        size += len(messages)
        events += run.events
        n += 1
    with open(path, "wb") as out:
        out.write(b'{"messages":[' + b",".join(parts) + b'],"metadata":{"name":"long"}}\n')
    total = path.stat().st_size
    return Generated(path=path, traces=1, events=events, bytes=total, largest_line=total)
