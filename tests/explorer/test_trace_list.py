"""The dataset page's trace list as a researcher works in it (issue 11 items 2, 8, 9):
task and trial columns, sortable headers, several filters at once, search hits that lead
to the block, and the export, pass@k and J/K following the list."""

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from django.urls import reverse

from tests.explorer.conftest import chat, html_problems, import_lines
from traces.models import Block
from traces.services.imports import trace_import

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TAU2_TRIALS = "tau2-bench/gpt-4.1_telecom_no-user_4trials_5tasks.json"  # 5 tasks x 4 trials
TAU2_ERRORS = "tau2-bench/telecom_llm_agent_gpt-4o_user_gpt-4o_2025-08-10.json"
NO_USAGE = "invariant-explorer/sample_data.jsonl"  # 3 traces, no usage figures


def real(org, *names: str):
    paths = [DATA / name for name in names]
    if not all(p.exists() for p in paths):
        pytest.skip("../shared/data is not here")
    files = [(p.name, p.open("rb")) for p in paths]
    return trace_import(organization=org, dataset_name="real", files=files).dataset


def page(client, dataset, query: str = "", **headers) -> str:
    response = client.get(reverse("dataset", args=[dataset.pk]) + query, **headers)
    assert response.status_code == 200
    return response.content.decode()


