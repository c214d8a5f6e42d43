"""traces.selectors.compare: the alignment of two traces, and two datasets task by task,
checked against independent computations (a plain LCS, scipy on the raw files)."""

import io
import json
import math
import random

import pytest

from tests.compare_data import GPT41, GROK3, expected, import_runs, raw
from tests.explorer.pathological import cpu_limit
from traces.models import Block, Trace
from traces.selectors import compare
from traces.selectors.compare import Side, align, dataset_compare, trace_compare
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db


def sig(sub_type: str, name: str, content: str) -> compare.Signature:
    return (sub_type, name, hash(content))


def comparable(block: Block):
    """What two blocks must share to be the same step, written independently."""
    p = dict(block.payload)
    p.pop("call_id", None)
    p.pop("seq", None)
    if block.sub_type == "TOOL_RESULT":
        p = {"output": p.get("output", p.get("delta"))}
    return (block.sub_type, json.dumps(p))


def lcs_length(a: list, b: list) -> int:
    """The textbook dynamic programme."""
    prev = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
        prev = row
    return prev[-1]


def check_steps(steps, n_a: int, n_b: int) -> None:
    """Every block of each side appears once, in order."""
    assert [i for i, _, _ in steps if i is not None] == list(range(n_a))
    assert [j for _, j, _ in steps if j is not None] == list(range(n_b))


# --- alignment -------------------------------------------------------------------------


def test_identical_runs_are_the_same_at_every_step():
    a = [sig("MESSAGE", "user", "hi"), sig("TOOL_CALL", "ls", "{}"), sig("TOOL_RESULT", "", "x")]
    steps = align(a, list(a))
    assert steps == [(0, 0, True), (1, 1, True), (2, 2, True)]


def test_an_extra_block_is_a_step_of_one_side_not_a_shift_of_the_rest():
    a = [
        sig("MESSAGE", "user", "hi"),
        sig("TOOL_CALL", "ls", "{}"),
        sig("MESSAGE", "assistant", "ok"),
    ]
    b = [a[0], sig("TOOL_CALL", "pwd", "{}"), a[1], a[2]]
    assert align(a, b) == [(0, 0, True), (None, 1, False), (1, 2, True), (2, 3, True)]


def test_a_call_with_other_arguments_is_paired_and_differs():
    a = [
        sig("MESSAGE", "user", "hi"),
        sig("TOOL_CALL", "grep", '{"q": 1}'),
        sig("MESSAGE", "assistant", "ok"),
    ]
    b = [a[0], sig("TOOL_CALL", "grep", '{"q": 2}'), a[2]]
    assert align(a, b) == [(0, 0, True), (1, 1, False), (2, 2, True)]


def test_blocks_of_another_kind_are_never_paired():
    a = [sig("TOOL_CALL", "grep", "{}")]
    b = [sig("TOOL_CALL", "sed", "{}")]
    assert align(a, b) == [(0, None, False), (None, 0, False)]


def test_the_alignment_matches_as_many_blocks_as_a_longest_common_subsequence():
    rng = random.Random(7)
    for _ in range(30):
        a = [sig("T", "", str(rng.randrange(6))) for _ in range(rng.randrange(0, 40))]
        b = [sig("T", "", str(rng.randrange(6))) for _ in range(rng.randrange(0, 40))]
        steps = align(a, b)
        check_steps(steps, len(a), len(b))
        assert sum(same for _, _, same in steps) == lcs_length(a, b)
        for i, j, same in steps:
            if same:
                assert a[i] == b[j]


def test_large_regions_stay_bounded_and_complete():
    # 10,000 blocks a side with few distinct signatures: past CELLS, no unique anchor.
    rng = random.Random(1)
    a = [sig("T", "", str(rng.randrange(3))) for _ in range(10_000)]
    b = [sig("T", "", str(rng.randrange(3))) for _ in range(10_000)]
    steps = align(a, b)
    check_steps(steps, 10_000, 10_000)
    for i, j, same in steps:
        if same:
            assert a[i] == b[j]


