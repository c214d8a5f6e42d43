"""Dataset statistics (traces.selectors.stats), on traces written by trace_import."""

import pytest
from django.db import connection, transaction

from tests.conftest import user_in
from tests.explorer.conftest import airline_dataset, chat, import_lines
from traces.models import Block, Dataset, Trace
from traces.policy import Actor, datasets_readable
from traces.selectors.search import traces_matching
from traces.selectors.stats import (
    dataset_accuracy,
    datasets_with_stats,
    default_group_key,
    message_text,
    metadata_keys,
    pass_at_k,
    pass_hat_k,
    reward_histogram,
    reward_summary,
    rewards_by_key,
    tools_used,
    traces_annotated,
    traces_with_metadata_value,
    with_first_user_message,
)
from traces.services.annotations import block_extra_update, trace_extra_update
from traces.services.search_index import search_index_drain


@pytest.fixture
def tasks_dataset(org) -> Dataset:
    return airline_dataset(org)


def rewarded(org, name, rewards, **meta):
    traces = [
        {"messages": chat(f"question {i}"), "metadata": {"reward": r, **meta}}
        for i, r in enumerate(rewards)
    ]
    return import_lines(org, name, traces)


def test_pass_at_k_hand_computed(tasks_dataset):
    """Task A rewards [1, 0, 1], task B [0, 0, 0]."""
    table = rewards_by_key(traces=tasks_dataset.traces.all(), key="task_id")
    assert table.ks == [1, 2, 3]
    a, b = table.groups
    assert (a.value, a.count, a.rewarded, a.successes) == ("A", 3, 3, 2)
    assert (b.value, b.count, b.rewarded, b.successes) == ("B", 3, 3, 0)
    assert a.pass_at[0] == pytest.approx(2 / 3)
    assert a.pass_at[1] == pytest.approx(1 - 0 / 3)  # 1 - C(1,2)/C(3,2)
    assert a.pass_hat[1] == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert a.pass_hat[2] == 0  # C(2,3)/C(3,3)
    assert b.pass_at == [0, 0, 0] and b.pass_hat == [0, 0, 0]
    # The dataset: the mean over tasks.
    assert table.pass_at[0] == pytest.approx((2 / 3 + 0) / 2)
    assert table.pass_at[1] == pytest.approx((1 + 0) / 2)
    assert table.pass_hat[1] == pytest.approx((1 / 3 + 0) / 2)
    assert table.pass_hat[0] == pytest.approx(table.pass_at[0])  # k = 1: the same
    assert table.mean == pytest.approx(2 / 6)


def test_pass_formulas():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(5, 0, 2) == 0 and pass_at_k(5, 5, 2) == 1
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_at_k(2, 1, 3) is None and pass_hat_k(2, 1, 3) is None  # fewer trials than k


def test_groups_with_fewer_trials_are_left_out_of_the_mean_for_that_k(org):
    traces = [
        {"messages": chat("q"), "metadata": {"task_id": t, "reward": r}}
        for t, r in [("x", 1), ("x", 0), ("y", 1), ("z", 0)]
    ]
    traces.append({"messages": chat("q"), "metadata": {"reward": 1}})  # no task id
    dataset = import_lines(org, "uneven", traces)
    table = rewards_by_key(traces=dataset.traces.all(), key="task_id")
    assert table.ks == [1, 2]
    assert [g.value for g in table.groups] == ["x", "y", "z", None]
    assert table.groups[-1].missing
    assert table.pass_at[0] == pytest.approx((0.5 + 1 + 0) / 3)
    assert table.pass_at[1] == pytest.approx(1.0)  # only x has 2 trials
    assert table.groups_counted == [3, 1]


def test_traces_without_the_key_get_no_pass_at_k(org):
    """Researcher: unrelated runs without a task id were shown as one task's trials."""
    traces = [{"messages": chat(q), "metadata": {"reward": r}} for q, r in [("a", 1), ("b", 0)]]
    traces.append({"messages": chat("c"), "metadata": {"task_id": "t", "reward": 1}})
    dataset = import_lines(org, "untasked", traces)
    table = rewards_by_key(traces=dataset.traces.all(), key="task_id")
    missing = table.groups[-1]
    assert missing.missing and missing.count == 2 and missing.mean == 0.5
    assert missing.pass_at == [None] and missing.pass_hat == [None]
    assert table.pass_at == [1.0]


