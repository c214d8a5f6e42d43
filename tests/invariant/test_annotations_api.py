"""Explorer's annotations (2.5): create, list, update, delete, on the one Annotation model
of the trace page, with their address and extra_metadata."""

import json

import pytest
from rest_framework.test import APIClient

from traces.models import Annotation, Dataset
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db


def test_create_list_update_delete(inv, pushed):
    trace_id = pushed()
    body = {"content": 42, "address": "messages[0].content:L1", "extra_metadata": {"a": 1}}
    created = inv.post(f"/api/v1/trace/{trace_id}/annotate", body, format="json").json()
    assert created["content"] == "42" and created["address"] == "messages[0].content:L1"
    assert created["trace_id"] == trace_id and "user" not in created
    note = Annotation.objects.get(uuid=created["id"])
    assert note.block is not None and note.block.payload["content"] == "line one\nline two"
    listed = inv.get(f"/api/v1/trace/{trace_id}/annotations").json()
    assert [a["id"] for a in listed] == [created["id"]] and "username" in listed[0]["user"]
    url = f"/api/v1/trace/{trace_id}/annotation/{created['id']}"
    updated = inv.put(url, {"content": "new", "extra_metadata": {"b": 2}}, format="json").json()
    assert updated["content"] == "new" and updated["extra_metadata"] == {"a": 1, "b": 2}
    assert inv.delete(url).json() == {"message": "deleted"}
    assert inv.delete(url).status_code == 404
    assert not Annotation.objects.exists()


def test_an_address_that_points_nowhere_is_kept_as_a_trace_note(inv, pushed):
    trace_id = pushed()
    for address in ("messages[99].content:L0", "not an address", "<root>"):
        body = {"content": "c", "address": address}
        response = inv.post(f"/api/v1/trace/{trace_id}/annotate", body, format="json")
        assert response.json()["address"] == address
    assert list(Annotation.objects.values_list("block", flat=True)) == [None, None, None]


def test_an_unknown_or_non_uuid_annotation_is_404(inv, pushed):
    trace_id = pushed()
    for aid in ("an_1", "7d3e2f4c-0000-4000-8000-000000000000"):
        url = f"/api/v1/trace/{trace_id}/annotation/{aid}"
        assert inv.put(url, {"content": "x"}, format="json").status_code == 404
        assert inv.delete(url).json() == {"detail": "Annotation not found"}


def test_only_the_author_changes_or_deletes_and_outsiders_get_401(inv, pushed, org, rival):
    trace_id = pushed()
    body = {"content": "mine", "address": None}
    created = inv.post(f"/api/v1/trace/{trace_id}/annotate", body, format="json").json()
    url = f"/api/v1/trace/{trace_id}/annotation/{created['id']}"
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION="Bearer " + api_key_create(organization=org).secret)
    assert other.put(url, {"content": "x"}, format="json").status_code == 401
    assert other.delete(url).status_code == 401
    assert rival.post(f"/api/v1/trace/{trace_id}/annotate", body, format="json").status_code == 401
    Dataset.objects.update(is_public=True)
    assert rival.get(f"/api/v1/trace/{trace_id}/annotations").status_code == 200
    assert Annotation.objects.get().comment == "mine"


def test_an_annotation_with_no_content_and_no_address_is_400(inv, pushed):
    trace_id = pushed()
    response = inv.post(f"/api/v1/trace/{trace_id}/annotate", {"content": ""}, format="json")
    assert response.status_code == 400 and "content or an address" in response.json()["detail"]


NUL_CONTENT = "content holds a NUL character (U+0000) at position 1"
NUL_ADDRESS = "address holds a NUL character (U+0000) at position 8"


@pytest.mark.parametrize(
    ("note", "detail"),
    [
        ({"content": "a\x00b"}, NUL_CONTENT),
        ({"content": "a", "address": "messages\x00[0]"}, NUL_ADDRESS),
    ],
)
def test_a_nul_in_an_annotation_is_400_naming_the_field(inv, pushed, note, detail):
    trace_id = pushed()
    response = inv.post(f"/api/v1/trace/{trace_id}/annotate", note, format="json")
    assert response.status_code == 400 and response.json() == {"detail": detail}
    body = {"messages": [[{"role": "user"}]], "annotations": [[note]]}
    response = inv.post("/api/v1/push/trace", body, format="json")
    assert response.status_code == 400 and response.json() == {"detail": detail}
    assert not Annotation.objects.exists()


def test_a_nul_in_an_updated_annotation_is_400_and_keeps_the_old_content(inv, pushed):
    trace_id = pushed()
    created = inv.post(f"/api/v1/trace/{trace_id}/annotate", {"content": "old"}, format="json")
    url = f"/api/v1/trace/{trace_id}/annotation/{created.json()['id']}"
    response = inv.put(url, {"content": "a\x00b"}, format="json")
    assert response.status_code == 400 and response.json() == {"detail": NUL_CONTENT}
    assert Annotation.objects.get().comment == "old"


@pytest.mark.parametrize("key", ["content", "address"])
def test_a_nul_in_an_uploaded_lines_annotation_is_400_naming_line_and_field(inv, key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    note = {"content": "c", "address": "messages[0]", key: "x\x00"}
    line = json.dumps({"messages": [{"role": "user"}], "annotations": [note]})
    upload = SimpleUploadedFile("d.jsonl", f"{line}\n".encode())
    response = inv.post("/api/v1/dataset/upload", {"name": "nul", "file": upload})
    assert response.status_code == 400
    assert response.json() == {"detail": f"line 0: an annotation's {key} holds a NUL (U+0000)"}
    assert not Annotation.objects.exists()