def rows(html: str) -> list[list[str]]:
    """The cells' text of each row of the trace table."""
    table = html[html.index('<table class="table trace-table">') :]
    table = table[: table.index("</table>")]
    body = table[table.index("<tbody>") :]
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        found.append([" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells])
    return found


def indexes(html: str) -> list[int]:
    return [int(r[0].removeprefix("#")) for r in rows(html)]  # "#12": the dataset's index


def header_link(html: str, label: str) -> str:
    match = re.search(r'<th scope="col" class="sortable[^"]*"[^>]*><a href="([^"]+)"[^>]*>'
                      + re.escape(label), html)  # fmt: skip
    assert match, label
    return match.group(1).replace("&amp;", "&")


@pytest.fixture
def tau2(org):
    return real(org, TAU2_TRIALS)


def test_task_and_trial_columns_come_from_the_metadata_of_real_runs(member_client, tau2):
    first = rows(page(member_client, tau2))[0]
    # index, name, task, trial, ...: tau2's task_id and trial, not an opaque id
    assert first[2] == "[mobile_data_issue]data_saver_mode_on|data_usage_exceeded[PERSONA:Easy]"
    assert first[3] == "3"


def test_every_column_header_sorts_with_a_real_link_and_htmx(member_client, tau2):
    html = page(member_client, tau2)
    href = header_link(html, "Task")
    assert href.endswith("?sort=task#traces")
    assert f'hx-get="{href.removesuffix("#traces")}"' in html
    by_task = rows(page(member_client, tau2, "?sort=task"))
    keys = [(r[2], int(r[3])) for r in by_task]
    assert keys == sorted(keys) and len(keys) == 20
    # Sorted by task already: the header now sorts the other way, and says so.
    html = page(member_client, tau2, "?sort=task")
    assert header_link(html, "Task").endswith("?sort=-task#traces")
    assert 'aria-sort="ascending"' in html
    down = [(r[2], int(r[3])) for r in rows(page(member_client, tau2, "?sort=-task"))]
    assert down == sorted(keys, reverse=True)
    for label in ("Reward", "Blocks", "Errors", "Trial", "Name", "#"):
        assert header_link(html, label)


def test_rewards_sort_with_the_unrewarded_last_both_ways(member_client, org):
    dataset = import_lines(org, "mixed", [
        {"messages": chat(f"q{i}"), "metadata": {"reward": r} if r is not None else {}}
        for i, r in enumerate([0.5, None, 1, 0, None, 0.25])
    ])  # fmt: skip
    up = indexes(page(member_client, dataset, "?sort=reward"))
    down = indexes(page(member_client, dataset, "?sort=-reward"))
    assert up == [3, 5, 0, 2, 1, 4]
    assert down == [2, 0, 5, 3, 4, 1]


def test_tool_errors_column_filter_and_sort_on_real_logs(member_client, org):
    dataset = real(org, TAU2_TRIALS, TAU2_ERRORS)
    html = page(member_client, dataset, "?errors=yes")
    found = rows(html)
    # tau2's one tool result flagged `error: true` (telecom run 12)
    assert [(r[2], int(r[7])) for r in found] == [
        ("[service_issue]overdue_bill_suspension[PERSONA:Easy]", 1)
    ]
    assert "1 trace matching the filters" in html
    assert len(rows(page(member_client, dataset, "?errors=no"))) == 39  # of 40
    by_errors = rows(page(member_client, dataset, "?sort=-errors"))
    assert [int(r[7]) for r in by_errors[:3]] == [1, 0, 0]
    assert [int(r[7]) for r in rows(page(member_client, dataset, "?sort=errors"))[:1]] == [0]


def test_several_filters_at_once_combine_with_and(member_client, tau2):
    task = "[mobile_data_issue]data_saver_mode_on|data_usage_exceeded[PERSONA:Easy]"
    query = "?" + "&".join([
        "meta=" + f"task_id={task}".replace("|", "%7C").replace("[", "%5B").replace("]", "%5D"),
        "meta=trial%3D1",
    ])  # fmt: skip
    html = page(member_client, tau2, query)
    assert [(r[2], r[3]) for r in rows(html)] == [(task, "1")]
    # both metadata inputs are given back, and one more for a third key
    assert html.count('name="meta"') == 3
    one_task = page(member_client, tau2, query.split("&")[0])
    assert len(rows(one_task)) == 4
    with_reward = page(member_client, tau2, "?reward_min=0.5&reward_max=1&meta=trial%3D0")
    assert [r[4] for r in rows(with_reward)] == ["1"] * 4  # trial 0 of 5 tasks, one failed
    nothing = page(member_client, tau2, "?reward_min=0.2&reward_max=0.8")
    assert "No trace matches the filters" in nothing
    bad = page(member_client, tau2, "?reward=gte&reward_max=lots")
    assert "“lots” is not a number" in bad and "of 20 traces" in bad


def test_the_filters_stay_in_the_sort_links_and_the_page_links(member_client, big_dataset):
    html = page(member_client, big_dataset, "?meta=task_id%3Dt3&errors=no&sort=-reward")
    href = header_link(html, "Reward")
    assert parse_qs(urlsplit(href).query) == {
        "meta": ["task_id=t3"], "errors": ["no"], "sort": ["reward"],
    }  # fmt: skip


def test_pass_at_k_follows_the_filter(member_client, tau2):
    groups = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "groups"}
    everything = page(member_client, tau2, "?group=task_id", **groups)
    assert "pass@4" in everything and "All 5 groups" in everything
    trials_0_1 = page(member_client, tau2, "?group=task_id&meta=trial%3D0", **groups)
    assert "pass@4" not in trials_0_1  # one trial per task left
    only = page(member_client, tau2, "?group=task_id&reward=0", **groups)
    assert "All 1 group" in only


@pytest.fixture
def big_dataset(org):
    from tests.explorer.test_dataset_view import big_dataset as make

    return make.__wrapped__(org)


def test_export_follows_the_filter_and_the_sort(member_client, tau2):
    export = reverse("dataset-export", args=[tau2.pk])
    html = page(member_client, tau2, "?reward=0&sort=-trial")
    assert f"{export}?format=chat&amp;reward=0&amp;sort=-trial" in html
    response = member_client.get(export, {"format": "blocks", "reward": "0", "sort": "-trial"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["metadata"]["trial"] for line in lines[1:]] == [3, 2, 1, 0]
    assert all(line["metadata"]["reward"] == 0 for line in lines[1:])
    whole = member_client.get(export, {"format": "chat"})
    assert len(b"".join(whole.streaming_content).splitlines()) == 21


def trace_links(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r'<td class="trace-name"><a class="ellipsis" href="([^"]+)"', html)]  # noqa: E501


def nav(client, href: str) -> tuple[str | None, str | None]:
    html = client.get(href).content.decode()
    found = []
    for rel in ("prev", "next"):
        match = re.search(rf'rel="{rel}" id="{rel}-trace" href="([^"]+)"', html)
        found.append(match.group(1).replace("&amp;", "&") if match else None)
    return found[0], found[1]


def test_j_and_k_walk_the_list_the_reader_sees(member_client, tau2):
    html = page(member_client, tau2, "?reward=0&sort=-trial")
    links = trace_links(html)
    assert len(links) == 4 and all("?list=" in link for link in links)
    assert unquote(links[0].split("?list=")[1]) == "reward=0&sort=-trial"
    # From the first, J (next) goes to the second of the list, and on to the last.
    walked = [links[0]]
    while True:
        _, nxt = nav(member_client, walked[-1])
        if nxt is None:
            break
        walked.append(nxt)
    assert walked == links
    prev, _ = nav(member_client, links[2])
    assert prev == links[1]
    # Without a list: the dataset's order by index, as before.
    plain = reverse("trace", args=[tau2.traces.get(index=5).pk])
    prev, nxt = nav(member_client, plain)
    assert prev == reverse("trace", args=[tau2.traces.get(index=4).pk])
    assert nxt == reverse("trace", args=[tau2.traces.get(index=6).pk])


def test_a_search_hit_shows_a_highlighted_snippet_and_links_to_the_block(member_client, org):
    hostile = "<img src=x onerror=alert(1)> the zebra <script>alert(2)</script> " + "x" * 5000
    dataset = import_lines(org, "hits", [
        {"messages": chat("nothing here"), "metadata": {}},
        {"messages": chat("a" * 3000 + " Find the ZEBRA now", answer=hostile), "metadata": {}},
    ])  # fmt: skip
    html = page(member_client, dataset, "?q=zebra")
    assert html_problems(html) == []
    assert "Where it matches" in html
    hits = re.findall(r'<a class="search-hit" href="([^"]+)"[^>]*>(.*?)</a>', html, re.S)
    assert len(hits) == 1
    href, snippet = hits[0]
    trace = dataset.traces.get(index=1)
    first = Block.objects.filter(trace=trace).order_by("created_at", "id").first()  # the user turn
    assert href.replace("&amp;", "&") == (
        f"/t/{trace.pk}/?focus={first.pk}&list=q%3Dzebra#{first.pk}"
    )
    assert "<mark>ZEBRA</mark>" in snippet and snippet.count("<mark>") == 1
    assert snippet.startswith('<span class="hit-kind') and "…" in snippet
    assert len(re.sub(r"<[^>]+>", "", snippet)) < 400  # a piece, not the 3000 characters
    # The focus link opens the trace page at that block.
    opened = member_client.get(href.replace("&amp;", "&").split("#")[0])
    assert opened.status_code == 200 and f'id="{first.pk}"' in opened.content.decode()


def test_a_hit_in_hostile_content_is_escaped(member_client, org):
    hostile = '<script>alert(1)</script> zebra "<b>" <img src=x onerror=alert(1)>'
    dataset = import_lines(org, "hostile", [{"messages": chat(hostile), "metadata": {}}])
    html = page(member_client, dataset, "?q=zebra")
    assert html_problems(html) == []
    snippet = re.search(r'<a class="search-hit"[^>]*>(.*?)</a>', html, re.S).group(1)
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; <mark>zebra</mark> &quot;&lt;b&gt;&quot;"
    assert escaped in snippet


def test_search_finds_tool_errors_with_the_is_error_qualifier(member_client, org):
    dataset = real(org, TAU2_TRIALS, TAU2_ERRORS)
    html = page(member_client, dataset, "?q=is%3Aerror")
    assert [int(r[7]) for r in rows(html)] == [1]  # as the "has tool error" filter
    hits = re.findall(r'<a class="search-hit" href="[^"]*focus=(tb_\w+)', html)
    assert len(hits) == 1
    assert all(Block.objects.get(pk=block).is_error for block in hits)
    # With words: the errors that hold them; the same word outside an error is no hit.
    html = page(member_client, dataset, "?q=is%3Aerror+suspended")
    assert [r[2] for r in rows(html)] == ["[service_issue]overdue_bill_suspension[PERSONA:Easy]"]
    # the stored JSON read as text: keys and quotes left out
    assert "Error: Line must be <mark>suspended</mark> to resume" in html
    assert '"output"' not in html[html.index('class="search-hit"') :]
    assert "No trace matches" in page(member_client, dataset, "?q=is%3Aerror+roaming")
    assert len(rows(page(member_client, dataset, "?q=roaming"))) > 1


LONG = "a-very-long-run-name-" * 9  # 189 characters, more than any column


def test_long_names_end_with_an_ellipsis_and_show_whole_on_hover(member_client, org):
    """Issue 15 item 6: the stored name is never cut; where it shows in a list or a header
    it is in an `ellipsis` element whose title holds all of it."""
    dataset = import_lines(org, LONG, [
        {"messages": chat("q"), "metadata": {"name": LONG, "task_id": LONG, "reward": r}}
        for r in (0, 1)
    ])  # fmt: skip
    first, second = dataset.traces.order_by("index")
    assert first.name == LONG and dataset.name == LONG  # stored whole
    whole = f'title="{LONG}">{LONG}<'
    listed = member_client.get(reverse("datasets")).content.decode()
    assert re.search(r'class="dataset-link ellipsis"[^>]*' + re.escape(whole), listed)
    html = page(member_client, dataset)
    assert re.search(r'<td class="trace-name"><a class="ellipsis"[^>]*' + re.escape(whole), html)
    assert re.search(r'<span class="ellipsis" ' + re.escape(whole), html)  # header + task
    traces = member_client.get(
        reverse("compare-traces"), {"a": first.pk, "b": second.pk}
    ).content.decode()
    assert traces.count('class="run-name ellipsis" href') == 2 and whole in traces
    assert f'class="crumb-name" href="{reverse("dataset", args=[dataset.pk])}" {whole}' in traces
    datasets = member_client.get(
        reverse("compare-datasets"), {"a": dataset.pk, "b": dataset.pk, "a_where": "reward=0"}
    ).content.decode()
    assert 'class="ellipsis compared-name"' in datasets and LONG in datasets
    assert f'title="acme / {LONG}"' in datasets  # the pickers' options, cut, whole on hover


def test_a_trace_without_a_name_is_listed_by_its_index_not_its_opaque_id(member_client, org):
    """Invariant's sample has no names: the list calls each "Trace #N", as its page does
    (the id stays in the title, to copy), and the index column says "#N" too."""
    dataset = real(org, NO_USAGE)
    html = page(member_client, dataset)
    traces = list(dataset.traces.order_by("index"))
    assert [t.name for t in traces] == ["", "", ""]
    assert [r[:2] for r in rows(html)] == [[f"#{n}", f"Trace #{n}"] for n in range(3)]
    for trace in traces:
        assert f"Trace #{trace.index} has no name; its id is {trace.pk}" in html
        title = member_client.get(reverse("trace", args=[trace.pk])).content.decode()
        assert f">Trace #{trace.index}</h1>" in title


def test_usage_columns_sort_and_the_dataset_totals_on_real_runs(member_client, org):
    """tau2 carries tokens, cost and duration; Invariant's sample none: its cells are
    empty and its traces come last whichever way the list sorts."""
    dataset = real(org, TAU2_TRIALS, NO_USAGE)
    html = page(member_client, dataset)
    for label in ("Tokens", "Cost", "Duration"):
        assert header_link(html, label)
    first = rows(html)[0]
    # index 0: 65,593 tokens in and 153 out, $0.034874, 7.997 s
    assert first[8:11] == ["65 746", "$0.0349", "8.0 s"]  # (rows() reads thin spaces as spaces)
    assert 'title="in 65\u2009593, out 153"' in html
    unknown = [r[0] for r in rows(html) if r[8:11] == ["—", "—", "—"]]
    assert unknown == ["#20", "#21", "#22"]  # Invariant's three
    for sort in ("cost", "-cost", "tokens", "-tokens", "duration", "-duration"):
        ordered = rows(page(member_client, dataset, f"?sort={sort}"))
        assert sorted(r[0] for r in ordered[-3:]) == unknown, sort  # unknown: last both ways
        if "duration" in sort:
            figures = [float(r[10].removesuffix(" s")) for r in ordered[:-3]]
            assert figures == sorted(figures, reverse=sort.startswith("-")), sort
    usage = html[html.index('<dl class="kv compact usage">') :]
    usage = usage[: usage.index("</dl>")]
    tau2 = dataset.traces.exclude(input_tokens=None)
    total = sum(t.input_tokens + t.output_tokens for t in tau2)
    assert f"{total:,}".replace(",", "\u2009") in usage
    cost = sum(t.cost_usd for t in tau2)
    assert f"${cost:.4f}".rstrip("0") in usage and "over 20 traces" in usage


def test_a_dataset_without_usage_shows_no_usage_column(member_client, tau2_free):
    html = page(member_client, tau2_free)
    assert ">Tokens<" not in html and ">Cost<" not in html and "compact usage" not in html


@pytest.fixture
def tau2_free(org):
    return import_lines(org, "plain", [{"messages": chat("q"), "metadata": {"reward": 1}}])


def group_rows(html: str) -> list[tuple[str, list[str]]]:
    """(group, figures) of each row of the rewards-per-group table."""
    body = html[html.index('<table class="table groups">') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        name = re.sub(r"<[^>]+>", " ", re.search(r"<th[^>]*>(.*?)</th>", row, re.S).group(1))
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        texts = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells]
        found.append((name.split()[0], texts))
    return found


def test_the_per_task_table_sorts_by_any_column(member_client, org):
    dataset = import_lines(org, "tasks", [
        {"messages": chat(f"{task} {n}"), "metadata": {"task_id": task, "reward": r}}
        for task, rewards in (("t-2", [1, 0, 0]), ("t-10", [1, 1]), ("t-1", [0, 0, 0, 1]))
        for n, r in enumerate(rewards)
    ] + [{"messages": chat("none"), "metadata": {"reward": 1}}])  # fmt: skip
    groups = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "groups"}

    def order(query: str) -> list[str]:
        return [name for name, _ in group_rows(page(member_client, dataset, query, **groups))]

    assert order("?group=task_id") == ["t-1", "t-2", "t-10", "(no"]  # digits as numbers
    assert order("?group=task_id&gsort=-value") == ["t-10", "t-2", "t-1", "(no"]
    assert order("?group=task_id&gsort=-count") == ["t-1", "t-2", "t-10", "(no"]
    assert order("?group=task_id&gsort=count") == ["t-10", "t-2", "t-1", "(no"]
    assert order("?group=task_id&gsort=-mean") == ["t-10", "t-2", "t-1", "(no"]  # 1, 1/3, 1/4
    # pass@3: t-2 1 (one success in 3 trials), t-1 0.75 (one in 4), t-10 none (2 trials)
    assert order("?group=task_id&gsort=-pass3") == ["t-2", "t-1", "t-10", "(no"]
    assert order("?group=task_id&gsort=hat2") == ["t-1", "t-2", "t-10", "(no"]
    assert order("?group=task_id&gsort=nonsense") == ["t-1", "t-2", "t-10", "(no"]
    html = page(member_client, dataset, "?group=task_id&gsort=-mean", **groups)
    assert 'aria-sort="descending"' in html
    link = re.search(
        r'<a class="sort-link" href="([^"]+)"[^>]*>(?:<span[^>]*>[^<]*</span>)?Mean reward', html
    )
    assert link and "gsort=mean" in link.group(1)  # the other way round
    pass_link = re.search(r'<a class="sort-link" href="([^"]+)"[^>]*>pass@2<', html)
    assert pass_link and "gsort=-pass2" in pass_link.group(1).replace("&amp;", "&")
    # The trace list's own links do not carry the table's sort.
    full = page(member_client, dataset, "?group=task_id&gsort=-mean")
    assert "gsort" not in trace_links(full)[0]


def test_a_hostile_list_parameter_is_read_as_a_filter_and_escaped(member_client, tau2):
    trace = tau2.traces.get(index=3)
    hostile = '"><script>alert(1)</script>&sort=-reward&meta=<img src=x onerror=alert(1)>'
    for list_query in (hostile, "sort=nonsense&reward=lots", "%00" * 10, "x" * 10_000):
        response = member_client.get(reverse("trace", args=[trace.pk]), {"list": list_query})
        assert response.status_code == 200
        assert html_problems(response.content.decode()) == []
