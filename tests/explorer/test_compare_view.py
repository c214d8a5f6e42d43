"""The comparison pages: /compare/traces/ and /compare/datasets/ (issue 12)."""

import random
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from explorer.render.effort import Effort
from explorer.views.compare import DIFF_MAX_CHARS, DIFF_MAX_WORDS, TOO_LONG, diffable, step_diff
from tests.compare_data import GPT41, GROK3, expected, import_runs, raw
from tests.explorer.conftest import import_traces
from traces.models import Dataset, Membership, Trace
from traces.services.organizations import organization_get_or_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(org) -> Client:
    user = get_user_model().objects.create_user(username="reader")
    Membership.objects.create(user=user, organization=org, role="viewer")
    client = Client()
    client.force_login(user)
    return client


def _events(args: str, answer: str) -> list:
    return [
        {"role": "user", "content": "find the file"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "grep", "arguments": args}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "found it"},
        {"role": "assistant", "content": answer},
    ]  # fmt: skip


@pytest.fixture
def trials(org) -> list[Trace]:
    runs = [("foo", "a.py", "t1", 0), ("bar", "b.py", "t1", 1), ("foo", "a.py", "t2", 1)]
    return import_traces(
        org,
        "runs",
        [
            {
                "messages": _events(f'{{"q": "{q}"}}', f"It is in {where}"),
                "metadata": {"task_id": task, "reward": reward},
            }
            for q, where, task, reward in runs
        ],
    )


