"""The dataset page (/d/<id>/): accuracy, histogram, rewards per task, the trace list and
its filters, pagination with htmx, export."""

import json
import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from tests.conftest import as_file, client_for, user_in
from tests.explorer.conftest import chat, html_problems, import_lines
from traces.models import Block, Dataset
from traces.services.annotations import block_extra_update, trace_extra_update
from traces.services.imports import trace_import


def url(dataset, **params):
    base = reverse("dataset", args=[dataset.pk])
    if not params:
        return base
    return base + "?" + "&".join(f"{k}={v}" for k, v in params.items())


def cell_texts(row: str) -> list[str]:
    """The text of each <td> of a table row."""
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]


def trace_names(html: str) -> list[str]:
    """The names in the trace table, in order."""
    table = html[html.index('<div id="traces"') :]
    link = r'<td class="trace-name"><a class="ellipsis" href="[^"]+" title="[^"]*">([^<]+)</a>'
    return re.findall(link, table)


class _Svg(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bars, self.titles, self.in_title = [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "g" and "bar" in (a.get("class") or "").split():
            self.bars.append(int(a["data-count"]))
        self.in_title = tag == "title"

    def handle_data(self, data):
        if self.in_title and data.strip():
            self.titles.append(data.strip())
            self.in_title = False


@pytest.fixture
def big_dataset(org):
    """120 traces; every third has reward 1, every third 0, the rest none; task_id t0..t9."""
    traces = []
    for i in range(120):
        reward = [1, 0, None][i % 3]
        meta = {"name": f"run-{i:03d}", "task_id": f"t{i % 10}", "reward": reward}
        if reward is None:
            del meta["reward"]
        word = "zebra" if i % 40 == 0 else "horse"
        tools = ("lookup",) if i % 2 else ("lookup", "write_file")
        traces.append({"messages": chat(f"Find the {word} number {i}", *tools), "metadata": meta})
    return import_lines(org, "big", traces, metadata={"model": "m"})


def test_reported_and_computed_accuracy(member_client, tasks_dataset):
    response = member_client.get(url(tasks_dataset))
    assert response.status_code == 200
    html = response.content.decode()
    said = "computed 0.333: 2 of the 6 traces with a reward succeeded (reward 1), of 6 traces"
    assert said in html
    reported = html[html.index(">reported<") :]
    assert "0.400" in reported.split("</div>")[1]
    assert "differs from the reported value by 0.067" in html
    # The other metadata keys, the accuracy not repeated among them.
    metadata = html[html.index('id="metadata-title"') :].split("</section>")[0]
    assert "benchmark" in metadata and "tau-bench" in metadata and "gpt-4o" in metadata
    assert ">accuracy<" not in metadata


def test_count_with_a_reward(member_client, big_dataset):
    html = member_client.get(url(big_dataset)).content.decode()
    said = "computed 0.500: 40 of the 80 traces with a reward succeeded (reward 1), of 120 traces"
    assert said in html
    assert "reports no <code>accuracy</code>" in html


def test_histogram_svg(member_client, tasks_dataset, org):
    svg = _Svg()
    svg.feed(member_client.get(url(tasks_dataset)).content.decode())
    assert svg.bars == [4, 2]  # four 0s, two 1s
    assert "reward 0: 4 traces" in svg.titles and "reward 1: 2 traces" in svg.titles
    partial = import_lines(
        org,
        "partial-credit",
        [{"messages": chat("q"), "metadata": {"reward": r}} for r in (0.05, 0.5, 0.55, 1, 1)],
    )
    svg = _Svg()
    svg.feed(member_client.get(url(partial)).content.decode())
    assert svg.bars == [1, 0, 0, 0, 0, 2, 0, 0, 0, 2]


def test_histogram_bars_are_drawn_with_attributes_not_styles(member_client, tasks_dataset):
    html = member_client.get(url(tasks_dataset)).content.decode()
    svg = html[html.index('<svg class="histogram"') :].split("</svg>")[0]
    assert 'role="img"' in svg and "<title" in svg and "<desc" in svg
    heights = [
        float(h)
        for h in re.findall(r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"', svg)
    ]
    assert heights[0] == pytest.approx(2 * heights[1])  # 4 vs 2
    assert "style" not in svg


GROUPS_FRAGMENT = {"HX-Request": "true", "HX-Target": "groups"}


def test_the_groups_table_loads_after_the_page_and_without_javascript(
    member_client, tasks_dataset
):
    page = member_client.get(url(tasks_dataset)).content.decode()
    placeholder = page[page.index('id="groups"') :].split("</section>")[0]
    assert 'hx-trigger="load"' in placeholder and 'href="?group="' in placeholder
    assert "pass@1" not in placeholder
    fragment = member_client.get(url(tasks_dataset), headers=GROUPS_FRAGMENT)
    assert "HX-Push-Url" not in fragment  # loading the table leaves the address alone
    no_js = member_client.get(url(tasks_dataset) + "?group=").content.decode()
    assert '<option value="task_id" selected>' in no_js and "pass@1" in no_js


def test_rewards_grouped_by_task(member_client, tasks_dataset):
    html = member_client.get(url(tasks_dataset), headers=GROUPS_FRAGMENT).content.decode()
    groups = html[html.index('id="groups"') :].split("</section>")[0]
    assert '<option value="task_id" selected>' in groups
    for head in ("pass@1", "pass@2", "pass@3", "pass^1", "pass^2", "pass^3"):
        assert head in groups
    assert "pass@4" not in groups
    row_a = groups[groups.index("?meta=task_id%3DA&amp;group=task_id") :].split("</tr>")[0]
    assert cell_texts(row_a) == [
        "3", "0.667", "0.667", "1.000", "1.000", "0.667", "0.333", "0.000",
    ]  # fmt: skip
    assert 'class="cell heat-4">1.000' in row_a and 'class="cell heat-0">0.000' in row_a
    footer = groups[groups.index("<tfoot>") :]
    assert cell_texts(footer) == [
        "", "0.333", "0.333", "0.500", "0.500", "0.333", "0.167", "0.000",
    ]  # fmt: skip


def test_one_trial_per_group_shows_no_pass_columns(member_client, org):
    traces = [
        {"messages": chat("q"), "metadata": {"instance_id": f"repo-{i}", "reward": i % 2}}
        for i in range(4)
    ]
    dataset = import_lines(org, "swe-like", traces)
    html = member_client.get(url(dataset), headers=GROUPS_FRAGMENT).content.decode()
    groups = html[html.index('id="groups"') :].split("</section>")[0]
    assert '<option value="instance_id" selected>' in groups
    assert "pass@1" not in groups and "One trial per instance_id" in groups
    assert groups.count('<th scope="row" class="group-name">') == 4


def test_group_by_another_key_with_htmx(member_client, tasks_dataset):
    response = member_client.get(
        url(tasks_dataset, group="trial"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="groups"
    )
    html = response.content.decode()
    assert "<html" not in html and html.lstrip().startswith('<section class="card groups-card"')
    assert '<option value="trial" selected>' in html
    assert "?meta=trial%3D0&amp;group=trial" in html
    assert 'id="traces"' not in html
    # An unknown key falls back to the default.
    html = member_client.get(url(tasks_dataset, group="nope")).content.decode()
    assert '<option value="task_id" selected>' in html


def test_group_link_filters_the_trace_list(member_client, tasks_dataset):
    html = member_client.get(url(tasks_dataset, meta="task_id%3DA", group="task_id")).content
    names = trace_names(html.decode())
    assert names == ["task A trial 0", "task A trial 1", "task A trial 2"]


def test_trace_rows(member_client, tasks_dataset):
    html = member_client.get(url(tasks_dataset)).content.decode()
    table = html[html.index('<div id="traces"') :]
    first = table[table.index("<tbody>") :].split("</tr>")[0]
    trace = tasks_dataset.traces.get(index=0)
    assert f'href="{reverse("trace", args=[trace.pk])}"' in first
    assert "Task A: please book flight 0" in first
    assert ">7<" in first  # blocks: user, assistant, 2 calls, 2 results, answer
    assert re.findall(r'tool-chip mono"[^>]*>([^<]+)<', first) == ["book", "search_flights"]
    assert '<span class="badge reward good">1</span>' in first
    second = table[table.index("<tbody>") :].split("</tr>")[1]
    assert '<span class="badge reward bad">0</span>' in second


def test_pagination_htmx_partial_and_plain_page(member_client, big_dataset):
    html = member_client.get(url(big_dataset)).content.decode()
    assert trace_names(html)[:2] == ["run-000", "run-001"] and len(trace_names(html)) == 50
    assert "1–50 of 120 traces" in html
    page2 = f"{url(big_dataset)}?page=2"
    assert f'hx-get="{page2}"' in html and 'hx-push-url="true"' in html
    assert f'href="{page2}#traces"' in html  # works without script too
    partial = member_client.get(
        url(big_dataset, page=2), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="traces"
    )
    fragment = partial.content.decode()
    assert "<html" not in fragment and fragment.lstrip().startswith('<div id="traces"')
    assert trace_names(fragment)[0] == "run-050" and len(trace_names(fragment)) == 50
    assert "51–100 of 120 traces" in fragment
    assert partial["HX-Push-Url"] == f"{url(big_dataset)}?page=2"
    form_like = member_client.get(
        url(big_dataset, q="", reward="1", reward_min="", meta="", annotated="", sort="index"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="traces",
    )
    assert form_like["HX-Push-Url"] == f"{url(big_dataset)}?reward=1"
    plain = member_client.get(url(big_dataset, page=3)).content.decode()
    assert "<html" in plain and trace_names(plain) == [f"run-{i:03d}" for i in range(100, 120)]
    last = member_client.get(url(big_dataset, page=99)).content.decode()
    assert trace_names(last)[0] == "run-100"  # past the end: the last page
    descending = member_client.get(url(big_dataset, sort="-index")).content.decode()
    assert trace_names(descending)[0] == "run-119"


def test_filters_compose_and_stay_in_the_page_links(member_client, big_dataset):
    response = member_client.get(url(big_dataset, reward="1", meta="task_id%3Dt3"))
    names = trace_names(response.content.decode())
    assert names == ["run-003", "run-033", "run-063", "run-093"]
    html = member_client.get(url(big_dataset, reward="0")).content.decode()
    assert "1–40 of 40 traces matching the filters" in html
    html = member_client.get(url(big_dataset, reward="none")).content.decode()
    assert "of 40 traces" in html
    assert "page=2" not in html
    html = member_client.get(url(big_dataset, reward="gte", reward_min="0.5")).content.decode()
    assert "1–40 of 40 traces" in html
    html = member_client.get(url(big_dataset, reward_min="0")).content.decode()
    assert "1–50 of 80 traces" in html  # a bound alone means ≥
    assert "?reward=gte&amp;reward_min=0&amp;page=2" in html  # the filters stay in the links
    html = member_client.get(url(big_dataset, reward="gte", reward_min="abc")).content.decode()
    assert "is not a number" in html and "of 120 traces" in html
    html = member_client.get(url(big_dataset, meta="no-equals-sign")).content.decode()
    assert "key=value" in html and "of 120 traces" in html


def test_full_text_search(member_client, big_dataset):
    html = member_client.get(url(big_dataset, q="zebra")).content.decode()
    assert trace_names(html) == ["run-000", "run-040", "run-080"]
    html = member_client.get(url(big_dataset, q="zebra", reward="0")).content.decode()
    assert trace_names(html) == ["run-040"]
    html = member_client.get(url(big_dataset, q="write_file", meta="task_id%3Dt1")).content
    assert trace_names(html.decode()) == []  # odd indexes only call lookup
    partial = member_client.get(
        url(big_dataset, q="zebra"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="traces"
    )
    assert len(trace_names(partial.content.decode())) == 3


def test_annotated_filter(member_client, tasks_dataset):
    traces = list(tasks_dataset.traces.order_by("index"))
    trace_extra_update(trace=traces[4], extra={"reviewed": True})
    block = Block.objects.filter(trace=traces[1]).order_by("created_at", "id").last()
    block_extra_update(block=block, extra={"note": "wrong tool"})
    html = member_client.get(url(tasks_dataset, annotated="yes")).content.decode()
    assert trace_names(html) == ["task A trial 1", "task B trial 1"]
    html = member_client.get(url(tasks_dataset, annotated="no")).content.decode()
    assert len(trace_names(html)) == 4


def test_export_streams_jsonl(member_client, tasks_dataset):
    response = member_client.get(reverse("dataset-export", args=[tasks_dataset.pk]))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == 'attachment; filename="airline-run.chat.jsonl"'
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert lines[0] == {"metadata": tasks_dataset.metadata}
    assert len(lines) == 7 and lines[1]["messages"][0]["content"] == "Task A: please book flight 0"
    blocks = member_client.get(
        reverse("dataset-export", args=[tasks_dataset.pk]), {"format": "blocks"}
    )
    assert blocks["Content-Disposition"].endswith('airline-run.blocks.jsonl"')
    lines = b"".join(blocks.streaming_content).splitlines()
    assert len(json.loads(lines[1])["blocks"]) == 7
    bad = member_client.get(reverse("dataset-export", args=[tasks_dataset.pk]), {"format": "x"})
    assert bad.status_code == 400


def test_actions(member_client, tasks_dataset, member):
    html = member_client.get(url(tasks_dataset)).content.decode()
    assert f'href="{reverse("upload")}?dataset={tasks_dataset.pk}"' in html
    assert reverse("dataset-export", args=[tasks_dataset.pk]) + "?format=chat" in html
    assert reverse("dataset-export", args=[tasks_dataset.pk]) + "?format=blocks" in html
    assert "/admin/" not in html and "Make public" not in html  # owners' call
    member.is_staff = True  # staff is not enough: the admin is for superusers
    member.save()
    assert "/admin/" not in member_client.get(url(tasks_dataset)).content.decode()
    member.is_superuser = True
    member.save()
    html = member_client.get(url(tasks_dataset)).content.decode()
    assert reverse("admin:traces_dataset_change", args=[tasks_dataset.pk]) in html


def test_viewer_reads_but_is_not_offered_upload(viewer_client, tasks_dataset):
    html = viewer_client.get(url(tasks_dataset)).content.decode()
    assert "computed 0.333" in html and "Upload more files" not in html


def test_another_organizations_dataset_is_not_found(rival_org, tasks_dataset):
    outsider = client_for(user_in(rival_org, "mallory"))
    assert outsider.get(url(tasks_dataset)).status_code == 404
    export = outsider.get(reverse("dataset-export", args=[tasks_dataset.pk]))
    assert export.status_code == 404
    assert outsider.get(reverse("dataset", args=["ds_nope"])).status_code == 404
    tasks_dataset.is_public = True
    tasks_dataset.save()
    html = outsider.get(url(tasks_dataset)).content.decode()
    assert "computed 0.333" in html and "Upload more files" not in html


def test_no_script_from_data(member_client, xss_dataset):
    response = member_client.get(url(xss_dataset))
    html = response.content.decode()
    assert html_problems(html) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt; hello" in html  # a first user message
    assert "javascript:alert(1)</span>" in html  # a tool name
    for params in (
        {"group": "javascript:alert(1)"},
        {"group": "task_id", "meta": "task_id%3D%3Cscript%3E"},
        {"q": "%3Cscript%3E", "reward": "gte", "reward_min": "%3Cimg%3E"},
    ):
        for headers in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "traces"}):
            page = member_client.get(url(xss_dataset, **params), **headers)
            assert html_problems(page.content.decode()) == [], params
        groups = member_client.get(
            url(xss_dataset, **params), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="groups"
        )
        assert html_problems(groups.content.decode()) == []


def test_query_count_does_not_grow_with_the_traces(member_client, org):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n in (3, 60):
        traces = [
            {"messages": chat("q", "a", "b"), "metadata": {"task_id": f"t{i % 4}", "reward": 1}}
            for i in range(n)
        ]
        dataset = import_lines(org, f"size-{n}", traces)
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(url(dataset)).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_an_owner_makes_a_dataset_public_and_others_then_see_it(
    owner_client, tasks_dataset, rival_org, client
):
    outsider = client_for(user_in(rival_org, "olga"))
    assert outsider.get(url(tasks_dataset)).status_code == 404
    assert client.get(url(tasks_dataset)).status_code == 302  # signed out: sign in first
    assert "Make public" in owner_client.get(url(tasks_dataset)).content.decode()
    visibility = f"/d/{tasks_dataset.pk}/visibility"
    response = owner_client.post(visibility, {"public": "1"})
    assert response.status_code == 302 and response["Location"] == url(tasks_dataset)
    tasks_dataset.refresh_from_db()
    assert tasks_dataset.is_public
    assert outsider.get(url(tasks_dataset)).status_code == 200
    assert client.get(url(tasks_dataset)).status_code == 200  # signed out too
    assert outsider.post(visibility, {"public": "0"}).status_code == 404  # reads, not owns
    assert client.post(visibility, {"public": "0"}).status_code == 302  # to the sign-in page
    assert owner_client.post(visibility, {"public": "yes"}).status_code == 400
    owner_client.post(visibility, {"public": "0"})
    assert outsider.get(url(tasks_dataset)).status_code == 404


@pytest.mark.parametrize("who", ["viewer_client", "member_client"])
def test_only_owners_change_visibility(who, request, tasks_dataset):
    refused = request.getfixturevalue(who).post(
        f"/d/{tasks_dataset.pk}/visibility", {"public": "1"}
    )
    assert refused.status_code == 403 and "Not allowed" in refused.content.decode()
    tasks_dataset.refresh_from_db()
    assert not tasks_dataset.is_public


@pytest.mark.parametrize("reported", [1e308, -1e13, "1e308", "1e400%", 2**63 - 1])
def test_a_reported_accuracy_out_of_range_is_shown_as_given(member_client, org, reported):
    """Like a reward, a metric counts as a number only within ±1e12 (traces.validation):
    one stored before the rule (which now refuses it) is shown as given."""
    dataset = import_lines(org, "claims", [{"messages": chat("q"), "metadata": {"reward": 1}}])
    Dataset.objects.filter(pk=dataset.pk).update(metadata={"accuracy": reported})
    html = member_client.get(url(dataset)).content.decode()
    shown = html[html.index(">reported<") :].split("</div>")[1]
    assert f'<span class="small">{reported}</span>' in shown
    assert "differs from the reported value" not in html


def test_a_row_shows_four_tool_chips_and_names_the_rest_on_hover(member_client, org):
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": f"tool_{n}", "arguments": "{}"}}
        for n in range(7)
    ]
    events = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
              "tool_calls": calls}]  # fmt: skip
    events += [{"role": "tool", "tool_call_id": f"c{n}", "content": "ok"} for n in range(7)]
    trace = trace_import(
        organization=org, dataset_name="many tools", files=[as_file(json.dumps(events))]
    )
    dataset = Dataset.objects.get(organization=org, name="many tools")
    html = member_client.get(f"/d/{dataset.pk}/").content.decode()
    assert html.count('class="tool-chip mono"') == 4 and "+3 more" in html
    assert 'title="tool_0, tool_1, tool_2, tool_3, tool_4, tool_5, tool_6"' in html
    assert trace.traces == 1
