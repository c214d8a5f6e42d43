"""Numbers as a reader expects them (explorer/templatetags/numbers.py): rounded floats,
grouped big numbers, costs in dollars, durations in minutes, the exact value on hover;
what is stored and exported keeps every digit."""

import json
import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from explorer.templatetags.numbers import (
    cost_text,
    duration_text,
    metadata_number,
    number_text,
)
from tests.conftest import SHARED_DATA
from tests.explorer.conftest import chat, import_traces
from traces.models import Trace
from traces.services.imports import trace_import

TAU2 = SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.13041750000000002, "0.1304"),
        (230.32911111, "230.3291"),
        (7.996979875009856, "7.997"),
        (0.000012345678, "0.00001235"),
        (-0.5, "-0.5"),
        (1.0, "1"),
        (0.0, "0"),
        (1234.5678, "1234.57"),
        (12345.678901, "12\u2009345.68"),
        (201360, "201\u2009360"),
        (1567, "1567"),
        (-20000, "-20\u2009000"),
        (3e20, "3e+20"),
        (1.5e-14, "1.5e-14"),
        (float("inf"), "inf"),
        (True, "true"),
    ],
)
def test_number_text_rounds_floats_and_groups_big_numbers(value, shown):
    assert number_text(value) == shown


def test_costs_and_durations_read_as_money_and_time():
    assert cost_text(0.13041750000000002) == "$0.1304"
    assert cost_text(0.0) == "$0"
    assert cost_text(0.034873999999999995) == "$0.0349"
    assert cost_text(0.0000123456) == "$0.000012"
    assert cost_text(1234.5) == "$1,234.50"
    assert cost_text(None) == ""
    assert duration_text(230.3291) == "3 min 50 s"
    assert duration_text(7.996979875009856) == "8.0 s"
    assert duration_text(7260) == "2 h 01 min"


def test_absurd_costs_and_durations_stay_short():
    """A hostile file's usage figures: no hundred-digit cell."""
    assert cost_text(1e300) == "$1e+300"
    assert duration_text(1e300) == "1e+300 s"
    assert duration_text(5e8) == "500\u2009000\u2009000 s"


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("agent_cost", 0.13041750000000002, "$0.1304"),  # tau2-bench
        ("user_cost", 0.0, "$0"),
        ("duration", 230.3291, "3 min 50 s"),  # tau2-bench
        ("total_time", 18.517, "18.5 s"),  # Inspect
        ("working_time", 18.36, "18.4 s"),
        ("latency_ms", 1500, "1.5 s"),
        ("total_tokens", 201360, "201\u2009360"),  # ToolBench
        ("input_tokens", 1234, "1\u2009234"),  # tokens are grouped from 1 000
        ("seed", 4242424, "4242424"),  # a name, not a count: never grouped
        ("sample_id", 123456, "123456"),
        ("trial", 3, "3"),
        ("steps", 123456, "123\u2009456"),
        ("reward", 0.6666666666666666, "0.6667"),
        ("start_time", 1752764458.49, "1752764458.49"),  # a moment, not a duration
        ("duration", 1752764458.49, "1\u2009752\u2009764\u2009458.49"),  # no 3-year run
        ("duration", -1.5, "-1.5"),
        ("agent_cost", -0.25, "-0.25"),
    ],
)
def test_metadata_numbers_read_by_their_key(key, value, shown):
    assert metadata_number(key, value) == shown


@pytest.mark.parametrize("value", ["0.1304", True, None, [1.23456], {"a": 1.23456}])
def test_what_is_not_a_number_is_left_to_the_page(value):
    assert metadata_number("cost", value) is None


def test_the_filters_in_a_template():
    template = Template("{{ n|number }} {{ c|metric:'agent_cost' }} {{ s|number }}")
    shown = template.render(Context({"n": 1759244, "c": 0.034873999999999995, "s": "x"}))
    assert shown == "1\u2009759\u2009244 $0.0349 x"