def test_call_ids_do_not_make_two_equal_calls_differ():
    one = compare.signature_of("TOOL_CALL", {"call_id": "c1", "name": "f", "arguments": {"x": 1}})
    two = compare.signature_of("TOOL_CALL", {"call_id": "zz", "name": "f", "arguments": {"x": 1}})
    other = compare.signature_of("TOOL_CALL", {"call_id": "c1", "name": "f", "arguments": {"x": 2}})
    assert one == two != other
    r1 = compare.signature_of("TOOL_RESULT", {"call_id": "c1", "output": "ok"})
    r2 = compare.signature_of("TOOL_RESULT", {"call_id": "c9", "output": "ok", "seq": 3})
    assert r1 == r2


def test_hostile_payloads_still_have_a_signature():
    for payload in (None, 1e308, "\x00", [[[[]]]], {"content": "\ud800"}, {"arguments": 2**70}):
        assert compare.signature_of("MESSAGE", payload)[0] == "MESSAGE"


# --- two real traces ---------------------------------------------------------------------


def _blocks(trace: Trace) -> list[Block]:
    return list(Block.objects.filter(trace=trace).order_by("created_at", "id"))


@pytest.mark.slow  # real runs at their real size (about a second)
def test_real_runs_of_one_task_align_as_a_longest_common_subsequence(org):
    """Every pair of trials of each task: the four of gpt-4.1 (mostly alike), and each
    against grok-3's run of the same task (another model: they diverge)."""
    gpt = import_runs(org, "gpt-4.1", raw(GPT41))
    grok = import_runs(org, "grok-3", raw(GROK3))
    by_task: dict[str, list[Trace]] = {}
    for trace in Trace.objects.filter(dataset__in=[gpt, grok]).order_by("dataset_id", "index"):
        by_task.setdefault(trace.metadata["task_id"], []).append(trace)
    pairs = [(x, y) for runs in by_task.values() for x in runs for y in runs if x.pk < y.pk]
    assert len(pairs) == 5 * 10  # five shared tasks, five runs each
    diverged = 0
    for a, b in pairs:
        result = trace_compare(a=a, b=b)
        blocks_a, blocks_b = _blocks(a), _blocks(b)
        assert result.a_ids == [x.pk for x in blocks_a]
        check_steps(result.steps, len(blocks_a), len(blocks_b))
        keys_a = [comparable(x) for x in blocks_a]
        keys_b = [comparable(x) for x in blocks_b]
        for i, j, same in result.steps:
            if same:
                assert keys_a[i] == keys_b[j]
            elif i is not None and j is not None:
                assert blocks_a[i].sub_type == blocks_b[j].sub_type
                assert keys_a[i] != keys_b[j]
        assert result.same_count == lcs_length(keys_a, keys_b)
        # The first divergence: the end of the longest common prefix.
        prefix = 0
        while prefix < min(len(keys_a), len(keys_b)) and keys_a[prefix] == keys_b[prefix]:
            prefix += 1
        first = result.first_divergence
        if keys_a == keys_b:
            assert first is None
            continue
        assert first == prefix
        ida, idb = result.step_ids(result.steps[first])
        assert ida == (blocks_a[prefix].pk if ida else None)
        assert idb == (blocks_b[prefix].pk if idb else None)
        diverged += 1
    assert diverged >= 20


def test_a_trace_compared_with_itself_has_no_divergence(org):
    dataset = import_runs(org, "gpt-4.1", raw(GPT41))
    trace = dataset.traces.order_by("index").first()
    result = trace_compare(a=trace, b=trace)
    assert result.first_divergence is None
    assert all(same for _, _, same in result.steps)
    assert len(result.steps) == trace.blocks.count()


def test_other_trials_put_a_passing_trial_first_for_a_failed_one(org):
    dataset = import_runs(org, "gpt-4.1", raw(GPT41))
    failed = dataset.traces.filter(reward=0).order_by("index").first()
    others = compare.other_trials(trace=failed)
    assert len(others) == 3
    task = failed.metadata["task_id"]
    assert all(t.metadata["task_id"] == task for t in others)
    # This task never passes in the file: no passing trial to prefer.
    task_rewards = [t.reward for t in dataset.traces.all() if t.metadata["task_id"] == task]
    if 1.0 in task_rewards:
        assert others[0].reward == 1.0
    passed = dataset.traces.filter(reward=1).order_by("index").first()
    mixed = [t for t in compare.other_trials(trace=passed)]
    assert all(t.metadata["task_id"] == passed.metadata["task_id"] for t in mixed)


