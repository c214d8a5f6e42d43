"""traces/selectors/neighbours.py: the traces before and after one, in its dataset."""

import io
import json

from traces.selectors.neighbours import trace_neighbours
from traces.services.imports import trace_import


def imported(org, dataset: str, count: int):
    lines = b"".join(
        json.dumps([{"role": "user", "content": f"run {n}"}]).encode() + b"\n" for n in range(count)
    )
    result = trace_import(
        organization=org, dataset_name=dataset, files=[("t.jsonl", io.BytesIO(lines))]
    )
    return list(result.dataset.traces.order_by("index"))


def test_neighbours_by_index_and_none_at_either_end(org):
    first, middle, last = imported(org, "runs", 3)
    imported(org, "elsewhere", 3)  # another dataset's traces are never neighbours
    assert trace_neighbours(trace=middle) == (first, last)
    assert trace_neighbours(trace=first) == (None, middle)
    assert trace_neighbours(trace=last) == (middle, None)


def test_a_trace_alone_has_no_neighbours(org):
    (alone,) = imported(org, "one", 1)
    assert trace_neighbours(trace=alone) == (None, None)


def test_neighbours_walk_every_sort_of_the_list_both_ways_with_ties_and_nulls(org):
    """Walking next from the first trace, or previous from the last, gives exactly the
    sorted list, for every sort: ties broken by index, NULLs last both ways."""
    from traces.models import Trace
    from traces.selectors.trace_filters import TRACE_SORTS, TraceFilter, traces_sorted

    metas = [
        {"task_id": "b", "trial": 1, "reward": 1},
        {"task_id": "a", "reward": 0},
        {"task_id": "b", "trial": 0},
        {"trial": 2, "reward": 1},
        {"task_id": "a", "trial": 0, "reward": 0.5},
        {},
        {"task_id": "b", "trial": 1, "reward": 1},
    ]
    lines = b"".join(
        json.dumps({"messages": [{"role": "user", "content": f"run {n}"}], "metadata": m}).encode()
        + b"\n"
        for n, m in enumerate(metas)
    )
    dataset = trace_import(
        organization=org, dataset_name="sorts", files=[("t.jsonl", io.BytesIO(lines))],
        allow_duplicates=True,
    ).dataset  # fmt: skip
    every = Trace.objects.filter(dataset=dataset)
    # usage figures as the importers fill them: some unknown, some tied, a half-known total
    usage = [(10, 5, 0.5, 3.0), (None, None, None, None), (10, 5, 0.5, 3.0), (1, None, 2.0, None),
             (100, 1, 0.1, 60.0), (None, None, None, 1.0), (0, 0, 0.0, 0.0)]  # fmt: skip
    for index, (tokens_in, tokens_out, cost, duration) in enumerate(usage):
        every.filter(index=index).update(
            input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost,
            duration_seconds=duration,
        )  # fmt: skip
    for name in TRACE_SORTS:
        for sort in (name, f"-{name}"):
            expected = list(traces_sorted(traces=every, sort=sort).values_list("id", flat=True))
            walked = [expected[0]]
            while True:
                _, nxt = trace_neighbours(trace=every.get(pk=walked[-1]), sort=sort)
                if nxt is None:
                    break
                walked.append(nxt.pk)
            assert walked == expected, sort
            back = [expected[-1]]
            while True:
                prev, _ = trace_neighbours(trace=every.get(pk=back[-1]), sort=sort)
                if prev is None:
                    break
                back.append(prev.pk)
            assert back == expected[::-1], sort
    rewarded = TraceFilter(reward_min=0.5)
    first = every.get(index=0)
    # -reward among rewards >= 0.5: 6, 3, 0 (reward 1, ties by index, descending), then 4
    assert trace_neighbours(trace=first, filters=rewarded, sort="-reward") == (
        every.get(index=3), every.get(index=4),
    )  # fmt: skip


def test_the_list_as_it_opens_gives_what_an_empty_filter_gives_across_gaps(org):
    """No filter and the index's order are read by two prepared queries; an empty filter
    by the general walk: the same neighbours, with a trace deleted between."""
    from traces.models import Trace
    from traces.selectors.trace_filters import TraceFilter

    traces = imported(org, "gaps", 5)
    imported(org, "elsewhere", 2)
    Trace.objects.filter(pk=traces[2].pk).delete()
    kept = [trace for n, trace in enumerate(traces) if n != 2]
    for trace in kept:
        opened = trace_neighbours(trace=trace)
        assert opened == trace_neighbours(trace=trace, filters=TraceFilter())
    assert trace_neighbours(trace=kept[1]) == (kept[0], kept[2])
    prev, nxt = trace_neighbours(trace=kept[1])
    assert (nxt.pk, nxt.index, nxt.name) == (kept[2].pk, 3, kept[2].name)
