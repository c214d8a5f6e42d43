"""NUL (U+0000) in each field that reaches a text column or a lookup: what each answers.

PostgreSQL's text refuses NUL, so each of these answered 500 there. The rule, the same on
both databases: names and ids are refused with a 4xx naming the field; search text and
ids that are only looked up match nothing; metadata filters match stored NULs; payload
strings keep NUL (they are stored as JSON text, escaped).
"""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.api.conftest import BASE, error_of, post_json
from traces.errors import ImportFailed, ValidationFailed
from traces.models import ApiKey, Block, Dataset, Trace
from traces.services.datasets import dataset_create, dataset_update
from traces.services.imports import trace_import
from traces.services.traces import trace_create, trace_patch

NUL = "\x00"
USER = {"role": "user", "content": "hi"}


@pytest.fixture
def imported(org):
    """Two traces, one whose metadata has a key and a value with NUL."""
    lines = [
        {"messages": [{"role": "user", "content": f"find a{NUL}b"}],
         "metadata": {f"k{NUL}ey": f"v{NUL}al", "task": "t1"}},
        {"messages": [USER], "metadata": {"task": "t2"}},
    ]  # fmt: skip
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = trace_import(organization=org, dataset_name="nul", files=[("n.jsonl", io.BytesIO(
        data))])  # fmt: skip
    return result.dataset


def import_problem(org, lines, name="n.jsonl"):
    """The problem of the last line (a file of one line would not be JSON Lines)."""
    data = "".join(json.dumps(line) + "\n" for line in [[USER], *lines]).encode()
    with pytest.raises(ImportFailed) as caught:
        trace_import(organization=org, dataset_name="nul-bad", files=[(name, io.BytesIO(data))])
    assert not Dataset.objects.filter(name="nul-bad").exists()
    [found] = caught.value.problems
    return found


# --- names -----------------------------------------------------------------------------


def test_the_upload_form_refuses_a_new_dataset_name_with_nul(owner_client):
    file = SimpleUploadedFile("a.json", json.dumps([USER]).encode())
    response = owner_client.post(reverse("upload"), {"name": f"runs{NUL}", "files": [file]})
    assert response.status_code == 400
    assert b"Name holds a NUL character (U+0000) at position 4." in response.content
    assert not Dataset.objects.exists()


def test_the_upload_form_refuses_an_organization_slug_with_nul(owner_client):
    file = SimpleUploadedFile("a.json", json.dumps([USER]).encode())
    form = {"name": "runs", "organization": f"acme{NUL}", "files": [file]}
    response = owner_client.post(reverse("upload"), form)
    assert response.status_code == 400
    assert b"Organization holds a NUL character" in response.content
    assert not Dataset.objects.exists()


def test_the_upload_form_answers_a_dataset_id_with_nul_as_no_such_dataset(owner_client):
    file = SimpleUploadedFile("a.json", json.dumps([USER]).encode())
    response = owner_client.post(reverse("upload"), {"dataset": f"ds_{NUL}", "files": [file]})
    assert response.status_code == 404
    assert b"There is no such dataset" in response.content


def test_the_upload_page_ignores_a_dataset_with_nul_in_its_address(owner_client):
    response = owner_client.get(reverse("upload") + "?dataset=ds_%00")
    assert response.status_code == 200


def test_an_upload_file_named_with_nul_is_imported(owner_client):
    file = SimpleUploadedFile(f"a{NUL}b.json", json.dumps([USER]).encode())
    response = owner_client.post(reverse("upload"), {"name": "runs", "files": [file]})
    assert response.status_code == 302
    assert Trace.objects.filter(dataset__name="runs").count() == 1


def test_a_trace_name_with_nul_in_a_file_is_a_problem_naming_the_field(org):
    found = import_problem(org, [{"messages": [USER], "metadata": {"name": f"run{NUL}1"}}])
    assert (found["field"], found["rule"], found["line"], found["file"]) == (
        "name", "no_nul", 2, "n.jsonl"
    )  # fmt: skip


def test_the_api_refuses_a_dataset_name_with_nul(api):
    response = post_json(api, f"{BASE}/datasets", {"name": f"a{NUL}"})
    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "name"
    response = post_json(api, f"{BASE}/traces", {"dataset": f"a{NUL}"})
    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "dataset"
    assert not Dataset.objects.exists()


