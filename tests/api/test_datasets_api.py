import io
import json

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.api.conftest import BASE, error_of, post_json
from tests.conftest import FIXTURES
from traces.models import Dataset, Trace


def test_it_creates_lists_reads_updates_and_deletes_a_dataset(owner_api):
    api = owner_api
    created = post_json(api, f"{BASE}/datasets", {"name": "runs", "metadata": {"b": 1, "a": 2}})
    assert created.status_code == 201
    dataset = created.json()
    assert list(dataset["metadata"]) == ["b", "a"] and dataset["trace_count"] == 0
    assert [d["name"] for d in api.get(f"{BASE}/datasets").json()["datasets"]] == ["runs"]
    url = f"{BASE}/datasets/{dataset['id']}"
    merged = api.patch(url, {"metadata": {"a": None, "c": 3}, "is_public": True}, format="json")
    assert merged.json()["metadata"] == {"b": 1, "c": 3} and merged.json()["is_public"]
    replaced = api.patch(url, {"metadata": {"z": 0}, "replace_metadata": True}, format="json")
    assert replaced.json()["metadata"] == {"z": 0}
    assert api.delete(url).status_code == 204
    assert error_of(api.get(url))["code"] == "NOT_FOUND"


def test_it_refuses_a_second_dataset_with_the_same_name(api):
    post_json(api, f"{BASE}/datasets", {"name": "runs"})
    response = post_json(api, f"{BASE}/datasets", {"name": "runs"})
    assert response.status_code == 409
    assert error_of(response) == {
        "code": "DUPLICATE_NAME",
        "http_status": 409,
        "message": "a dataset named 'runs' already exists",
        "details": {"field": "name", "rule": "unique"},
    }


def test_it_refuses_a_dataset_without_a_name(api):
    response = post_json(api, f"{BASE}/datasets", {"metadata": {}})
    assert response.status_code == 422
    error = error_of(response)
    assert (error["code"], error["details"]["field"]) == ("VALIDATION", "name")


