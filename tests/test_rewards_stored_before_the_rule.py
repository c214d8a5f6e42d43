"""Rewards stored before the range rule (traces.models.REWARD_LIMIT): the migration that
adds the rule clears the reward column where it is out of range, keeps the value where it
came from, and the pages that aggregate rewards answer again.

Before it, a reward of 1e200 beside ordinary ones made `/` answer 500 on PostgreSQL (AVG
of float8 keeps a running sum of squares, which overflows), and rewards of ±1.7e308 made
the dataset page answer 500 on both databases (NaN histogram edges)."""

import re

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from tests.explorer.conftest import make_user
from traces.models import Dataset, Organization, Trace
from traces.selectors.stats import reward_histogram, reward_summary

BEFORE = ("traces", "0006_api_key_role")
RULE = ("traces", "0007_trace_reward_in_range")

pytestmark = pytest.mark.slow  # migrates the schema back and forth, as tests/test_migrations.py


def migrate(target: tuple[str, str]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


@pytest.fixture
def before_the_rule(transactional_db):
    """The database as it was before the rule; back to the latest schema afterwards."""
    migrate(BEFORE)
    try:
        yield
    finally:
        migrate(latest())


def latest() -> tuple[str, str]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes("traces")[0]


def stored(dataset: Dataset, reward: float, where: str = "metadata") -> Trace:
    """A trace as stored before the rule: the reward column copied from metadata or extra
    without any check. Written with the model of that time: later migrations add columns
    the table did not have yet."""
    state = MigrationExecutor(connection).loader.project_state(BEFORE)
    then = state.apps.get_model("traces", "Trace")
    created = then.objects.create(
        organization_id=dataset.organization_id, dataset_id=dataset.pk,
        index=then.objects.filter(dataset_id=dataset.pk).count(),
        **{where: {"reward": reward}}, reward=reward,
    )  # fmt: skip
    return Trace(pk=created.pk)


def test_pages_answer_after_the_rule_clears_rewards_out_of_range(before_the_rule):
    # The models of that time: later migrations add columns (a dataset's uuid).
    then = MigrationExecutor(connection).loader.project_state(BEFORE).apps
    org = then.get_model("traces", "Organization").objects.create(slug="lab", name="Lab")
    datasets = then.get_model("traces", "Dataset").objects
    public = datasets.create(organization=org, name="huge", is_public=True)
    for reward in (0.0, 1.0, 1.0):
        stored(public, reward)
    huge = stored(public, 1e200, where="extra")
    extreme = datasets.create(organization=org, name="extreme")
    for reward in (1.7e308, -1.7e308, 0.5):
        stored(extreme, reward)

    migrate(RULE)
    migrate(latest())  # what the rule did stays; the pages read today's schema

    huge.refresh_from_db()
    assert (huge.reward, huge.extra) == (None, {"reward": 1e200})  # the value is kept
    rewards = Trace.objects.filter(dataset_id=extreme.pk).order_by("index").values_list("reward")
    assert [r for (r,) in rewards] == [None, None, 0.5]  # the extremes cleared
    metadata = Trace.objects.filter(dataset_id=extreme.pk).values("metadata")
    assert sorted(r["metadata"]["reward"] for r in metadata) == [
        -1.7e308, 0.5, 1.7e308,
    ]  # fmt: skip

    # The pages read the latest schema (later migrations add tables they read too).
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("traces")[0])
    outsider = Client()
    outsider.force_login(make_user(None, "outsider"))
    home = outsider.get(reverse("datasets"))
    assert home.status_code == 200
    assert "0.667" in home.content.decode()  # huge: the accuracy of 0, 1, 1

    member = Client()
    member.force_login(make_user(Organization.objects.get(pk=org.pk), "member"))
    page = member.get(reverse("dataset", args=[extreme.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    # the one reward left, 0.5, is not a success
    assert "computed 0.000: 0 of the 1 trace with a reward succeeded (reward 1), of 3" in html
    assert re.search(r"\b(nan|inf)\b", html, re.IGNORECASE) is None


def test_the_histogram_of_extreme_rewards_has_finite_edges(db):
    """Were such rewards ever stored, the histogram's edges would still be numbers."""
    distribution = [(1.7e308, 1, None), (-1.7e308, 1, None), (0.5, 1, None)]
    summary = reward_summary(traces=Trace.objects.none(), distribution=distribution)
    histogram = reward_histogram(
        traces=Trace.objects.none(), summary=summary, distribution=distribution
    )
    edges = [edge for b in histogram.bins for edge in (b.low, b.high)]
    assert histogram.kind == "range"
    assert all(-1.7e308 <= edge <= 1.7e308 for edge in edges)
    assert sum(b.count for b in histogram.bins) == 3