def test_the_keys_page_refuses_a_key_name_with_nul(owner_client):
    response = owner_client.post(reverse("api-keys"), {"organization": "acme", "name": f"ci{NUL}"})
    assert response.status_code == 400
    assert b"name holds a NUL character" in response.content
    assert not ApiKey.objects.exists()


def test_the_keys_page_answers_an_organization_with_nul_as_not_found(owner_client):
    response = owner_client.post(reverse("api-keys"), {"organization": f"acme{NUL}", "name": "ci"})
    assert response.status_code == 404
    assert not ApiKey.objects.exists()


# --- call ids and parents --------------------------------------------------------------


@pytest.fixture
def api_trace(api):
    trace = post_json(api, f"{BASE}/traces", {}).json()
    message = post_json(
        api,
        f"{BASE}/traces/{trace['id']}/blocks",
        {"sub_type": "MESSAGE", "payload": {"role": "assistant"}},
    ).json()
    return trace["id"], message["id"]


def call(call_id: str, parent: str) -> dict:
    return {
        "sub_type": "TOOL_CALL",
        "parent_block_id": parent,
        "payload": {"call_id": call_id, "name": "f", "arguments": {}},
    }


def test_the_api_refuses_a_call_id_with_nul_naming_it(api, api_trace):
    trace_id, message_id = api_trace
    response = post_json(api, f"{BASE}/traces/{trace_id}/blocks", call(f"c{NUL}1", message_id))
    assert response.status_code == 422
    details = error_of(response)["details"]
    assert (details["field"], details["rule"]) == ("payload.call_id", "no_nul")
    batch = {"blocks": [call("fine", message_id), call(f"c{NUL}2", message_id)]}
    response = post_json(api, f"{BASE}/traces/{trace_id}/blocks:batch", batch)
    assert response.status_code == 422
    details = error_of(response)["details"]
    assert (details["field"], details["rule"], details["index"]) == ("payload.call_id", "no_nul", 1)
    assert Block.objects.filter(trace_id=trace_id).count() == 1


def test_the_api_answers_a_parent_id_with_nul_as_no_such_block(api, api_trace):
    trace_id, message_id = api_trace
    response = post_json(api, f"{BASE}/traces/{trace_id}/blocks", call("c1", f"{message_id}{NUL}"))
    assert response.status_code == 422
    assert error_of(response)["details"]["rule"] == "parent_exists"


def test_imports_refuse_a_call_id_with_nul_naming_it(org):
    chat = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{NUL}1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]},
    ]  # fmt: skip
    found = import_problem(org, [chat])
    assert (found["field"], found["rule"], found["event"]) == (
        "tool_calls[0].payload.call_id", "no_nul", 1
    )  # fmt: skip
    blocks = [
        {"sub_type": "MESSAGE", "payload": {"role": "assistant", "content": None}},
        {"sub_type": "TOOL_CALL", "payload": {"call_id": f"c{NUL}", "name": "f", "arguments": {}}},
    ]
    found = import_problem(org, [blocks])
    assert (found["field"], found["rule"], found["block"]) == ("payload.call_id", "no_nul", 1)


# --- payloads keep NUL ------------------------------------------------------------------


def test_payload_and_metadata_strings_keep_nul(api, api_trace):
    trace_id, _ = api_trace
    payload = {"role": "user", "content": f"a{NUL}b", f"x{NUL}": [NUL]}
    block = {"sub_type": "MESSAGE", "payload": payload, "extra": {NUL: NUL}}
    created = post_json(api, f"{BASE}/traces/{trace_id}/blocks", block)
    assert created.status_code == 201
    block = api.get(f"{BASE}/blocks/{created.json()['id']}").json()
    assert (block["payload"], block["extra"]) == (payload, {NUL: NUL})
    dataset = post_json(api, f"{BASE}/datasets", {"name": "d", "metadata": {NUL: f"v{NUL}"}})
    assert dataset.status_code == 201 and dataset.json()["metadata"] == {NUL: f"v{NUL}"}


# --- search text, lookups and filters ---------------------------------------------------