def test_upload_imports_files_and_export_gives_them_back(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    path = FIXTURES / "spec000_full_trace.json"
    with path.open("rb") as one, path.open("rb") as two:
        response = api.post(
            f"{BASE}/datasets/{dataset['id']}/upload",
            {"files": [one, two], "allow_duplicates": "true"},
            format="multipart",
        )
    assert response.status_code == 201, response.json()
    assert (response.json()["traces"], response.json()["dataset"]["trace_count"]) == (2, 2)
    assert response.json()["skipped"] == []
    export = api.get(f"{BASE}/datasets/{dataset['id']}/export")
    assert export["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(export.streaming_content).splitlines()]
    assert lines[1]["messages"] == json.loads(path.read_text())
    assert len(lines) == 3


def test_a_bad_upload_lists_every_problem_and_writes_nothing(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    bad = io.BytesIO(b'[{"role": "user", "content": "x"}]\n{oops\n')
    bad.name = "bad.jsonl"
    response = api.post(
        f"{BASE}/datasets/{dataset['id']}/upload", {"files": [bad]}, format="multipart"
    )
    assert response.status_code == 422
    error = error_of(response)
    assert error["message"].startswith("1 problem found; nothing was written")
    [found] = error["details"]["problems"]
    assert (found["file"], found["line"], found["rule"]) == ("bad.jsonl", 2, "json")
    assert not Trace.objects.exists() and Dataset.objects.count() == 1


def upload_files(count: int) -> list[io.BytesIO]:
    files = []
    for n in range(count):
        f = io.BytesIO(b'[{"role": "user", "content": "x%d"}]\n' % n)  # not duplicates
        f.name = f"{n}.jsonl"
        files.append(f)
    return files


def test_an_upload_of_too_many_files_answers_413_in_the_envelope(api, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    url = f"{BASE}/datasets/{dataset['id']}/upload"
    response = api.post(url, {"files": upload_files(3)}, format="multipart")
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert error["details"] == {"field": "files", "rule": "max_files", "limit_files": 2}
    assert error["message"].startswith("more than 2 files in one upload (UPLOAD_MAX_FILES)")
    assert not Trace.objects.exists()
    ok = api.post(url, {"files": upload_files(2)}, format="multipart")
    assert ok.status_code == 201 and ok.json()["traces"] == 2


def test_an_upload_over_the_size_cap_answers_413_in_the_envelope(api, settings):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    settings.UPLOAD_MAX_BYTES = 300
    response = api.post(
        f"{BASE}/datasets/{dataset['id']}/upload", {"files": upload_files(5)}, format="multipart"
    )
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert (error["details"]["field"], error["details"]["limit_bytes"]) == ("body", 300)
    assert not Trace.objects.exists()


def test_export_refuses_an_unknown_format(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    response = api.get(f"{BASE}/datasets/{dataset['id']}/export?format=csv")
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "format", "rule": "enum"}


def test_a_member_key_edits_metadata_but_not_visibility_name_or_existence(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    url = f"{BASE}/datasets/{dataset['id']}"
    assert api.patch(url, {"description": "d", "metadata": {"a": 1}}, format="json").json()[
        "metadata"
    ] == {"a": 1}
    for body in ({"is_public": True}, {"name": "renamed"}):
        refused = api.patch(url, body, format="json")
        assert refused.status_code == 403
        assert error_of(refused) == {
            "code": "FORBIDDEN",
            "http_status": 403,
            "message": "only owners may manage this dataset; your role is member",
            "details": {"action": "manage", "role": "member"},
        }
    assert error_of(api.delete(url))["code"] == "FORBIDDEN"
    public = post_json(api, f"{BASE}/datasets", {"name": "open", "is_public": True})
    assert error_of(public)["code"] == "FORBIDDEN"
    stored = Dataset.objects.get()
    assert (stored.name, stored.is_public) == ("runs", False)


def test_a_viewer_key_reads_and_writes_nothing(api, viewer_api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    url = f"{BASE}/datasets/{dataset['id']}"
    assert viewer_api.get(url).json()["name"] == "runs"
    assert [d["name"] for d in viewer_api.get(f"{BASE}/datasets").json()["datasets"]] == ["runs"]
    assert error_of(post_json(viewer_api, f"{BASE}/datasets", {"name": "x"}))["code"] == (
        "FORBIDDEN"
    )
    assert error_of(viewer_api.patch(url, {"description": "d"}, format="json"))["code"] == (
        "FORBIDDEN"
    )
    assert Dataset.objects.get().description == ""


def test_an_upload_of_a_trace_the_dataset_has_skips_and_reports_it(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    path = FIXTURES / "spec000_full_trace.json"
    url = f"{BASE}/datasets/{dataset['id']}/upload"
    with path.open("rb") as one:
        assert api.post(url, {"files": [one]}, format="multipart").status_code == 201
    with path.open("rb") as again:
        response = api.post(url, {"files": [again]}, format="multipart")
    assert response.status_code == 201
    body = response.json()
    assert (body["traces"], body["dataset"]["trace_count"]) == (0, 1)
    assert body["skipped"] == [{"file": path.name, "trace": 0, "name": "", "reason": "in_dataset"}]
    assert body["metadata_kept"] == []


def test_an_upload_names_the_dataset_metadata_it_did_not_write(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs", "metadata": {"model": "m1"}})
    body = (
        b'{"metadata": {"model": "m2", "suite": "s"}}\n'
        b'{"messages": [{"role": "user", "content": "q"}]}\n'
    )
    response = api.post(
        f"{BASE}/datasets/{dataset.json()['id']}/upload",
        {"files": [SimpleUploadedFile("a.jsonl", body)]},
        format="multipart",
    )
    assert response.status_code == 201
    got = response.json()
    assert got["metadata_kept"] == [{"key": "model", "file": "a.jsonl", "reason": "in_dataset"}]
    assert got["dataset"]["metadata"] == {"model": "m1", "suite": "s"}


def test_allow_duplicates_must_be_a_boolean(api):
    dataset = post_json(api, f"{BASE}/datasets", {"name": "runs"}).json()
    path = FIXTURES / "spec000_full_trace.json"
    with path.open("rb") as one:
        response = api.post(
            f"{BASE}/datasets/{dataset['id']}/upload",
            {"files": [one], "allow_duplicates": "perhaps"},
            format="multipart",
        )
    assert response.status_code == 422
    error = error_of(response)
    assert (error["code"], error["details"]["field"]) == ("VALIDATION", "allow_duplicates")