def test_k_is_at_most_five(org):
    traces = [{"messages": chat("q"), "metadata": {"task_id": "t", "reward": 1}}] * 7
    dataset = import_lines(org, "many-trials", traces)
    assert rewards_by_key(traces=dataset.traces.all(), key="task_id").ks == [1, 2, 3, 4, 5]


def test_group_values_sort_naturally_and_keep_their_type(org):
    values = ["t-10", "t-2", 7, True, {"a": 1}]
    traces = [{"messages": chat("q"), "metadata": {"k": v, "reward": 1}} for v in values]
    dataset = import_lines(org, "typed", traces)
    table = rewards_by_key(traces=dataset.traces.all(), key="k")
    assert [g.value for g in table.groups] == [7, "t-2", "t-10", True, {"a": 1}]
    assert [g.filter_value for g in table.groups] == ["7", "t-2", "t-10", "true", '{"a":1}']
    for group in table.groups:  # each group's link selects exactly its traces
        found = traces_with_metadata_value(
            traces=dataset.traces.all(), key="k", value=group.filter_value
        )
        assert found.count() == 1, group


def test_summary_and_accuracy(tasks_dataset, org):
    summary = reward_summary(traces=tasks_dataset.traces.all())
    assert (summary.traces, summary.rewarded, summary.successes) == (6, 6, 2)
    assert summary.binary and summary.accuracy == pytest.approx(1 / 3)
    partial = rewarded(org, "partial", [0, 0.5, 1, None])
    summary = reward_summary(traces=partial.traces.all())
    assert (summary.traces, summary.rewarded) == (4, 3)
    # partial credit: accuracy counts the successes (as the comparison of datasets does);
    # the mean credit is the mean reward
    assert not summary.binary and summary.accuracy == pytest.approx(1 / 3)
    assert summary.mean == pytest.approx(0.5)
    scores = rewarded(org, "scores", [3, 7, -1])
    assert reward_summary(traces=scores.traces.all()).accuracy is None  # not within 0..1
    assert reward_summary(traces=scores.traces.all()).mean == pytest.approx(3)
    empty = reward_summary(traces=Trace.objects.none())
    assert empty.traces == 0 and empty.accuracy is None


def test_histogram_kinds(org):
    binary = rewarded(org, "binary", [1, 1, 0, True, None])
    h = reward_histogram(traces=binary.traces.all())
    assert h.kind == "binary" and [(b.label, b.count) for b in h.bins] == [("0", 1), ("1", 3)]
    assert h.unrewarded == 1
    unit = rewarded(org, "unit", [0, 0.05, 0.1, 0.15, 0.5, 0.99, 1.0, 1.0])
    h = reward_histogram(traces=unit.traces.all())
    assert h.kind == "unit" and len(h.bins) == 10
    assert [b.count for b in h.bins] == [2, 2, 0, 0, 0, 1, 0, 0, 0, 3]
    assert h.bins[-1].closed and "inclusive" in h.bins[-1].title
    integers = rewarded(org, "integers", [0, 2, 2, 5])
    h = reward_histogram(traces=integers.traces.all())
    assert h.kind == "integer" and [b.label for b in h.bins] == ["0", "1", "2", "3", "4", "5"]
    assert [b.count for b in h.bins] == [1, 0, 2, 0, 0, 1]
    spread = rewarded(org, "spread", [-10, -2.5, 0, 33.3, 90])
    h = reward_histogram(traces=spread.traces.all())
    assert h.kind == "range" and len(h.bins) == 10 and sum(b.count for b in h.bins) == 5
    assert h.bins[0].count == 2 and h.bins[-1].count == 1  # -10, -2.5 | 90 (the top, closed)
    none = rewarded(org, "none", [None, None])
    h = reward_histogram(traces=none.traces.all())
    assert h.kind == "empty" and h.bins == [] and h.unrewarded == 2


