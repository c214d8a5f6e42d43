"""GET /v1/organizations/<org>/compare/traces and /compare/datasets: their answers on real
runs (figures from scipy over the raw files), and every error with its status and body."""

import pytest
from rest_framework.test import APIClient

from tests.api.conftest import BASE, error_of
from tests.compare_data import GPT41, GROK3, expected, import_runs, raw
from tests.conftest import organization, written_for_the_module
from traces.models import Block, Dataset, Trace
from traces.selectors.compare import WILCOXON
from traces.services.organizations import organization_get_or_create

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def two_models(django_db_setup, django_db_blocker):
    """Two real runs imported into acme once for the module (its tests only read them)."""
    top_a, top_b = raw(GPT41), raw(GROK3)
    with written_for_the_module(django_db_blocker):
        org = organization("acme")
        yield import_runs(org, "gpt-4.1", top_a), import_runs(org, "grok-3", top_b), top_a, top_b


def _pair(a: Dataset, b: Dataset) -> tuple[Trace, Trace]:
    """gpt-4.1's first run and grok-3's run of a task both have."""
    ta = a.traces.order_by("index").first()
    tb = Trace.objects.get(dataset=b, metadata__contains=ta.metadata["task_id"])
    return ta, tb


def test_compare_traces_answers_the_aligned_steps(api, two_models):
    a, b, _, _ = two_models
    ta, tb = _pair(a, b)
    response = api.get(f"{BASE}/compare/traces", {"a": ta.pk, "b": tb.pk})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"a", "b", "first_divergence", "steps"}
    ids_a = list(
        Block.objects.filter(trace=ta).order_by("created_at", "id").values_list("id", flat=True)
    )
    ids_b = list(
        Block.objects.filter(trace=tb).order_by("created_at", "id").values_list("id", flat=True)
    )
    assert [s["a"] for s in body["steps"] if s["a"]] == ids_a
    assert [s["b"] for s in body["steps"] if s["b"]] == ids_b
    first = next(s for s in body["steps"] if not s["same"])
    assert body["first_divergence"] == {"a": first["a"], "b": first["b"]}
    for step in body["steps"]:
        assert set(step) == {"a", "b", "same"}
        if step["same"]:
            pa = Block.objects.get(pk=step["a"]).payload
            pb = Block.objects.get(pk=step["b"]).payload
            pa.pop("call_id", None)
            pb.pop("call_id", None)
            assert pa == pb


def test_a_trace_compared_with_itself_has_both_divergences_null(api, two_models):
    a, _, _, _ = two_models
    trace = a.traces.first()
    body = api.get(f"{BASE}/compare/traces", {"a": trace.pk, "b": trace.pk}).json()
    assert body["first_divergence"] == {"a": None, "b": None}
    assert all(s["same"] and s["a"] == s["b"] for s in body["steps"])


def test_compare_datasets_answers_the_figures_of_scipy(api, two_models):
    a, b, top_a, top_b = two_models
    response = api.get(f"{BASE}/compare/datasets", {"a": a.pk, "b": b.pk})
    assert response.status_code == 200
    body = response.json()
    want = expected(top_a["simulations"], top_b["simulations"])
    assert body["key"] == "task_id"
    got = {t["task"]: (t["n_a"], t["n_b"], t["success_a"], t["success_b"]) for t in body["tasks"]}
    assert got == want["tasks"]
    s = body["summary"]
    assert s["shared_tasks"] == 5
    assert s["accuracy_a"] == pytest.approx(want["accuracy_a"])
    assert s["accuracy_b"] == pytest.approx(want["accuracy_b"])
    assert s["accuracy_a_ci"] == pytest.approx(want["accuracy_a_ci"])
    assert s["mean_difference"] == pytest.approx(want["mean_difference"])
    assert [s["ci_low"], s["ci_high"]] == pytest.approx(want["ci"])
    assert s["p_value"] == pytest.approx(want["p_value"])
    assert s["test"] == WILCOXON
    assert "significant at 5%" in s["in_words"]


