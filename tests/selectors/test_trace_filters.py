"""traces/selectors/trace_filters.py: one filter of trace lists, which the dataset page
reads from its form and /v1/.../traces from its query parameters."""

import pytest
from django.urls import reverse

from tests.explorer.conftest import import_traces, make_user
from traces.models import Trace
from traces.selectors.trace_filters import TraceFilter, traces_filtered
from traces.services.annotations import trace_extra_update


def run(text: str, **metadata) -> dict:
    return {
        "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}],
        "metadata": metadata,
    }


@pytest.fixture
def traces(org) -> list[Trace]:
    found = import_traces(org, "filters", [
        run("apple pie", task_id=7, reward=1),
        run("banana bread", task_id=7, reward=0),
        run("apple tart", task_id=8, reward=0.5),
        run("cherry jam", task_id=8),
        run("apple jam", task_id="7", reward=2),
    ])  # fmt: skip
    trace_extra_update(trace=found[3], extra={"note": "looked at"})
    return found


def page_ids(client, dataset, params: dict) -> set[str]:
    response = client.get(reverse("dataset", args=[dataset.pk]), params)
    assert response.status_code == 200 and not response.context["filter_errors"]
    return {row["trace"].pk for row in response.context["rows"]}


def api_ids(api, dataset, params: dict) -> set[str]:
    response = api.get(reverse("api-traces", args=["acme"]), {"dataset": dataset.pk, **params})
    assert response.status_code == 200, response.json()
    return {t["id"] for t in response.json()["traces"]}


# (the dataset page's form, the API's query parameters): the same filter
SAME_FILTERS = [
    ({"reward": "1"}, {"reward": "1"}),
    ({"reward": "0"}, {"reward": "0"}),
    ({"reward_min": "0.5"}, {"reward_min": "0.5"}),
    ({"meta": "task_id=7"}, {"metadata.task_id": "7"}),
    ({"meta": "task_id=8", "reward_min": "0.1"}, {"metadata.task_id": "8", "reward_min": "0.1"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("form", "query"), SAME_FILTERS)
def test_the_page_and_the_api_list_the_same_traces_for_the_same_filter(
    org, api, client, traces, form, query
):
    client.force_login(make_user(org, "filter-reader"))
    dataset = traces[0].dataset
    shown = page_ids(client, dataset, form)
    assert shown == api_ids(api, dataset, query)
    assert shown, "a filter that keeps nothing compares nothing"


def ids(found) -> list[int]:
    return sorted(t.index for t in found)


def test_each_part_of_the_filter_keeps_what_it_says(traces):
    everything = Trace.objects.filter(dataset=traces[0].dataset)

    def kept(**parts) -> list[int]:
        return ids(traces_filtered(traces=everything, filters=TraceFilter(**parts)))

    assert kept() == [0, 1, 2, 3, 4]
    assert kept(reward=1.0) == [0]
    assert kept(no_reward=True) == [3]
    assert kept(reward_min=0.5) == [0, 2, 4]
    assert kept(reward_max=0.5) == [1, 2]
    assert kept(metadata={"task_id": "7"}) == [0, 1, 4]  # the number 7 and the string "7"
    assert kept(annotated=True) == [3]
    assert kept(annotated=False) == [0, 1, 2, 4]
    assert kept(text="apple") == [0, 2, 4]
    assert kept(text="apple", reward_min=1.0, metadata={"task_id": "7"}) == [0, 4]


def test_a_form_that_cannot_be_read_says_so_and_leaves_that_part_off(org, client, traces):
    client.force_login(make_user(org, "filter-reader"))
    dataset = traces[0].dataset
    response = client.get(
        reverse("dataset", args=[dataset.pk]), {"reward_min": "lots", "meta": "task_id"}
    )
    assert len(response.context["filter_errors"]) == 2
    assert len(response.context["rows"]) == 5