def test_metadata_keys_and_default(tasks_dataset, org):
    keys = metadata_keys(traces=tasks_dataset.traces.all())
    assert keys == ["name", "reward", "task_id", "trial"]
    assert default_group_key(keys) == "task_id"
    assert default_group_key(["name", "instance_id"]) == "instance_id"
    assert default_group_key(["name", "reward"]) is None
    other = rewarded(org, "other", [1], zeta=1)
    assert metadata_keys(traces=other.traces.all()) == ["reward", "zeta"]  # per dataset


def test_metadata_value_filter_is_exact(org):
    metas = [
        {"task_id": "7"},
        {"task_id": 7},
        {"task_id": 7.0},
        {"task_id": "7 "},
        {"outer": {"task_id": "7"}},  # nested: not the top-level key
        {"task_id": True},
        {"task_id": "a=b"},
        {'we"ird': "x", "$dollar": "y", "é": "ü"},
        {"task_id": None},
        {"task_id": "X"},
    ]
    traces = [{"messages": chat("q"), "metadata": m} for m in metas]
    dataset = import_lines(org, "filters", traces)
    all_traces = dataset.traces.all()

    def indexes(key, value):
        found = traces_with_metadata_value(traces=all_traces, key=key, value=value)
        return sorted(found.values_list("index", flat=True))

    assert indexes("task_id", "7") == [0, 1, 2]  # the string, the integer, the float
    assert indexes("task_id", "7 ") == [3]
    assert indexes("task_id", "true") == [5]
    assert indexes("task_id", "a=b") == [6]
    assert indexes('we"ird', "x") == [7]
    assert indexes("$dollar", "y") == [7]
    assert indexes("é", "ü") == [7]
    assert indexes("task_id", "null") == [8]
    assert indexes("task_id", "x") == []  # case matters
    assert indexes("task_id", "X") == [9]
    assert indexes("missing", "7") == []


def test_text_search(tasks_dataset):
    traces = tasks_dataset.traces.all()
    found = traces_matching(traces=traces, text="search_flights")  # a tool call's name
    assert found.count() == 6
    assert traces_matching(traces=traces, text="nothing-like-this").count() == 0
    assert traces_matching(traces=traces, text="  ").count() == 6


def test_quoted_search_text_finds_what_it_finds_unquoted(tasks_dataset):
    # Readers type quotes as in a web search; stored payloads are JSON text, so quotes
    # kept in the pattern matched nothing on SQLite.
    traces = tasks_dataset.traces.all()
    assert traces_matching(traces=traces, text='"search_flights"').count() == 6
    assert traces_matching(traces=traces, text=' "search_flights" ').count() == 6
    assert traces_matching(traces=traces, text='"nothing-like-this"').count() == 0
    assert traces_matching(traces=traces, text='""').count() == 6


def test_annotated_filter(tasks_dataset):
    traces = list(tasks_dataset.traces.order_by("index"))
    trace_extra_update(trace=traces[0], extra={"note": "looked at it"})
    block = Block.objects.filter(trace=traces[1]).order_by("created_at", "id").first()
    block_extra_update(block=block, extra={"reward": 0})
    trace_extra_update(trace=traces[2], extra={})  # written, but empty: not annotated
    qs = tasks_dataset.traces.all()
    assert sorted(traces_annotated(traces=qs).values_list("index", flat=True)) == [0, 1]
    not_annotated = traces_annotated(traces=qs, annotated=False)
    assert sorted(not_annotated.values_list("index", flat=True)) == [2, 3, 4, 5]


def test_first_user_message_and_tools_in_one_query(org, django_assert_num_queries):
    traces = [
        {"messages": [{"role": "system", "content": "Be brief."}, *chat("Hello there", "b", "a")]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]},
        {"messages": [{"role": "assistant", "content": "no user"}]},
    ]
    dataset = import_lines(org, "first", traces)
    found = list(with_first_user_message(dataset.traces.order_by("index")))
    assert [message_text(t.first_user_payload) for t in found] == ["Hello there", "parts", ""]
    with django_assert_num_queries(1):
        tools = tools_used(trace_ids=[t.pk for t in found])
    assert tools == {found[0].pk: ["a", "b"]}


