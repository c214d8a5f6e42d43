"""Demo datasets the project generates itself, imported through the real path.

Deterministic: every dataset has its own seeded `random.Random` and fixed texts,
so two runs give the same payloads. Three agents: a tau-bench-like airline agent,
a SWE-agent-like coding agent (long outputs, CRLF, reasoning, an image) and a
free-text multi-agent team. `load_demo` replaces the datasets and resets the
demo user (demo / demo, owner of organization "demo", and a superuser for /admin/).
"""

import base64
import io
import json
import random
import struct
import unicodedata
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from traces.models import Dataset, Membership, Organization
from traces.services.imports import ImportResult, trace_import
from traces.services.organizations import organization_get_or_create

ORG_SLUG = "demo"
USERNAME = PASSWORD = "demo"
Event = dict[str, Any]


@dataclass(frozen=True)
class DemoDataset:
    name: str
    metadata: dict[str, Any]
    traces: list[dict[str, Any]]  # {"messages": [...], "metadata": {...}}

    def jsonl(self) -> bytes:
        lines = [{"metadata": self.metadata}, *self.traces]
        return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def tiny_png(width: int = 24, height: int = 16) -> bytes:
    """A valid RGB PNG (a gradient), built with zlib and struct."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + bytes(c for x in range(width) for c in (x * 10 % 256, y * 15 % 256, 160))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _call(rng: random.Random, name: str, arguments: dict[str, Any], as_string: bool) -> Event:
    args: Any = json.dumps(arguments, ensure_ascii=False) if as_string else arguments
    call_id = f"call_{rng.getrandbits(48):012x}"
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def _turn(content: str | None, *calls: Event, thought: str | None = None) -> Event:
    event: Event = {"role": "assistant", "content": content}
    if thought:
        event["reasoning_content"] = thought
    if calls:
        event["tool_calls"] = list(calls)
    return event


def _result(call: Event, output: str) -> Event:
    return {
        "role": "tool",
        "tool_call_id": call["id"],
        "name": call["function"]["name"],
        "content": output,
    }


# --- demo-airline-agent: a tau-bench-like customer-service agent ---------------------

AIRLINE_POLICY = """# Airline agent policy

You help users **book, modify or cancel** reservations.