def test_search_text_with_nul_matches_nothing(owner_client, api, imported):
    page = owner_client.get(reverse("dataset", args=[imported.pk]), {"q": f"a{NUL}b"})
    assert page.status_code == 200 and page.context["page"].paginator.count == 0
    assert owner_client.get(reverse("dataset", args=[imported.pk]), {"q": "find"}).context[
        "page"].paginator.count == 1  # fmt: skip
    listing = owner_client.get(reverse("datasets"), {"q": f"n{NUL}"})
    assert listing.status_code == 200 and listing.context["datasets"] == []
    assert len(owner_client.get(reverse("datasets"), {"q": "nu"}).context["datasets"]) == 1
    found = api.get(f"{BASE}/datasets", {"q": f"n{NUL}"})
    assert found.status_code == 200 and found.json()["datasets"] == []


def test_the_trace_list_answers_a_dataset_or_cursor_with_nul(api, imported):
    response = api.get(f"{BASE}/traces", {"dataset": f"nul{NUL}"})
    assert response.status_code == 404 and error_of(response)["code"] == "NOT_FOUND"
    response = api.get(f"{BASE}/traces", {"cursor": f"tr_{NUL}"})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "cursor", "rule": "cursor"}


def test_metadata_filters_with_nul_find_what_was_stored(api, owner_client, imported):
    traces = api.get(f"{BASE}/traces", {f"metadata.k{NUL}ey": f"v{NUL}al"}).json()["traces"]
    assert [t["metadata"]["task"] for t in traces] == ["t1"]
    assert api.get(f"{BASE}/traces", {f"metadata.k{NUL}ey": "val"}).json()["traces"] == []
    assert api.get(f"{BASE}/traces", {"metadata.task": f"t1{NUL}"}).json()["traces"] == []
    page = owner_client.get(reverse("dataset", args=[imported.pk]), {"meta": f"k{NUL}ey=v{NUL}al"})
    assert page.status_code == 200 and page.context["page"].paginator.count == 1
    page = owner_client.get(reverse("dataset", args=[imported.pk]), {"meta": f"task{NUL}=t1"})
    assert page.status_code == 200 and page.context["page"].paginator.count == 0


# --- the edge: paths, cookies, the admin ------------------------------------------------


def test_a_path_with_nul_names_nothing(owner_client, api, imported):
    trace = Trace.objects.filter(dataset=imported).first()
    page = owner_client.get(f"/t/{trace.pk}%00/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    response = api.get(f"{BASE}/traces/{trace.pk}%00")
    assert response.status_code == 404 and error_of(response)["code"] == "NOT_FOUND"
    response = api.patch(f"{BASE}/datasets/{imported.pk}%00", {"is_public": True}, format="json")
    assert response.status_code == 404
    assert Dataset.objects.get(pk=imported.pk).is_public is False


def test_a_cookie_with_nul_is_ignored(imported):
    # A quoted cookie may spell NUL with octal escapes; the session is then looked up.
    cookie = 'sessionid="' + "\\000" * 8 + '"; csrftoken="\\000"'
    # The upload page asks for a signed-in person: an ignored cookie is nobody.
    response = Client().get(reverse("upload"), HTTP_COOKIE=cookie)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_admin_refuses_a_filter_with_nul(admin_client, imported):
    url = reverse("admin:traces_trace_changelist")
    response = admin_client.get(url, {"dataset__id__exact": f"ds{NUL}"})
    assert response.status_code == 400
    assert b"dataset__id__exact holds a NUL character" in response.content
    assert admin_client.get(url, {"dataset__id__exact": imported.pk}).status_code == 200


def test_the_services_refuse_names_and_descriptions_with_nul(org):
    dataset = dataset_create(organization=org, name="plain")
    trace = trace_create(organization=org, dataset=dataset)
    calls = {
        "description": [
            lambda: dataset_create(organization=org, name="other", description=NUL),
            lambda: dataset_update(dataset=dataset, description=NUL),
        ],
        "name": [
            lambda: dataset_update(dataset=dataset, name=f"a{NUL}"),
            lambda: trace_create(organization=org, dataset=dataset, name=NUL),
            lambda: trace_patch(trace=trace, name=NUL),
        ],
    }
    for field, attempts in calls.items():
        for attempt in attempts:
            with pytest.raises(ValidationFailed) as caught:
                attempt()
            assert caught.value.details == {"field": field, "rule": "no_nul"}
    assert Dataset.objects.get(pk=dataset.pk).name == "plain"
    assert Trace.objects.filter(dataset=dataset).count() == 1