@pytest.mark.slow
def test_dataset_stats_are_not_multiplied_by_memberships(org, rival_org):
    public = rewarded(rival_org, "public-one", [1, 0, 1])
    public.is_public = True
    public.save()
    mine = rewarded(org, "mine", [0.5])
    viewer = user_in(org, "reader")
    for n in range(3):  # more people in both organizations
        user_in(rival_org, f"rival-{n}")
        user_in(org, f"colleague-{n}")
    rows = {d.name: d for d in datasets_with_stats(datasets=datasets_readable(Actor(user=viewer)))}
    assert set(rows) == {"public-one", "mine"}
    assert rows["public-one"].trace_count == 3 and rows["public-one"].rewarded == 3
    assert dataset_accuracy(rows["public-one"]) == pytest.approx(2 / 3)
    assert rows["mine"].trace_count == 1 and dataset_accuracy(rows["mine"]) == 0.0
    assert rows["mine"].mean_reward == 0.5  # partial credit: no success
    assert list(rows) == ["mine", "public-one"]  # the latest update first
    assert mine.pk in {d.pk for d in Dataset.objects.all()}


@pytest.mark.postgres  # the GIN index is PostgreSQL's
def test_full_text_search_uses_the_gin_index(tasks_dataset):
    search_index_drain()  # the search worker has indexed the traces
    traces = tasks_dataset.traces.all()
    assert traces_matching(traces=traces, text="book flight").count() == 6
    assert traces_matching(traces=traces, text="Task A").count() == 3
    # A tiny table: the planner rather looks blocks up by trace. Closing the other doors
    # shows that the search condition is one the GIN index serves, as written.
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in ("enable_seqscan", "enable_indexscan", "enable_nestloop"):
            cursor.execute(f"SET LOCAL {setting} = off")
        plan = traces_matching(traces=traces, text="flight").explain()
    assert "block_search_document" in plan, plan


def test_a_nul_in_metadata_or_arguments_breaks_no_statistic(org):
    """PostgreSQL's JSON functions refuse U+0000; one trace holding it must not break the
    dataset's keys, groups, filters or tool lists."""
    events = chat("hi")
    function = {"name": "nul_tool", "arguments": {"a\u0000": "b\u0000"}}
    call = {"id": "c", "type": "function", "function": function}
    events.insert(1, {"role": "assistant", "content": None, "tool_calls": [call]})
    events.insert(2, {"role": "tool", "tool_call_id": "c", "content": "ok"})
    dataset = import_lines(org, "nul", [
        {"messages": events, "metadata": {"task_id": "t\u0000", "k\u0000": 1, "reward": 1}},
        {"messages": chat("other"), "metadata": {"task_id": "plain", "reward": 0}},
    ])  # fmt: skip
    traces = dataset.traces.all()
    assert {"task_id", "reward"} <= set(metadata_keys(traces=traces))
    groups = rewards_by_key(traces=traces, key="task_id")
    assert len(groups.groups) == 2
    assert traces_with_metadata_value(traces=traces, key="task_id", value="plain").count() == 1
    ids = list(traces.values_list("id", flat=True))
    assert "nul_tool" in sum(tools_used(trace_ids=ids).values(), [])


def test_the_one_query_distribution_gives_the_same_summary_and_histogram(org):
    from traces.selectors.stats import reward_distribution

    for name, rewards in (("binary", [1, 0, 1, None]), ("partial", [0.05, 0.5, 0.55, 1, 1])):
        traces = rewarded(org, name, rewards).traces.all()
        distribution = reward_distribution(traces=traces)
        fast = reward_summary(traces=traces, distribution=distribution)
        slow = reward_summary(traces=traces)
        assert fast.mean == pytest.approx(slow.mean)
        assert (fast.traces, fast.rewarded, fast.successes, fast.non_binary) == (
            slow.traces, slow.rewarded, slow.successes, slow.non_binary,
        )  # fmt: skip
        assert reward_histogram(traces=traces, distribution=distribution) == reward_histogram(
            traces=traces
        )