def test_a_trace_without_a_dataset_or_task_has_no_other_trials(org):
    lone = Trace.objects.create(organization=org, metadata={"task_id": "x"})
    assert compare.other_trials(trace=lone) == []


def test_the_paired_interval_of_two_tasks_stays_where_a_difference_of_shares_can_be():
    # Student's t with one degree of freedom: 0.95 +- 12.706 * 0.05 reaches 1.585.
    mean, low, high, _, _ = compare.paired_statistics([1.0, 0.9], bounds=(-1.0, 1.0))
    assert mean == pytest.approx(0.95) and low == pytest.approx(0.95 - 12.7062 * 0.05, abs=1e-3)
    assert high == 1.0
    _, low, high, _, _ = compare.paired_statistics([1.0, 0.25], bounds=(-1.0, 1.0))
    assert (low, high) == (-1.0, 1.0)  # 0.625 +- 4.76: both ends cut
    _, low, high, _, _ = compare.paired_statistics([1.0, 0.9])
    assert high == pytest.approx(0.95 + 12.7062 * 0.05, abs=1e-3)  # unbounded as before


# --- two real datasets -------------------------------------------------------------------


def _check(result, want) -> None:
    got = {t.task: (t.n_a, t.n_b, t.success_a, t.success_b) for t in result.tasks}
    assert got == want["tasks"]
    s = result.summary
    assert s.shared_tasks == want["shared_tasks"]
    assert s.accuracy_a.value == pytest.approx(want["accuracy_a"])
    assert s.accuracy_b.value == pytest.approx(want["accuracy_b"])
    assert [s.accuracy_a.low, s.accuracy_a.high] == pytest.approx(want["accuracy_a_ci"])
    assert s.mean_difference == pytest.approx(want["mean_difference"])
    if "ci" in want:
        assert [s.ci_low, s.ci_high] == pytest.approx(want["ci"])
    assert s.p_value == pytest.approx(want["p_value"])
    assert sorted(t.task for t in result.flipped) == want["flipped"]
    differences = [t.difference for t in result.tasks]
    assert differences == sorted(differences, key=lambda d: (-abs(d), -d))


def test_one_run_split_by_trial_into_two_datasets(org):
    top = raw(GPT41)
    a = import_runs(org, "trials-0-1", top, lambda s: s["trial"] in (0, 1))
    b = import_runs(org, "trials-2-3", top, lambda s: s["trial"] in (2, 3))
    result = dataset_compare(a=Side(a), b=Side(b))
    assert result.key == "task_id"
    sims = top["simulations"]
    want = expected([s for s in sims if s["trial"] in (0, 1)], [s for s in sims if s["trial"] > 1])
    _check(result, want)
    assert result.summary.shared_tasks == 5


def test_two_models_on_the_tasks_they_share(org):
    top_a, top_b = raw(GPT41), raw(GROK3)
    a = import_runs(org, "gpt-4.1", top_a)
    b = import_runs(org, "grok-3", top_b)
    result = dataset_compare(a=Side(a), b=Side(b))
    want = expected(top_a["simulations"], top_b["simulations"])
    assert want["shared_tasks"] == 5
    assert want["p_value"] is not None and "ci" in want  # a real test and interval
    _check(result, want)
    assert result.only_a == 0 and result.only_b == 15
    # pass@k / pass^k up to each side's trials of a task: four for gpt-4.1, one for grok-3.
    assert (result.ks_a, result.ks_b) == ([1, 2, 3, 4], [1])
    for row in result.tasks:
        c = sum(
            s["reward_info"]["reward"] == 1.0
            for s in top_a["simulations"]
            if s["task_id"] == row.task
        )
        at = [1 - math.comb(4 - c, k) / math.comb(4, k) for k in (1, 2, 3, 4)]
        hat = [math.comb(c, k) / math.comb(4, k) for k in (1, 2, 3, 4)]
        assert row.pass_at_a == pytest.approx(at) and row.pass_hat_a == pytest.approx(hat)
    for row in result.flipped:
        ta, tb = Trace.objects.get(pk=row.pair[0]), Trace.objects.get(pk=row.pair[1])
        assert ta.dataset_id == a.pk and tb.dataset_id == b.pk
        assert ta.metadata["task_id"] == tb.metadata["task_id"] == row.task
        assert (ta.reward == 1.0) == (row.flipped == "a") and (tb.reward == 1.0) == (
            row.flipped == "b"
        )


