"""The trace page reads like a story (issue 11 items 2 and 4, issue 15 item 4): a turn that
only calls tools shows its call, the system prompt starts folded, the same call made again
and again is grouped, every "Show all" can be folded again, and the tool errors and the
failure step a log names are marked. Real logs from ../shared/data."""

import json

import pytest

from tests.conftest import SHARED_DATA, as_file
from traces.models import Block, Trace
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db


def imported(org, relative: str) -> Trace:
    path = SHARED_DATA / relative
    with path.open("rb") as stream:
        trace_import(organization=org, dataset_name=relative, files=[(path.name, stream)])
    return Trace.objects.filter(dataset__name=relative).order_by("index").first()


def page(client, trace: Trace, query: str = "") -> str:
    response = client.get(f"/t/{trace.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_it_marks_each_tool_error_the_log_names(org, member_client):
    trace = imported(org, "inspect-ai/log_tool_call_error.json")
    errors = Block.objects.filter(trace=trace, is_error=True).count()
    assert errors == 11
    html = page(member_client, trace)
    assert html.count(">tool error</span>") == errors
    # The log lost the turns that made these calls: each stand-in turn and call says so.
    assert html.count(">not in the log</span>") == 2 * errors


def test_it_marks_the_step_who_and_when_names_as_the_failure(org, member_client):
    trace = imported(org, "who-and-when/hand-crafted-1.json")
    failing = trace.metadata["failure"]["block"]
    html = page(member_client, trace, f"?focus={failing}")
    article = html[html.index(f'id="{failing}"') :]
    article = article[: article.index("</article>")]
    assert ">failure starts here</span>" in article
    assert "WebSurfer clicks on an irrelevant website" in article  # the reason, as its title
    # mistake_step 12 counts from 0: the page's row 13 (rows count from 1) says so.
    assert "the log&#x27;s step 12 (counted from 0)" in article
    assert f'class="row-num" href="#{failing}" title="Row 13">13<' in html
    assert html.count(">failure starts here</span>") == 1


def test_a_turn_that_only_calls_tools_shows_its_call_not_no_text(org, member_client):
    trace = imported(org, "inspect-ai/log_tool_call_error.json")
    html = page(member_client, trace)
    assert "no text" not in html
    assert 'class="kind-label">call</span>' in html.lower() or "tool-name" in html


def test_the_same_call_made_again_and_again_is_grouped_with_its_count(org, member_client):
    # The Inspect sample's agent calls bash with the same (redacted) arguments 11 times.
    trace = imported(org, "inspect-ai/log_tool_call_error.json")
    html = page(member_client, trace)
    assert '<span class="repeat-count"' in html and "&times;11" in html
    assert '<details class="repeats">' in html
    assert "the same call 10 more times" in html
    assert '<span class="badge warn">10 tool errors</span></summary>' in html
    # Nothing is dropped: every call and result is still on the page, folded.
    assert html.count('class="block k-call') == 11


def test_different_calls_are_not_grouped(org, member_client):
    trace = imported(org, "swe-agent/demo_function_calling.traj")
    html = page(member_client, trace)
    assert '<details class="repeats">' not in html


def test_the_system_prompt_starts_folded(org, member_client):
    trace = imported(org, "swe-agent/demo_function_calling.traj")
    html = page(member_client, trace)
    first = html[html.index('class="block k-message role-system') :]
    assert first.index('<details class="system-fold"><summary>system prompt') < first.index(
        "autonomous programmer"
    )


def test_show_all_can_be_folded_again(org, member_client):
    trace = imported(org, "swe-agent/demo_function_calling.traj")
    block = Block.objects.filter(trace=trace, sub_type="MESSAGE").order_by("number").first()
    url = f"/t/{trace.pk}/b/{block.pk}/full"
    headers = {"HX-Request": "true", "HX-Target": f"body-{block.pk}"}
    whole = member_client.get(url, headers=headers).content.decode()
    assert "fold-again" in whole and f"{url}?fold=1" in whole
    folded = member_client.get(f"{url}?fold=1", headers=headers).content.decode()
    assert "fold-again" not in folded and "Show all" in folded


def test_big_json_metadata_is_pretty_printed_under_a_fold(org, member_client):
    trace = imported(org, "tau2-bench/gpt-4.1_telecom_no-user_4trials_5tasks.json")
    reward_info = trace.metadata["reward_info"]
    assert isinstance(reward_info, dict)
    html = page(member_client, trace)
    item = html[html.index("<dt>reward_info</dt>") :]
    item = item[: item.index("</div>")]
    assert "<details><summary>" in item
    shown = item[item.index('<pre class="text">') :]
    # indented, one key a line
    assert "\n  &quot;reward&quot;: " in shown or '\n  "reward": ' in shown


def test_calls_that_differ_beyond_their_preview_are_not_grouped(org, member_client):
    # Attacker review: the grouping compared the previews, so arguments that differ past
    # the fold ("A" * 3000 + a different tail) were shown as the same call four times.
    events = [{"role": "user", "content": "go"}]
    for n in range(4):
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": "run", "arguments": json.dumps({"cmd": "A" * 3000 + f" TAIL{n}"})}}  # fmt: skip  # noqa: E501
        events += [{"role": "assistant", "content": None, "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": f"c{n}", "content": "ok"}]  # fmt: skip
    trace_import(organization=org, dataset_name="spoof", files=[as_file(json.dumps(events))])
    html = page(member_client, Trace.objects.get(dataset__name="spoof"))
    assert '<details class="repeats">' not in html
    assert html.count('class="block k-call') == 4
