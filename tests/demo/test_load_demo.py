"""`manage.py load_demo`: deterministic demo datasets through the real import path."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from demo import generator as demo
from traces.models import Block, Dataset, Image, Membership, SubType, Trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db]  # slow: generates the whole demo

EXPECTED = {"demo-airline-agent": 30, "demo-swe-agent": 6, "demo-multi-agent": 3}


def load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def snapshot() -> list[tuple]:
    blocks = Block.objects.filter(trace__organization__slug="demo").order_by(
        "trace__dataset__name", "trace__index", "created_at", "id"
    )
    return [
        (b.trace.dataset.name, b.trace.index, b.sub_type, b.payload, b.raw)
        for b in blocks.select_related("trace__dataset")
    ]


def test_load_demo_creates_the_datasets() -> None:
    output = load()
    datasets = Dataset.objects.filter(organization__slug="demo")
    assert {d.name: d.traces.count() for d in datasets} == EXPECTED
    assert "Log in at http://127.0.0.1:8000/ as demo / demo" in output
    assert "demo-airline-agent: 30 traces" in output
    airline = datasets.get(name="demo-airline-agent")
    assert airline.metadata["benchmark"] == "tau-bench airline (demo)"
    rewards = list(airline.traces.values_list("reward", flat=True))
    assert set(rewards) == {0.0, 1.0}
    assert 0.4 <= sum(rewards) / len(rewards) <= 0.8
    assert airline.metadata["accuracy"] == round(sum(rewards) / len(rewards), 3)
    runs = {(t.metadata["task_id"], t.metadata["trial"]) for t in airline.traces.all()}
    assert len(runs) == 30 and len({task for task, _ in runs}) == 10


def test_demo_content_covers_every_kind() -> None:
    load()
    blocks = Block.objects.filter(trace__organization__slug="demo")
    assert set(blocks.values_list("sub_type", flat=True)) == set(SubType.values)
    messages = [b.payload for b in blocks.filter(sub_type=SubType.MESSAGE)]
    roles = {p["role"] for p in messages}
    assert {"system", "user", "assistant", "Orchestrator (thought)"} <= roles
    assert any("```" in (p["content"] or "") for p in messages if isinstance(p["content"], str))
    # The event (in `raw` of its MESSAGE) had arguments as JSON strings and as objects;
    # the TOOL_CALL payloads hold them parsed.
    events = [b.raw for b in blocks.filter(sub_type=SubType.MESSAGE) if b.raw.get("tool_calls")]
    raw_args = [call["function"]["arguments"] for e in events for call in e["tool_calls"]]
    assert any(isinstance(a, str) for a in raw_args) and any(isinstance(a, dict) for a in raw_args)
    calls = blocks.filter(sub_type=SubType.TOOL_CALL)
    assert all(isinstance(b.payload["arguments"], dict) for b in calls)
    outputs = [b.payload["output"] for b in blocks.filter(sub_type=SubType.TOOL_RESULT)]
    assert max(len(o.encode()) for o in outputs) > 100_000
    assert any("\r\n" in o for o in outputs)
    assert any(o.startswith("{") for o in outputs)
    assert any("✈️" in (p["content"] or "") for p in messages if isinstance(p["content"], str))
    assert Trace.objects.filter(organization__slug="demo", reward__isnull=False).exists()
    assert Image.objects.count() > 0
    image = Image.objects.get()
    assert image.mime_type == "image/png" and bytes(image.data) == demo.tiny_png()


def test_load_demo_twice_gives_the_same_content() -> None:
    load()
    first, counts = snapshot(), (Trace.objects.count(), Block.objects.count())
    load()
    assert (Trace.objects.count(), Block.objects.count()) == counts
    assert Dataset.objects.filter(organization__slug="demo").count() == 3
    assert snapshot() == first


def test_demo_user_can_log_in() -> None:
    load()
    user = authenticate(username="demo", password="demo")
    assert user is not None
    membership = Membership.objects.get(user=user, organization__slug="demo")
    assert membership.role == Membership.Role.OWNER
    assert user.is_superuser and user.is_staff  # `make run` shows /admin/ to the demo login
    user.set_password("changed")
    user.save()
    load()  # resets the password
    assert authenticate(username="demo", password="demo") is not None


def test_tiny_png_is_a_png() -> None:
    data = demo.tiny_png()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


def test_if_absent_keeps_the_demo_and_its_ids_between_runs() -> None:
    first = StringIO()
    call_command("load_demo", "--if-absent", stdout=first)
    assert "Loaded 3 datasets" in first.getvalue()
    ids = sorted(Trace.objects.values_list("id", flat=True))
    again = StringIO()
    call_command("load_demo", "--if-absent", stdout=again)
    assert "The demo datasets are there already: kept, with their ids" in again.getvalue()
    assert sorted(Trace.objects.values_list("id", flat=True)) == ids


def test_the_demo_user_may_use_the_admin(client) -> None:
    call_command("load_demo", "--if-absent", stdout=StringIO())
    assert client.login(username=demo.USERNAME, password=demo.PASSWORD)
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/traces/dataset/").status_code == 200