def test_compare_datasets_compares_two_slices_of_one_dataset(api, two_models):
    a, _, top_a, _ = two_models
    query = {"a": a.pk, "a_where": "trial=0", "b_where": "trial=2"}
    body = api.get(f"{BASE}/compare/datasets", query).json()
    sims = top_a["simulations"]
    want = expected([s for s in sims if s["trial"] == 0], [s for s in sims if s["trial"] == 2])
    got = {t["task"]: (t["n_a"], t["n_b"], t["success_a"], t["success_b"]) for t in body["tasks"]}
    assert got == want["tasks"]
    assert body["summary"]["accuracy_b"] == pytest.approx(want["accuracy_b"])


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["traces", "datasets"])
@pytest.mark.parametrize("missing", ["a", "b"])
def test_a_missing_side_is_422_naming_it(api, two_models, route, missing):
    a, b, _, _ = two_models
    ids = (
        {"a": a.pk, "b": b.pk}
        if route == "datasets"
        else dict(zip("ab", map(lambda t: t.pk, _pair(a, b)), strict=True))
    )
    del ids[missing]
    response = api.get(f"{BASE}/compare/{route}", ids)
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "VALIDATION"
    assert error["details"] == {"field": missing, "rule": "required"}
    assert error["message"] == f"the query parameter {missing} is required"


def test_a_slice_that_is_not_key_value_is_422(api, two_models):
    a, _, _, _ = two_models
    response = api.get(f"{BASE}/compare/datasets", {"a": a.pk, "a_where": "trial"})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "a_where", "rule": "key=value"}


@pytest.mark.parametrize("route,kind", [("traces", "trace"), ("datasets", "dataset")])
def test_an_unknown_id_is_404(api, two_models, route, kind):
    a, b, _, _ = two_models
    known = a.pk if route == "datasets" else a.traces.first().pk
    response = api.get(f"{BASE}/compare/{route}", {"a": known, "b": "nope_1"})
    assert response.status_code == 404
    error = error_of(response)
    assert error["code"] == "NOT_FOUND"
    assert error["details"] == {f"{kind}_id": "nope_1"}


def _rival_dataset() -> Dataset:
    rival = organization_get_or_create(slug="rival")
    return import_runs(rival, "theirs", raw(GPT41))


@pytest.mark.parametrize("route", ["traces", "datasets"])
def test_another_organizations_private_side_is_404(api, two_models, route):
    a, _, _, _ = two_models
    theirs = _rival_dataset()
    if route == "datasets":
        mine, other, kind = a.pk, theirs.pk, "dataset"
    else:
        mine, other, kind = a.traces.first().pk, theirs.traces.first().pk, "trace"
    response = api.get(f"{BASE}/compare/{route}", {"a": mine, "b": other})
    assert response.status_code == 404
    assert error_of(response)["details"] == {f"{kind}_id": other}


@pytest.mark.parametrize("route", ["traces", "datasets"])
def test_both_sides_of_another_organization_are_404_from_its_url(api, two_models, route):
    theirs = _rival_dataset()
    if route == "datasets":
        ids = {"a": theirs.pk, "b": theirs.pk}
    else:
        trace = theirs.traces.first().pk
        ids = {"a": trace, "b": trace}
    response = api.get(f"/v1/organizations/rival/compare/{route}", ids)
    assert response.status_code == 404
    assert error_of(response)["details"] == {"org": "rival"}


def test_a_public_side_of_another_organization_is_read_under_its_own_url(api, two_models):
    theirs = _rival_dataset()
    Dataset.objects.filter(pk=theirs.pk).update(is_public=True)
    response = api.get("/v1/organizations/rival/compare/datasets", {"a": theirs.pk, "b": theirs.pk})
    assert response.status_code == 200
    assert response.json()["summary"]["shared_tasks"] == 5


def test_without_a_key_private_datasets_are_404(two_models):
    # Nobody signed in reads public data only (DESIGN.md); a private side is not found.
    a, _, _, _ = two_models
    response = APIClient().get(f"{BASE}/compare/datasets", {"a": a.pk, "b": a.pk})
    assert response.status_code == 404
    assert error_of(response)["code"] == "NOT_FOUND"