- Authenticate the user with their user id before anything else.
- List the action and get an explicit *yes* before any write.
- Basic economy flights cannot be modified; cancellations within 24 h are refunded.
"""
USERS = [
    "José Álvarez",
    "Zoë Müller",
    "Łukasz Wiśniewski",
    "Chloé Martin",
    "Mei Tanaka",
    "Björn Larsson",
    "Priya Raman",
    "Anaïs Lefèvre",
    "Noah Schäfer",
    "Olivia Nørgaard",
]
AIRPORTS = ["JFK", "LAX", "SFO", "ORD", "SEA", "BOS", "MIA", "DEN", "ATL", "CDG"]
TASKS = [  # (request, tool, the user's goal), one per task id
    ("I need to cancel a trip, something came up 😕", "cancel_reservation", "cancel"),
    ("Can I move my flight to one day later?", "update_reservation_flights", "change"),
    ("Please add two checked bags to my booking.", "update_reservation_baggages", "bags"),
    ("I'd like to upgrade to business class 🥂", "update_reservation_flights", "upgrade"),
    (
        "My wife can't travel, remove her from the reservation.",
        "update_reservation_passengers",
        "passengers",
    ),
    ("Cancel my flight and refund it to the gift card, please.", "cancel_reservation", "cancel"),
    (
        "Could you change my return flight to the morning one?",
        "update_reservation_flights",
        "change",
    ),
    (
        "I want 1 extra bag — I'm a gold member, it should be free!",
        "update_reservation_baggages",
        "bags",
    ),
    ("Book me the same trip as last month, but in economy.", "book_reservation", "book"),
    (
        "Upgrade everything I have to business, money is no object 💸",
        "update_reservation_flights",
        "upgrade",
    ),
]
TASK_SUCCESS = [0.9, 0.7, 0.8, 0.5, 0.4, 0.6, 0.7, 0.3, 0.6, 0.5]


def _reservation(rng: random.Random) -> dict[str, Any]:
    origin, destination = rng.sample(AIRPORTS, 2)
    return {
        "reservation_id": "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6)),
        "origin": origin,
        "destination": destination,
        "date": f"2024-05-{rng.randint(10, 28)}",
        "cabin": rng.choice(["basic_economy", "economy", "business"]),
        "total_paid": rng.randint(120, 1900),
    }


def _action_args(
    rng: random.Random, goal: str, reservation: dict[str, Any], success: bool
) -> dict[str, Any]:
    args: dict[str, Any] = {"reservation_id": reservation["reservation_id"]}
    if goal == "cancel":
        args["reason"] = "change of plan"
    elif goal in ("change", "upgrade", "book"):
        flight = {"flight_number": f"HAT{rng.randint(1, 299):03}", "date": reservation["date"]}
        cabin = "business" if goal == "upgrade" else "economy"
        args.update(cabin=cabin, flights=[flight], payment_id="credit_card_7815")
    elif goal == "bags":
        args.update(
            total_baggages=2, nonfree_baggages=0 if success else 2, payment_id="gift_card_2217"
        )
    else:
        args["passengers"] = [{"first_name": "Zoë", "last_name": "Müller", "dob": "1990-04-01"}]
    return args


def _airline_trace(rng: random.Random, task: int, trial: int, success: bool) -> dict[str, Any]:
    request, tool, goal = TASKS[task]
    name = USERS[task]
    first = unicodedata.normalize("NFKD", name.split()[0]).encode("ascii", "ignore").decode()
    user_id = f"{first.lower()}_{1000 + task}"
    reservations = [_reservation(rng) for _ in range(rng.randint(2, 4))]
    target = reservations[0]
    as_string = trial % 2 == 0  # OpenAI-style JSON strings, else objects
    lookup = _call(rng, "get_user_details", {"user_id": user_id}, as_string)
    details = {
        "user_id": user_id,
        "name": name,
        "membership": rng.choice(["regular", "gold"]),
        "reservations": [r["reservation_id"] for r in reservations],
        "payment_methods": {
            "credit_card_7815": {"last4": "7815"},
            "gift_card_2217": {"balance": 250},
        },
    }
    listing = "\n".join(
        f"- **{r['reservation_id']}**: {r['origin']} → {r['destination']} on {r['date']} "
        f"({r['cabin'].replace('_', ' ')})"
        for r in reservations
    )
    get = _call(
        rng, "get_reservation_details", {"reservation_id": target["reservation_id"]}, not as_string
    )
    acted_on = target if success else rng.choice(reservations[1:])
    act = _call(rng, tool, _action_args(rng, goal, acted_on, success), as_string)
    events: list[Event] = [
        {"role": "system", "content": AIRLINE_POLICY},
        {"role": "user", "content": f"Hi! I'm {name} ✈️, user id {user_id}. {request}"},
        _turn(None, lookup),
        _result(lookup, json.dumps(details, ensure_ascii=False)),
        _turn(
            f"Thanks, {name.split()[0]}. I found these reservations:\n\n{listing}\n\n"
            "Which one is it about?"
        ),
        {"role": "user", "content": f"The {target['reservation_id']} one."},
        _turn(None, get),
        _result(get, json.dumps(target)),
        _turn(
            f"To confirm, I will:\n\n1. apply **{tool}** to `{acted_on['reservation_id']}`\n"
            f"2. charge or refund `credit_card_7815` as needed\n\nShall I proceed (yes/no)?"
        ),
        {"role": "user", "content": "Yes, go ahead."},
        _turn(None, act),
        _result(
            act, json.dumps({**acted_on, "status": "updated" if goal != "cancel" else "cancelled"})
        ),
        _turn("Done ✅ Your reservation has been updated. Anything else?"),
        {"role": "user", "content": "No, that's all. Merci ! ###STOP###"},
    ]
    metadata = {
        "name": f"airline task {task} · trial {trial}",
        "task_id": f"airline-{task}",
        "trial": trial,
        "reward": 1 if success else 0,
        "domain": "airline",
    }
    return {"messages": events, "metadata": metadata}


def airline_dataset() -> DemoDataset:
    rng = random.Random(20240501)
    traces = [
        _airline_trace(rng, task, trial, rng.random() < TASK_SUCCESS[task])
        for task in range(len(TASKS))
        for trial in range(3)
    ]
    accuracy = sum(t["metadata"]["reward"] for t in traces) / len(traces)
    metadata = {
        "benchmark": "tau-bench airline (demo)",
        "model": "gpt-4o-2024-08-06",
        "user_model": "gpt-4o",
        "trials": 3,
        "accuracy": round(accuracy, 3),
    }
    return DemoDataset("demo-airline-agent", metadata, traces)


# --- demo-swe-agent: a SWE-agent-like coding agent ---------------------------------

SWE_SYSTEM = (
    "You are an autonomous programmer working in a repository at /repo. Use the `bash` and "
    "`str_replace_editor` tools. Make the smallest change that fixes the issue, then submit."
)
MODULES = ["core", "utils", "io", "parsers", "cli", "models", "http", "cache", "plugins"]
ISSUES = [  # (repo, module, title, resolved)
    ("acme/tabula", "parsers", "CSV reader drops the last row when the file ends with CRLF", 1),
    ("acme/tabula", "utils", "`slugify` crashes on accented input like 'Crème brûlée'", 1),
    ("acme/webkit", "http", "Retry-After header in seconds is parsed as a date", 0),
    ("acme/webkit", "cache", "LRU cache leaks entries when maxsize=0", 1),
    ("acme/plotter", "cli", "Legend overlaps the plot (see screenshot)", 0),
    ("acme/plotter", "models", "Unicode axis labels 📈 are garbled in SVG export", 1),
]


def _long_text(rng: random.Random, size: int, line: Callable[[int], str], crlf: bool) -> str:
    lines, total, n = [], 0, 0
    while total < size:
        text = line(n)
        lines.append(text)
        total += len(text.encode()) + (2 if crlf else 1)
        n += 1
    return ("\r\n" if crlf else "\n").join(lines)


def _swe_trace(rng: random.Random, index: int) -> dict[str, Any]:
    repo, module, title, resolved = ISSUES[index]
    package = repo.split("/")[1]
    path = f"/repo/src/{package}/{module}.py"
    crlf = index % 2 == 0  # a repository checked out with Windows line endings

    def listing_line(n: int) -> str:
        return f"./src/{package}/{rng.choice(MODULES)}/{rng.choice(MODULES)}_{n}.py"

    def source_line(n: int) -> str:
        body = rng.choice(
            [
                f"def helper_{n}(value):",
                "    return value",
                "",
                "# TODO: tidy",
                f"    result = {module}.process(value, strict=True)  # {n}",
            ]
        )
        return f"{n + 1:6}\t{body}"

    def test_line(n: int) -> str:
        return f"tests/test_{rng.choice(MODULES)}.py::test_case_{n} PASSED [{n % 100:3}%]"

    listing = _long_text(rng, rng.randint(5_000, 40_000), listing_line, crlf=False)
    source = _long_text(rng, rng.randint(5_000, 40_000), source_line, crlf)
    size = 120_000 if index == 3 else rng.randint(5_000, 40_000)  # one output over 100 KB
    tests = _long_text(rng, size, test_line, crlf=False)
    tests += "\n" + (
        "===== 1 failed, 212 passed =====" if not resolved else "===== 213 passed ====="
    )
    find = _call(rng, "bash", {"command": f"find /repo -name '*.py' | grep {module}"}, True)
    view = _call(rng, "str_replace_editor", {"command": "view", "path": path}, False)
    edit = _call(
        rng,
        "str_replace_editor",
        {
            "command": "str_replace",
            "path": path,
            "old_str": "    return value",
            "new_str": '    return value.rstrip("\\r\\n")',
        },
        True,
    )
    run = _call(rng, "bash", {"command": "python -m pytest -q tests", "timeout": 900}, False)
    issue: Any = (
        f"## {title}\n\nSteps to reproduce:\n\n```python\nfrom {package} import {module}\n"
        f"{module}.process('Crème brûlée ☕')\n```\n\nExpected no error."
    )
    if index == 4:  # a screenshot, as OpenAI's content parts with a data URL
        url = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
        issue = [{"type": "text", "text": issue}, {"type": "image_url", "image_url": {"url": url}}]
    events: list[Event] = [
        {"role": "system", "content": SWE_SYSTEM},
        {"role": "user", "content": issue},
        _turn(
            "Let me find the relevant files first.",
            find,
            thought=f"The issue is in `{module}`. I should locate the module before editing.",
        ),
        _result(find, listing),
        _turn(None, view),
        _result(view, f"Here's the result of running `cat -n` on {path}:\n{source}"),
        _turn(
            "I found the bug: the trailing newline is kept. Fixing it:",
            edit,
            thought="Strip both `\\r` and `\\n`, otherwise CRLF files keep a stray `\\r`.",
        ),
        _result(edit, f"The file {path} has been edited."),
        _turn(None, run),
        _result(run, tests),
        _turn(
            f"Summary of the fix:\n\n- strip line endings in `{module}.py`\n- all tests "
            f"{'pass' if resolved else 'but one pass'}\n\n```diff\n-    return value\n"
            f'+    return value.rstrip("\\r\\n")\n```'
        ),
    ]
    metadata = {
        "name": f"{repo}#{101 + index}",
        "instance_id": f"{package}-{101 + index}",
        "reward": resolved,
        "resolved": bool(resolved),
        "model": "claude-3-5-sonnet",
    }
    return {"messages": events, "metadata": metadata}


def swe_dataset() -> DemoDataset:
    rng = random.Random(20240502)
    traces = [_swe_trace(rng, i) for i in range(len(ISSUES))]
    accuracy = sum(t["metadata"]["reward"] for t in traces) / len(traces)
    metadata = {
        "benchmark": "SWE-bench Lite (demo)",
        "model": "claude-3-5-sonnet",
        "agent": "SWE-agent",
        "accuracy": round(accuracy, 3),
    }
    return DemoDataset("demo-swe-agent", metadata, traces)


# --- demo-multi-agent: a free-text team, no tools ----------------------------------

QUESTIONS = [
    ("How many studio albums did Mercedes Sosa publish between 2000 and 2009?", "3", "3"),
    (
        "What is the capital of the country where the Øresund Bridge ends?",
        "Copenhagen",
        "Stockholm",
    ),
    ("Which element has the symbol 'W'? Answer in English.", "Tungsten", "Tungsten"),
]


def _multi_trace(index: int) -> dict[str, Any]:
    question, truth, answer = QUESTIONS[index]
    events: list[Event] = [
        {"role": "user", "content": question},
        {
            "role": "Orchestrator (thought)",
            "content": "Plan:\n1. WebSurfer searches.\n2. Assistant checks the facts.\n3. Answer.",
        },
        {"role": "Orchestrator (-> WebSurfer)", "content": f"Please search the web: {question}"},
        {
            "role": "WebSurfer",
            "content": f"I typed '{question}' into the search bar 🔎 and "
            f"read the first result. It says the answer is **{answer}**.",
        },
        {"role": "Orchestrator (thought)", "content": "The WebSurfer found an answer; done."},
        {"role": "Orchestrator (final answer)", "content": answer},
    ]
    metadata = {
        "name": f"question {index}",
        "question_id": f"q{index}",
        "ground_truth": truth,
        "reward": int(truth == answer),
        "mistake_agent": None if truth == answer else "WebSurfer",
    }
    return {"messages": events, "metadata": metadata}


def multi_agent_dataset() -> DemoDataset:
    traces = [_multi_trace(i) for i in range(len(QUESTIONS))]
    accuracy = sum(t["metadata"]["reward"] for t in traces) / len(traces)
    metadata = {
        "benchmark": "GAIA-like (demo)",
        "system": "Magentic-One-like team",
        "accuracy": round(accuracy, 3),
    }
    return DemoDataset("demo-multi-agent", metadata, traces)


def demo_datasets() -> list[DemoDataset]:
    return [airline_dataset(), swe_dataset(), multi_agent_dataset()]


def demo_user_reset(*, organization: Organization) -> Any:
    """The demo user (demo / demo), owner of the organization and a superuser (the admin is
    for superusers only); its password reset."""
    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    user.set_password(PASSWORD)
    user.is_staff = user.is_superuser = True
    user.save()
    Membership.objects.update_or_create(
        user=user, organization=organization, defaults={"role": Membership.Role.OWNER}
    )
    return user


def demo_present() -> bool:
    """Every demo dataset is in the database (then `load_demo --if-absent` keeps them, and
    their ids: links to them keep working)."""
    names = {d.name for d in demo_datasets()}
    found = Dataset.objects.filter(organization__slug=ORG_SLUG, name__in=names)
    return found.count() == len(names)


def load_demo(*, with_user: bool = True) -> list[ImportResult]:
    """Replace the demo datasets of organization "demo"; reset the demo user."""
    datasets = demo_datasets()
    with transaction.atomic():
        organization = organization_get_or_create(slug=ORG_SLUG)
        Dataset.objects.filter(
            organization=organization, name__in=[d.name for d in datasets]
        ).delete()
        results = [
            trace_import(
                organization=organization,
                dataset_name=d.name,
                files=[(f"{d.name}.jsonl", io.BytesIO(d.jsonl()))],
            )
            for d in datasets
        ]
        if with_user:
            demo_user_reset(organization=organization)
    return results
