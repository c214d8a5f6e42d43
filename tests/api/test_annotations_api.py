"""/v1 labels and annotations: a dataset's vocabulary, and labels and comments on the
traces and blocks of real tau2-bench runs."""

import pytest

from tests.api.conftest import BASE, error_of, post_json
from traces.models import Annotation, Label


def _labels_url(dataset) -> str:
    return f"{BASE}/datasets/{dataset.pk}/labels"


def test_members_add_labels_and_tag_a_trace_and_a_block(api, runs):
    for name in ("wrong tool", "gave up"):
        assert post_json(api, _labels_url(runs), {"name": name}).status_code == 201
    trace = runs.traces.order_by("index")[0]
    block = trace.blocks.filter(sub_type="TOOL_CALL").order_by("created_at", "id").first()
    url = f"{BASE}/traces/{trace.pk}/annotations"
    on_trace = post_json(api, url, {"label": "gave up", "comment": "stopped at turn 3"})
    on_block = post_json(api, url, {"label": "wrong tool", "block_id": block.pk})
    assert (on_trace.status_code, on_block.status_code) == (201, 201)
    assert on_trace.json()["label"] == "gave up"
    assert on_trace.json()["comment"] == "stopped at turn 3"
    assert on_trace.json()["block_id"] is None and on_block.json()["block_id"] == block.pk
    listed = api.get(url).json()["annotations"]
    assert [(a["label"], a["block_id"]) for a in listed] == [
        ("gave up", None),
        ("wrong tool", block.pk),
    ]
    counts = {row["name"]: row["traces"] for row in api.get(_labels_url(runs)).json()["labels"]}
    assert counts == {"wrong tool": 1, "gave up": 1}


def test_the_trace_list_filters_by_label(api, runs):
    post_json(api, _labels_url(runs), {"name": "gave up"})
    tagged = [t for t in runs.traces.order_by("index") if t.reward == 0][:2]
    for trace in tagged:
        post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"label": "gave up"})
    found = api.get(f"{BASE}/traces", {"dataset": runs.pk, "label": "Gave Up"}).json()["traces"]
    assert sorted(t["id"] for t in found) == sorted(t.pk for t in tagged)
    none = api.get(f"{BASE}/traces", {"dataset": runs.pk, "label": "unknown"}).json()
    assert none["traces"] == []


def test_a_comment_alone_is_an_annotation_and_deleting_it_removes_it(api, runs):
    trace = runs.traces.order_by("index")[0]
    created = post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"comment": "odd retry"})
    assert created.status_code == 201 and created.json()["label"] is None
    assert api.delete(f"{BASE}/annotations/{created.json()['id']}").status_code == 204
    assert not Annotation.objects.exists()


def test_a_label_not_in_the_vocabulary_is_refused_with_the_known_ones(api, runs):
    post_json(api, _labels_url(runs), {"name": "wrong tool"})
    trace = runs.traces.first()
    response = post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"label": "typo"})
    assert response.status_code == 422
    assert error_of(response) == {
        "code": "VALIDATION",
        "http_status": 422,
        "message": "the dataset has no label 'typo'; add it to the vocabulary first",
        "details": {"field": "label", "rule": "in_vocabulary", "known": ["wrong tool"]},
    }


def test_an_annotation_needs_a_label_or_a_comment(api, runs):
    response = post_json(api, f"{BASE}/traces/{runs.traces.first().pk}/annotations", {})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "label", "rule": "label_or_comment"}


def test_a_block_of_another_trace_is_refused(api, runs):
    first, second = runs.traces.order_by("index")[:2]
    other_block = second.blocks.first()
    response = post_json(
        api, f"{BASE}/traces/{first.pk}/annotations", {"comment": "x", "block_id": other_block.pk}
    )
    assert response.status_code == 422
    assert error_of(response)["details"]["rule"] == "in_trace"


def test_a_second_label_of_the_same_name_is_409(api, runs):
    post_json(api, _labels_url(runs), {"name": "gave up"})
    response = post_json(api, _labels_url(runs), {"name": " gave up "})
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "DUPLICATE_LABEL",
        "http_status": 409,
        "message": "the dataset has a label named 'gave up' already",
        "details": {"field": "name", "rule": "unique", "name": "gave up"},
    }


@pytest.mark.parametrize(
    ("name", "rule"),
    [("", "required"), ("a\nb", "no_control_characters"), ("x" * 101, "max_length")],
)
def test_a_bad_label_name_is_422(api, runs, name, rule):
    response = post_json(api, _labels_url(runs), {"name": name})
    assert response.status_code == 422
    assert error_of(response)["details"]["rule"] == rule


def test_a_huge_comment_is_422_not_kept(api, runs):
    trace = runs.traces.first()
    response = post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"comment": "x" * 10_001})
    assert response.status_code == 422
    assert error_of(response)["details"] == {
        "field": "comment", "rule": "max_length", "limit": 10_000, "actual": 10_001,
    }  # fmt: skip


def test_removing_a_label_is_the_owners_and_takes_its_tags(api, owner_api, runs):
    label = post_json(api, _labels_url(runs), {"name": "gave up"}).json()
    trace = runs.traces.first()
    post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"label": "gave up"})
    refused = api.delete(f"{_labels_url(runs)}/{label['id']}")
    assert refused.status_code == 403
    assert error_of(refused)["code"] == "FORBIDDEN"
    assert owner_api.delete(f"{_labels_url(runs)}/{label['id']}").status_code == 204
    assert not Label.objects.exists() and not Annotation.objects.exists()


def test_unknown_ids_are_404_in_the_envelope(api, runs):
    missing = api.delete(f"{BASE}/annotations/an_nope")
    assert missing.status_code == 404
    assert error_of(missing) == {
        "code": "NOT_FOUND",
        "http_status": 404,
        "message": "no annotation 'an_nope'",
        "details": {"annotation_id": "an_nope"},
    }
    assert error_of(api.delete(f"{_labels_url(runs)}/lb_nope"))["details"] == {
        "label_id": "lb_nope"
    }


def test_another_organization_sees_nothing(other_api, api, runs):
    trace = runs.traces.first()
    note = post_json(api, f"{BASE}/traces/{trace.pk}/annotations", {"comment": "mine"}).json()
    assert other_api.get(f"{BASE}/traces/{trace.pk}/annotations").status_code == 404
    assert other_api.delete(f"{BASE}/annotations/{note['id']}").status_code == 404
    assert Annotation.objects.count() == 1


def test_a_viewer_reads_but_does_not_tag(viewer_api, runs):
    trace = runs.traces.first()
    assert viewer_api.get(f"{BASE}/traces/{trace.pk}/annotations").status_code == 200
    response = post_json(viewer_api, f"{BASE}/traces/{trace.pk}/annotations", {"comment": "x"})
    assert response.status_code == 403
    assert error_of(response)["code"] == "FORBIDDEN"