@pytest.mark.slow  # real runs at their real size (about a second)
def test_two_slices_of_one_upload(org):
    """Both files in one dataset, sliced by trial: trial 1 (gpt-4.1's) against trial 0
    (gpt-4.1's first and grok-3's runs)."""
    top_a, top_b = raw(GPT41), raw(GROK3)
    files = [
        (f"{n}.json", io.BytesIO(json.dumps(t).encode())) for n, t in (("a", top_a), ("b", top_b))
    ]
    dataset = trace_import(organization=org, dataset_name="sweep", files=files).dataset
    result = dataset_compare(a=Side(dataset, "trial", "1"), b=Side(dataset, "trial", "0"))
    sims = top_a["simulations"] + top_b["simulations"]
    want = expected([s for s in sims if s["trial"] == 1], [s for s in sims if s["trial"] == 0])
    assert want["mean_difference"] != 0
    _check(result, want)
    assert result.a.label == "sweep [trial=1]"


def _one_trace(org, name: str, task: int, reward: int):
    line = {
        "messages": [{"role": "user", "content": "x"}],
        "metadata": {"task_id": task, "reward": reward},
    }
    data = io.BytesIO(json.dumps(line).encode() + b"\n")
    return trace_import(
        organization=org, dataset_name=name, files=[(f"{name}.jsonl", data)]
    ).dataset


def test_datasets_without_shared_tasks_say_so(org):
    a = _one_trace(org, "a", 1, 1)
    b = _one_trace(org, "b", 2, 0)
    result = dataset_compare(a=Side(a), b=Side(b))
    assert result.tasks == []
    assert result.summary.p_value is None and result.summary.mean_difference is None
    assert result.summary.accuracy_a.value == 1.0 and result.summary.accuracy_b.value == 0.0
    assert "share no task" in result.summary.in_words()


def test_identical_sides_have_no_test_and_say_why(org):
    dataset = import_runs(org, "gpt-4.1", raw(GPT41))
    result = dataset_compare(a=Side(dataset), b=Side(dataset))
    assert result.summary.mean_difference == 0
    assert result.summary.p_value is None
    assert result.summary.ci_low == result.summary.ci_high == 0
    assert "no task's success rate differs" in result.summary.in_words()


def _regions_of_alternating_messages(n: int, flip: int) -> list[tuple[str, str, int]]:
    """A block that occurs once (an anchor for patience diff), then 250 messages that
    alternate between two texts, out of step with the other side's: hundreds of regions
    each just small enough to be aligned exactly."""
    out: list[tuple[str, str, int]] = []
    anchor = 0
    while len(out) < n:
        out.append(("MESSAGE", "user", 10**9 + anchor))
        anchor += 1
        out.extend(("MESSAGE", "user", (i + flip) % 2) for i in range(250))
    return out[:n]


def test_the_alignment_of_crafted_40000_block_traces_spends_a_bounded_number_of_cells():
    a = _regions_of_alternating_messages(40_000, 0)
    b = _regions_of_alternating_messages(40_000, 1)
    # About 0.4-0.9 s of CPU on these machines, as busy as they come; every cell of the
    # two traces (1.6 billion) would take hours.
    with cpu_limit(2.5, "aligning two crafted 40,000-block traces"):
        steps = align(a, b)
    assert sorted(i for i, _, _ in steps if i is not None) == list(range(len(a)))
    assert sorted(j for _, j, _ in steps if j is not None) == list(range(len(b)))
    # The anchors are matched whatever the allowance left.
    assert sum(1 for i, j, same in steps if same and a[i][2] >= 10**9) == 160
