"""traces/rewards.py: one rule for what a reward says (success as accuracy counts it),
and the one colour scale every page draws rewards with."""

import pytest
from django.urls import reverse

from tests.explorer.conftest import import_traces, make_user
from traces.rewards import rate_tone, reward_tone, succeeded
from traces.selectors.stats import reward_summary


@pytest.mark.parametrize(
    ("reward", "tone"),
    [
        (None, ""),
        (1, "good"),
        (1 - 1e-7, "good"),  # a success, as accuracy counts it
        (1 + 1e-7, "good"),
        (0.5, "warn"),
        (0.999, "warn"),
        (0, "bad"),
        (-3, "bad"),
        (2, ""),  # a score, not a pass/fail
    ],
)
def test_a_reward_has_one_tone(reward, tone):
    assert reward_tone(reward) == tone


def test_good_is_exactly_what_accuracy_counts_as_a_success():
    for reward in (0.9999989, 0.999999, 1.0, 1.000001, 1.0000011):
        assert (reward_tone(reward) == "good") == succeeded(reward)


@pytest.mark.parametrize(
    ("rate", "tone"),
    [(None, ""), (-0.1, ""), (1.2, ""), (0, "heat-0"), (0.2, "heat-1"), (0.5, "heat-2"),
     (0.9, "heat-3"), (1, "heat-4")],
)  # fmt: skip
def test_a_rate_has_one_of_five_heats(rate, tone):
    assert rate_tone(rate) == tone


@pytest.mark.slow
@pytest.mark.django_db
def test_the_trace_page_and_the_dataset_page_colour_a_reward_alike(org, client):
    rewards = [1, 0, 0.5, 2]
    traces = import_traces(org, "tones", [
        {"messages": [{"role": "user", "content": "go"}], "metadata": {"reward": reward}}
        for reward in rewards
    ])  # fmt: skip
    client.force_login(make_user(org, "tone-reader"))
    listed = client.get(reverse("dataset", args=[traces[0].dataset_id])).context["rows"]
    by_trace = {row["trace"].pk: row["reward_tone"] for row in listed}
    for trace, reward in zip(traces, rewards, strict=True):
        page = client.get(reverse("trace", args=[trace.pk])).context
        assert page["reward_tone"] == by_trace[trace.pk] == reward_tone(reward), reward
    summary = reward_summary(traces=traces[0].dataset.traces.all())
    assert summary.successes == sum(1 for r in rewards if succeeded(r))