def test_the_page_shows_both_runs_aligned_with_the_first_divergence(reader, trials):
    a, b = trials[0], trials[1]
    response = reader.get("/compare/traces/", {"a": a.pk, "b": b.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('id="first-divergence"') == 1
    # The user's message and the assistant's turn are the same; the call's arguments differ.
    first = html[html.index('id="first-divergence"') :]
    assert "call grep" in first[:2000]
    assert "<del>" in first[:3000] and "<ins>" in first[:3000]
    assert "foo" in first[:3000] and "bar" in first[:3000]
    assert "first divergence</span> at step 3 of 5" in html


def test_with_a_alone_b_is_a_passing_trial_of_the_same_task(reader, trials):
    failed = trials[0]
    response = reader.get("/compare/traces/", {"a": failed.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert f'name="b" value="{trials[1].pk}"' in html
    assert f'href="/t/{trials[1].pk}/"' in html


def test_the_other_trials_are_told_apart_by_index_and_trial_before_their_names(reader, org):
    # Trials of one task under long names that differ only at their end.
    name = "tau2 airline " + "x" * 80
    runs = import_traces(
        org,
        "named",
        [
            {
                "messages": _events('{"q": "foo"}', "It is in a.py"),
                "metadata": {"task_id": "t1", "trial": n, "name": f"{name} trial {n}"},
            }
            for n in range(3)
        ],
    )
    html = reader.get("/compare/traces/", {"a": runs[0].pk}).content.decode()
    options = re.findall(r'<option value="tr_[^"]+"[^>]*>([^<]+)</option>', html)
    assert len(options) == 2 and len(set(options)) == 2
    assert [o.split(" · ")[:2] for o in options] == [
        [f"#{runs[1].index}", "trial 1"],
        [f"#{runs[2].index}", "trial 2"],
    ]


def test_a_trial_of_a_task_alone_asks_for_another_trace(reader, trials):
    response = reader.get("/compare/traces/", {"a": trials[2].pk})
    assert response.status_code == 200
    assert "No other trial of this task" in response.content.decode()
    assert 'id="first-divergence"' not in response.content.decode()


def test_a_task_of_a_dataset_opens_a_failing_and_a_passing_trial(reader, trials):
    dataset = trials[0].dataset
    response = reader.get(
        "/compare/traces/", {"dataset": dataset.pk, "key": "task_id", "task": "t1"}
    )
    html = response.content.decode()
    assert f'name="a" value="{trials[0].pk}"' in html
    assert f'name="b" value="{trials[1].pk}"' in html


def test_identical_runs_are_folded_and_said_identical(reader, org):
    long_run = [{"role": "user", "content": f"step {n}"} for n in range(20)]
    same = import_traces(org, "same", [long_run, long_run])
    html = reader.get("/compare/traces/", {"a": same[0].pk, "b": same[1].pk}).content.decode()
    assert "The two runs take the same steps." in html
    assert "20 identical steps" in html and "<details" in html


def test_the_next_steps_come_as_a_fragment_from_the_same_url(reader, org):
    long_a = [{"role": "user", "content": f"a {n}"} for n in range(300)]
    long_b = [{"role": "user", "content": f"b {n}"} for n in range(300)]
    runs = import_traces(org, "long", [long_a, long_b])
    query = {"a": runs[0].pk, "b": runs[1].pk}
    page = reader.get("/compare/traces/", query).content.decode()
    assert "Next steps (80 of 300 shown)" in page
    more = reader.get("/compare/traces/", {**query, "from": 80}, HTTP_HX_REQUEST="true")
    assert more.status_code == 200
    assert more["X-Partial"] == "steps"
    fragment = more.content.decode()
    assert "<html" not in fragment and ">81<" in fragment
    assert "Next steps (160 of 300 shown)" in fragment


def test_trace_content_is_escaped(reader, org):
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    runs = import_traces(
        org,
        "evil",
        [[{"role": "user", "content": evil}], [{"role": "user", "content": evil + " x"}]],
    )
    html = reader.get("/compare/traces/", {"a": runs[0].pk, "b": runs[1].pk}).content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_another_organizations_private_trace_is_404_or_the_sign_in_page(who, trials, reader):
    rival = organization_get_or_create(slug="rival")
    theirs = import_traces(rival, "theirs", [[{"role": "user", "content": "x"}]])[0]
    client = reader if who == "outsider" else Client()
    response = client.get("/compare/traces/", {"a": trials[0].pk, "b": theirs.pk})
    if who == "outsider":
        assert response.status_code == 404
    else:
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_unknown_trace_is_404(reader, trials):
    assert reader.get("/compare/traces/", {"a": trials[0].pk, "b": "tr_nope"}).status_code == 404
    assert (
        reader.get("/compare/datasets/", {"a": trials[0].dataset_id, "b": "ds_nope"}).status_code
        == 404
    )


def test_without_ids_the_pages_offer_the_forms(reader, trials):
    html = reader.get("/compare/traces/").content.decode()
    assert 'name="a"' in html and 'id="first-divergence"' not in html
    html = reader.get("/compare/datasets/").content.decode()
    assert f'value="{trials[0].dataset_id}"' in html


# --- datasets --------------------------------------------------------------------------


def _num(text: str) -> float:
    return float(text)


def test_the_datasets_page_shows_the_figures_of_scipy(reader, org):
    top_a, top_b = raw(GPT41), raw(GROK3)
    a, b = import_runs(org, "gpt-4.1", top_a), import_runs(org, "grok-3", top_b)
    want = expected(top_a["simulations"], top_b["simulations"])
    response = reader.get("/compare/datasets/", {"a": a.pk, "b": b.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert f"{want['accuracy_a']:.3f}" in html and f"{want['accuracy_b']:.3f}" in html
    low, high = want["accuracy_a_ci"]
    assert f"95% CI {low:.3f}–{high:.3f}" in html
    assert f"{want['mean_difference']:.3f}" in html
    assert f"paired 95% CI {want['ci'][0]:.3f} to {want['ci'][1]:.3f}" in html
    assert f"{want['p_value']:.4f}" in html
    assert re.search(r"solves \d+ (more|fewer) tasks? than|solve as many tasks", html)
    assert "significant at 5%" in html
    for task in want["flipped"]:
        assert task.replace("|", "|") in html
    assert html.count("compare a failing and a passing trial") == len(want["flipped"])


def test_two_slices_of_one_dataset_on_the_page(reader, org):
    dataset = import_runs(org, "gpt-4.1", raw(GPT41))
    response = reader.get(
        "/compare/datasets/", {"a": dataset.pk, "a_where": "trial=0", "b_where": "trial=1"}
    )
    assert response.status_code == 200
    assert "gpt-4.1 [trial=0]" in response.content.decode()


def test_a_bad_slice_is_422_with_the_form_and_why(reader, org):
    dataset = Dataset.objects.create(organization=org, name="d")
    response = reader.get("/compare/datasets/", {"a": dataset.pk, "a_where": "oops"})
    assert response.status_code == 422
    assert "Write a slice as key=value" in response.content.decode()


# --- links to the comparisons ------------------------------------------------------------


def test_a_failed_trial_links_to_a_passing_one_and_a_passing_trial_to_any(reader, trials):
    failed = reader.get(f"/t/{trials[0].pk}/").content.decode()
    assert f'href="/compare/traces/?a={trials[0].pk}"' in failed
    assert "Compare with a passing trial" in failed
    passed = reader.get(f"/t/{trials[1].pk}/").content.decode()
    assert f'href="/compare/traces/?a={trials[1].pk}"' in passed
    assert "Compare with…" in passed


def test_a_failed_trial_with_no_passing_trial_of_its_task_offers_any_trace(reader, trials):
    """Researcher: a task's only trial offered "a passing trial", then found none."""
    failed = trials[0]
    Trace.objects.filter(dataset=failed.dataset, task=failed.task).exclude(pk=failed.pk).update(
        reward=0
    )
    page = reader.get(f"/t/{failed.pk}/").content.decode()
    assert "Compare with a passing trial" not in page and "Compare with…" in page


def test_the_dataset_page_and_its_task_table_link_to_the_comparisons(reader, trials):
    dataset = trials[0].dataset
    page = reader.get(f"/d/{dataset.pk}/").content.decode()
    assert f'href="/compare/datasets/?a={dataset.pk}"' in page
    groups = reader.get(
        f"/d/{dataset.pk}/", {"group": "task_id"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="groups"
    ).content.decode()
    link = f'href="/compare/traces/?dataset={dataset.pk}&amp;key=task_id&amp;task=t1"'
    assert groups.count(link) == 1  # t1 has two trials; t2 one, so no link
    assert "task=t2" not in groups


# --- bounded work: a word diff is about quadratic ---------------------------------------


def _crafted_runs(org, words: int) -> list[Trace]:
    """Two runs of 80 assistant messages, each of `words` random words from "a b c": the
    worst case found for difflib (2,000 words a side took 0.7 s a pair)."""
    rng = random.Random(words)

    def run() -> list[dict]:
        return [
            {"role": "assistant", "content": " ".join(rng.choices("abc", k=words))}
            for _ in range(80)
        ]

    return import_traces(org, f"crafted {words}", [run(), run()])


@pytest.mark.parametrize("words", [1_000, DIFF_MAX_WORDS])
def test_crafted_long_texts_render_in_under_a_second_of_cpu(reader, org, words):
    a, b = _crafted_runs(org, words)
    started = time.process_time()
    response = reader.get("/compare/traces/", {"a": a.pk, "b": b.pk})
    spent = time.process_time() - started
    assert response.status_code == 200
    assert spent < 1.0
    html = response.content.decode()
    assert "Next steps" not in html and html.count(TOO_LONG) > 40
    if words > DIFF_MAX_WORDS:
        assert "<del>" not in html and html.count(TOO_LONG) == 80 * 2  # each side says it


def test_a_text_over_the_diff_size_is_shown_plainly_with_a_note(reader, org):
    long_a = " ".join(["word"] * (DIFF_MAX_WORDS + 1))
    runs = import_traces(
        org,
        "long",
        [[{"role": "user", "content": long_a}], [{"role": "user", "content": "word other"}]],
    )
    html = reader.get("/compare/traces/", {"a": runs[0].pk, "b": runs[1].pk}).content.decode()
    assert html.count(TOO_LONG) == 2
    assert "<del>" not in html and "<ins>" not in html
    assert "word other" in html


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" ".join(["w"] * DIFF_MAX_WORDS), True),
        (" ".join(["w"] * (DIFF_MAX_WORDS + 1)), False),
        ("x" * DIFF_MAX_CHARS, True),
        ("x" * (DIFF_MAX_CHARS + 1), False),
    ],
)
def test_diffable_bounds_words_and_characters(text, expected):
    assert diffable(text) is expected


def test_a_spent_allowance_shows_the_pair_plainly():
    assert step_diff("a b", "a c", Effort(seconds=0)) == ([], [], TOO_LONG)
    left, right, note = step_diff("a b", "a c", Effort())
    assert (left, right, note) == (
        [("same", "a "), ("del", "b")],
        [("same", "a "), ("ins", "c")],
        "",
    )
