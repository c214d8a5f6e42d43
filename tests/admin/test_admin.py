"""The admin: browsing, read-only payloads, `extra` annotations, uploads."""

import base64
import io
import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from demo.generator import tiny_png
from traces.models import Block, Dataset, Image, Organization, Trace
from traces.services.imports import trace_import

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]

EVENTS = [
    {"role": "user", "content": "What is the weather in Zürich? ☀️"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Zürich"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
    {"role": "assistant", "content": "It is **21 °C** in Zürich."},
]


def jsonl(*traces: object) -> bytes:
    return b"".join(json.dumps(t).encode() + b"\n" for t in traces)


@pytest.fixture
def org() -> Organization:
    return Organization.objects.create(slug="acme", name="Acme")


@pytest.fixture
def trace(org: Organization) -> Trace:
    line = {"messages": EVENTS, "metadata": {"name": "weather run", "reward": 0, "task": "t-1"}}
    result = trace_import(
        organization=org, dataset_name="weather", files=[("w.jsonl", io.BytesIO(jsonl(line)))]
    )
    return result.dataset.traces.get()


@pytest.mark.slow  # every admin page of every model (about a second)
def test_changelists_and_change_pages_answer(admin_client, trace: Trace) -> None:
    block = trace.blocks.order_by("created_at", "id").first()
    pages = [
        reverse("admin:traces_organization_changelist"),
        reverse("admin:traces_organization_change", args=[trace.organization_id]),
        reverse("admin:traces_dataset_changelist"),
        reverse("admin:traces_dataset_change", args=[trace.dataset_id]),
        reverse("admin:traces_trace_changelist"),
        reverse("admin:traces_trace_change", args=[trace.pk]),
        reverse("admin:traces_block_changelist"),
        reverse("admin:traces_block_changelist") + f"?trace__id__exact={trace.pk}",
        reverse("admin:traces_block_change", args=[block.pk]),
        reverse("admin:traces_image_changelist"),
        reverse("admin:traces_dataset_upload"),
        reverse("admin:traces_dataset_delete", args=[trace.dataset_id]),
        reverse("admin:traces_trace_delete", args=[trace.pk]),
    ]
    for url in pages:
        assert admin_client.get(url).status_code == 200, url


def test_dataset_changelist_links_to_upload(admin_client, trace: Trace) -> None:
    response = admin_client.get(reverse("admin:traces_dataset_changelist"))
    assert reverse("admin:traces_dataset_upload") in response.content.decode()


def test_search(admin_client, trace: Trace) -> None:
    def found(name: str, query: str) -> list:
        response = admin_client.get(reverse(f"admin:traces_{name}_changelist"), {"q": query})
        assert response.status_code == 200
        return list(response.context["cl"].result_list)

    assert found("dataset", "weath") == [trace.dataset]
    assert found("dataset", "nothing-like-it") == []
    assert found("trace", "weather run") == [trace]
    assert found("trace", trace.pk) == [trace]
    assert found("trace", "t-1") == [trace]  # metadata text
    assert [b.call_id for b in found("block", "call_1")] == ["call_1", "call_1"]
    assert [b.sub_type for b in found("block", "21 °C")] == ["MESSAGE"]  # payload text
    block = trace.blocks.first()
    assert found("block", block.pk) == [block]


def test_block_payload_is_read_only_and_extra_editable(admin_client, trace: Trace) -> None:
    block = trace.blocks.get(sub_type="TOOL_CALL")
    before = (block.payload, block.raw, block.metadata, block.updated_at)
    url = reverse("admin:traces_block_change", args=[block.pk])
    response = admin_client.post(
        url,
        {
            "payload": '{"call_id": "x", "name": "evil", "arguments": {}}',
            "sub_type": "MESSAGE",
            "call_id": "changed",
            "extra": '{"reward": 0.5, "note": "ok"}',
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    block.refresh_from_db()
    assert (block.payload, block.raw, block.metadata) == before[:3]
    assert block.sub_type == "TOOL_CALL" and block.call_id == "call_1"
    assert block.extra == {"reward": 0.5, "note": "ok"}
    assert block.updated_at > before[3]


def test_trace_extra_reward_updates_reward_column(admin_client, trace: Trace) -> None:
    assert trace.reward == 0.0
    before = trace.updated_at
    url = reverse("admin:traces_trace_change", args=[trace.pk])
    data = {"name": trace.name, "extra": '{"reward": 1}', "metadata": "{}", "_save": "Save"}
    assert admin_client.post(url, data).status_code == 302
    trace.refresh_from_db()
    assert trace.extra == {"reward": 1}
    assert trace.reward == 1.0
    assert trace.metadata["reward"] == 0  # metadata untouched
    assert trace.updated_at > before
    # Without extra.reward, the reward falls back to metadata's.
    admin_client.post(url, {"name": "renamed", "extra": "{}", "_save": "Save"})
    trace.refresh_from_db()
    assert (trace.name, trace.extra, trace.reward) == ("renamed", {}, 0.0)


@pytest.mark.parametrize("text", ["[1, 2]", '"reward"', "3", "{not json"])
def test_extra_must_be_a_json_object(admin_client, trace: Trace, text: str) -> None:
    block = trace.blocks.first()
    for url in (
        reverse("admin:traces_trace_change", args=[trace.pk]),
        reverse("admin:traces_block_change", args=[block.pk]),
    ):
        response = admin_client.post(url, {"name": trace.name, "extra": text, "_save": "Save"})
        assert response.status_code == 200
        assert "extra" in response.context["adminform"].form.errors
    trace.refresh_from_db()
    block.refresh_from_db()
    assert trace.extra == {} and block.extra == {}


def test_no_adding_traces_or_blocks(admin_client) -> None:
    assert admin_client.get(reverse("admin:traces_trace_add")).status_code == 403
    assert admin_client.get(reverse("admin:traces_block_add")).status_code == 403


def test_delete_dataset_counts_the_cascade(admin_client, trace: Trace) -> None:
    url = reverse("admin:traces_dataset_delete", args=[trace.dataset_id])
    response = admin_client.get(url)
    assert "Blocks: 5" in response.content.decode()
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not Trace.objects.exists() and not Block.objects.exists()


def test_upload_imports_files(admin_client, org: Organization) -> None:
    lines = jsonl(
        {"metadata": {"benchmark": "demo"}},
        {"messages": EVENTS, "metadata": {"reward": 1}},
        EVENTS,
    )
    files = [
        SimpleUploadedFile("a.jsonl", lines, content_type="application/jsonl"),
        SimpleUploadedFile(  # not a copy of a.jsonl's last trace: that would be skipped
            "b.json",
            json.dumps({"messages": EVENTS, "name": "b"}).encode(),
            content_type="application/json",
        ),
    ]
    response = admin_client.post(
        reverse("admin:traces_dataset_upload"),
        {"organization": org.pk, "dataset_name": "uploaded", "files": files},
        follow=True,
    )
    dataset = Dataset.objects.get(organization=org, name="uploaded")
    assert response.redirect_chain[-1][0] == reverse(
        "admin:traces_dataset_change", args=[dataset.pk]
    )
    assert "Imported 3 traces (15 blocks) into uploaded" in response.content.decode()
    assert dataset.traces.count() == 3
    assert dataset.metadata == {"benchmark": "demo"}


def test_upload_form_is_prefilled_from_a_dataset(admin_client, trace: Trace) -> None:
    url = reverse("admin:traces_dataset_upload") + f"?dataset={trace.dataset_id}"
    form = admin_client.get(url).context["form"]
    assert form.initial == {"organization": trace.organization_id, "dataset_name": "weather"}


def test_upload_of_a_bad_file_lists_problems_and_writes_nothing(admin_client, trace: Trace) -> None:
    bad = [*EVENTS[:2], {"role": "tool", "tool_call_id": "call_nope", "content": "x"}]
    before = (Trace.objects.count(), Block.objects.count(), Dataset.objects.count())
    response = admin_client.post(
        reverse("admin:traces_dataset_upload"),
        {
            "organization": trace.organization_id,
            "dataset_name": "never",
            "files": [
                SimpleUploadedFile("good.jsonl", jsonl(EVENTS)),
                SimpleUploadedFile("bad.jsonl", jsonl(EVENTS, bad)),
            ],
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "which no earlier tool call has" in html
    assert "call_nope" in html and "bad.jsonl" in html and "unknown_call_id" in html
    assert response.context["rows"][0][:4] == ["bad.jsonl", 2, 1, 2]
    assert (Trace.objects.count(), Block.objects.count(), Dataset.objects.count()) == before


def test_upload_needs_a_file(admin_client, org: Organization) -> None:
    response = admin_client.post(
        reverse("admin:traces_dataset_upload"), {"organization": org.pk, "dataset_name": "x"}
    )
    assert response.status_code == 200
    assert "files" in response.context["form"].errors
    assert not Dataset.objects.exists()


def test_deleting_a_dataset_removes_its_traces_and_blocks(admin_client, org):
    from tests.conftest import FIXTURES
    from traces.models import Block, Dataset, Trace
    from traces.services.imports import trace_import

    path = FIXTURES / "spec000_full_trace.json"
    result = trace_import(
        organization=org, dataset_name="gone", files=[(path.name, path.open("rb"))]
    )
    url = f"/admin/traces/dataset/{result.dataset.pk}/delete/"
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert (Dataset.objects.count(), Trace.objects.count(), Block.objects.count()) == (0, 0, 0)


def test_upload_of_too_many_files_answers_413_with_a_message(
    admin_client, org: Organization, settings
) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = [SimpleUploadedFile(f"{n}.jsonl", jsonl(EVENTS)) for n in range(3)]
    response = admin_client.post(
        reverse("admin:traces_dataset_upload"),
        {"organization": org.pk, "dataset_name": "many", "files": files},
    )
    assert response.status_code == 413
    html = response.content.decode()
    assert "Upload refused" in html and "more than 2 files in one upload" in html
    assert not Dataset.objects.exists()


def test_upload_over_the_size_cap_answers_413(admin_client, org: Organization, settings) -> None:
    settings.UPLOAD_MAX_BYTES = 500
    files = [SimpleUploadedFile("big.jsonl", jsonl(EVENTS, EVENTS))]
    response = admin_client.post(
        reverse("admin:traces_dataset_upload"),
        {"organization": org.pk, "dataset_name": "big", "files": files},
    )
    assert response.status_code == 413
    assert "exceeds the 500-byte limit (UPLOAD_MAX_BYTES)" in response.content.decode()
    assert not Dataset.objects.exists()


def test_pages_showing_json_or_images_use_classes_not_inline_style(
    admin_client, org: Organization
) -> None:
    """The Content-Security-Policy refuses inline style: the admin's pretty JSON and image
    previews are styled by static/css/admin.css, which their pages link."""
    png = base64.b64encode(tiny_png()).decode()
    image_part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
    line = {"messages": [{"role": "user", "content": [image_part]}], "metadata": {"k": "v"}}
    files = [("p.jsonl", io.BytesIO(jsonl(line)))]
    trace_import(organization=org, dataset_name="pics", files=files)
    trace = Trace.objects.get(dataset__name="pics")
    image = Image.objects.get()
    pages = [
        reverse("admin:traces_trace_change", args=[trace.pk]),
        reverse("admin:traces_block_change", args=[trace.blocks.get().pk]),
        reverse("admin:traces_image_change", args=[image.pk]),
    ]
    for url in pages:
        html = admin_client.get(url).content.decode()
        assert 'href="/static/css/admin.css"' in html, url
        assert not re.search(r"<(pre|img)[^>]*\sstyle=", html), url
    assert '<pre class="te-json">' in admin_client.get(pages[1]).content.decode()
    preview = admin_client.get(pages[2]).content.decode()
    assert re.search(r'<img class="te-preview" src="/admin/traces/image/\d+/raw/"', preview)
    assert (REPO / "static" / "css" / "admin.css").is_file()


def test_the_upload_page_is_a_template_file(admin_client) -> None:
    response = admin_client.get(reverse("admin:traces_dataset_upload"))
    assert "admin/traces/dataset/upload.html" in [t.name for t in response.templates]
    assert b'enctype="multipart/form-data"' in response.content