def trace_chips(html: str) -> dict[str, tuple[str, str]]:
    """The header's metadata chips: key -> (text shown, title)."""
    found = re.findall(r"<dt>([^<]*)</dt>\s*<dd(?: title=\"([^\"]*)\")?>([^<]*)</dd>", html)
    return {key: (text, title) for key, title, text in found}


def test_the_trace_header_rounds_its_chips_and_keeps_the_exact_value_in_the_title(
    member_client, org
):
    metadata = {
        "agent_cost": 0.13041750000000002, "duration": 230.32911111111111,
        "total_tokens": 1759244, "seed": 4242424, "note": "0.13041750000000002",
    }  # fmt: skip
    (trace,) = import_traces(org, "numbers", [{"messages": chat("hi"), "metadata": metadata}])
    chips = trace_chips(member_client.get(f"/t/{trace.pk}/").content.decode())
    assert chips["agent_cost"] == ("$0.1304", "0.13041750000000002")
    assert chips["duration"] == ("3 min 50 s", "230.3291111111111")
    assert chips["total_tokens"] == ("1\u2009759\u2009244", "1759244")
    assert chips["seed"] == ("4242424", "")  # shown as written: no title
    assert chips["note"] == ("0.13041750000000002", "")  # a string is text, not a number
    # Stored and exported as they were.
    assert Trace.objects.get(pk=trace.pk).metadata == metadata
    export = member_client.get(reverse("dataset-export", args=[trace.dataset_id]))
    exported = json.loads(b"".join(export.streaming_content).splitlines()[-1])
    assert exported["metadata"]["agent_cost"] == 0.13041750000000002


def test_a_real_tau2_trace_header_shows_cost_and_duration_as_a_reader_expects(member_client, org):
    if not TAU2.is_file():
        pytest.skip(f"{TAU2} is absent: the real benchmark files are not here")
    with TAU2.open("rb") as handle:
        trace_import(organization=org, dataset_name="telecom", files=[(TAU2.name, handle)])
    simulations = json.loads(TAU2.read_text())["simulations"]
    first = Trace.objects.get(dataset__name="telecom", index=0)
    stored = simulations[0]
    chips = trace_chips(member_client.get(f"/t/{first.pk}/").content.decode())
    assert chips["agent_cost"] == (cost_text(stored["agent_cost"]), repr(stored["agent_cost"]))
    assert chips["duration"] == (duration_text(stored["duration"]), repr(stored["duration"]))
    assert re.fullmatch(r"\$0\.\d{1,4}", chips["agent_cost"][0])
    assert re.fullmatch(r"(\d+\.\d s|\d+ min \d\d s)", chips["duration"][0])


def test_the_dataset_metadata_panel_rounds_numbers_with_the_exact_value_on_hover(
    member_client, org
):
    lines = [{"metadata": {"mean_cost": 0.13041750000000002, "seed": 300, "runs": 123456}},
             {"messages": chat("hi")}]  # fmt: skip
    (trace,) = import_traces(org, "panel", lines)
    html = member_client.get(f"/d/{trace.dataset_id}/").content.decode()
    assert re.search(r'title="0.13041750000000002">\s*\$0.1304\s*</dd>', html)
    assert re.search(r'<dd class="value-number">\s*300\s*</dd>', html)
    assert re.search(r'title="123456">\s*123\u2009456\s*</dd>', html)


def test_a_trace_head_shows_its_tokens_cost_and_duration_as_the_list_does(member_client, org):
    """The trace page named no token count where the list had one (researcher review)."""
    (trace,) = import_traces(org, "usage", [{"messages": chat("hi")}])
    Trace.objects.filter(pk=trace.pk).update(
        input_tokens=12000, output_tokens=345, cost_usd=0.01234, duration_seconds=75.5
    )
    html = member_client.get(f"/t/{trace.pk}/").content.decode()
    stats = re.findall(r'<span class="stat usage" title="([^"]*)"><b>([^<]*)</b>', html)
    assert [value for _, value in stats] == ["12\u2009345", "$0.0123", "1 min 16 s"]
    assert stats[0][0] == "tokens: in 12\u2009000, out 345"
