"""The upload page (/upload/): files into a chosen or a new dataset through trace_import,
all or nothing; the same form through htmx (explorer/views/base.py); who may upload."""

import json
import os
import resource

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.conftest import client_for, user_in
from tests.explorer.conftest import (
    XSS,
    chat,
    html_problems,
    import_lines,
    jsonl,
)
from traces.models import Block, Dataset, Image, Trace

URL = reverse("upload")
HTMX = {"HTTP_HX_REQUEST": "true"}


def upload(name: str, lines: list) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl(lines), content_type="application/octet-stream")


def three_traces() -> list:
    return [
        {"metadata": {"accuracy": 0.5, "benchmark": "demo"}},
        *[
            {"messages": chat(f"question {i}", "search"), "metadata": {"reward": i % 2}}
            for i in range(3)
        ],
    ]


def counts() -> tuple[int, int, int, int]:
    return (
        Dataset.objects.count(),
        Trace.objects.count(),
        Block.objects.count(),
        Image.objects.count(),
    )


def bad_file():
    """Two broken traces among good ones: a tool output that answers no call, no role."""
    unanswered = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nope", "content": "x"},
    ]
    lines = [{"messages": chat("fine")}, {"messages": unanswered}, {"messages": [{"content": "x"}]}]
    return upload("broken.jsonl", lines)


def test_the_form(member_client, tasks_dataset):
    html = member_client.get(URL).content.decode()
    assert 'enctype="multipart/form-data"' in html and "csrfmiddlewaretoken" in html
    assert 'type="file" name="files" multiple' in html
    assert f'<option value="{tasks_dataset.pk}">airline-run</option>' in html
    assert '<input type="hidden" name="organization" value="acme">' in html  # one organization
    # htmx posts the same form and fills its <progress> (static/js/app.js): no script of
    # its own.
    assert 'hx-post="/upload/" hx-encoding="multipart/form-data"' in html
    assert 'hx-indicator="#upload-progress"' in html and "<progress" in html
    assert "/static/js/upload.js" not in html
    preselected = member_client.get(URL, {"dataset": tasks_dataset.pk}).content.decode()
    assert f'<option value="{tasks_dataset.pk}" selected>' in preselected


def test_upload_into_a_new_dataset_redirects_to_it(member_client, org):
    response = member_client.post(
        URL, {"files": [upload("run.jsonl", three_traces())], "dataset": "", "name": "fresh"}
    )
    dataset = Dataset.objects.get(organization=org, name="fresh")
    assert response.status_code == 302
    assert response["Location"] == reverse("dataset", args=[dataset.pk])
    assert dataset.traces.count() == 3 and dataset.metadata == {
        "accuracy": 0.5,
        "benchmark": "demo",
    }
    page = member_client.get(response["Location"]).content.decode()
    assert "Imported 3 traces" in page
    said = "computed 0.333: 1 of the 3 traces with a reward succeeded (reward 1), of 3 traces"
    assert said in page


def test_upload_several_files_into_an_existing_dataset(member_client, tasks_dataset):
    files = [upload("a.jsonl", three_traces()), upload("b.jsonl", three_traces()[1:])]
    # b.jsonl repeats two traces of a.jsonl: imported again only with the box ticked.
    response = member_client.post(
        URL, {"files": files, "dataset": tasks_dataset.pk, "allow_duplicates": "1"}
    )
    assert response.status_code == 302
    assert tasks_dataset.traces.count() == 12
    assert sorted(tasks_dataset.traces.values_list("index", flat=True)) == list(range(12))


def test_htmx_is_sent_to_the_dataset_with_hx_redirect(member_client, tasks_dataset):
    response = member_client.post(
        URL, {"files": [upload("a.jsonl", three_traces())], "dataset": tasks_dataset.pk}, **HTMX
    )
    expected = reverse("dataset", args=[tasks_dataset.pk])
    assert response.status_code == 200 and response["HX-Redirect"] == expected
    assert tasks_dataset.traces.count() == 9  # six before, three more
    page = member_client.get(expected).content.decode()
    assert "Imported 3 traces" in page  # the message waits for the dataset's page


def test_big_files_stream_from_a_temporary_file(member_client, settings, org):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024  # every upload goes to disk
    lines = [{"messages": chat("x" * 500 + f" {i}")} for i in range(50)]
    response = member_client.post(URL, {"files": [upload("big.jsonl", lines)], "name": "big"})
    assert response.status_code == 302
    assert Dataset.objects.get(name="big").traces.count() == 50


def test_a_bad_file_lists_every_problem_and_writes_nothing(member_client, tasks_dataset):
    before = counts()
    files = [upload("good.jsonl", three_traces()), bad_file()]
    response = member_client.post(URL, {"files": files, "name": "never-created"})
    assert response.status_code == 422
    assert counts() == before
    assert not Dataset.objects.filter(name="never-created").exists()
    html = response.content.decode()
    assert "<html" in html and "2 problems" in html and "Nothing was written" in html
    table = html[html.index('class="table problem-table"') :].split("</table>")[0]
    for column in ("file", "line", "trace", "event", "field", "rule", "message"):
        assert f">{column}</th>" in table
    assert table.count("<tr>") == 3  # the head and two problems
    assert "broken.jsonl" in table and "unknown_call_id" in table and "tool_call_id" in table
    assert "role must be a non-empty string" in table
    assert 'value="never-created"' in html  # the form keeps what was typed
    # Into an existing dataset: unchanged.
    response = member_client.post(URL, {"files": [bad_file()], "dataset": tasks_dataset.pk})
    assert response.status_code == 422 and counts() == before


def test_htmx_gets_the_problems_partial(member_client, org):
    before = counts()
    response = member_client.post(URL, {"files": [bad_file()], "name": "x"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 422 and counts() == before
    assert response["X-Partial"] == "result"  # static/js/app.js swaps it in
    assert "<html" not in html and html.lstrip().startswith('<div id="upload-result"')
    assert "Nothing was written" in html and "broken.jsonl" in html


def test_htmx_gets_the_form_errors_in_the_result_partial(member_client, org):
    response = member_client.post(URL, {"name": "no files"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and response["X-Partial"] == "result"
    assert "<html" not in html and "Choose one or more files." in html


def test_form_errors(member_client, org, member, rival_org):
    response = member_client.post(URL, {"name": "no files"})
    assert response.status_code == 400 and "Choose one or more files." in response.content.decode()
    response = member_client.post(URL, {"files": [upload("a.jsonl", three_traces())]})
    assert response.status_code == 400 and "non-empty" in response.content.decode()
    # Someone in two organizations names the one of a new dataset.
    from traces.models import Membership

    Membership.objects.create(user=member, organization=rival_org, role="owner")
    html = member_client.get(URL).content.decode()
    assert '<select id="upload-org" name="organization">' in html
    response = member_client.post(URL, {"files": [upload("a.jsonl", three_traces())], "name": "n"})
    assert (
        response.status_code == 400
        and "choose the organization" in response.content.decode().lower()
    )
    response = member_client.post(
        URL,
        {"files": [upload("a.jsonl", three_traces())], "name": "n", "organization": "rival"},
    )
    assert response.status_code == 302
    assert Dataset.objects.get(name="n").organization == rival_org


def test_a_viewer_cannot_upload(viewer_client, tasks_dataset):
    before = counts()
    html = viewer_client.get(URL).content.decode()
    assert "You cannot upload here" in html and 'type="file"' not in html
    response = viewer_client.post(
        URL, {"files": [upload("a.jsonl", three_traces())], "dataset": tasks_dataset.pk}
    )
    assert response.status_code == 403 and counts() == before
    response = viewer_client.post(
        URL,
        {"files": [upload("a.jsonl", three_traces())], "name": "sneaky", "organization": "acme"},
    )
    assert response.status_code == 403 and counts() == before
    # Preselected from the dataset page: told why not.
    html = viewer_client.get(URL, {"dataset": tasks_dataset.pk}).content.decode()
    assert "You cannot upload here" in html


def test_a_public_dataset_of_another_organization_is_read_only(member_client, rival_org):
    public = import_lines(rival_org, "theirs", [{"messages": chat("hi")}])
    public.is_public = True
    public.save()
    before = counts()
    response = member_client.post(
        URL, {"files": [upload("a.jsonl", three_traces())], "dataset": public.pk}
    )
    # Readable only because it is public: a write answers as if it did not exist.
    assert response.status_code == 404 and counts() == before
    html = member_client.get(URL, {"dataset": public.pk}).content.decode()
    assert "You can read <strong>theirs</strong> but not upload into it" in html


def test_another_organizations_private_dataset_is_not_found(member_client, rival_org):
    private = import_lines(rival_org, "secret", [{"messages": chat("hi")}])
    before = counts()
    response = member_client.post(
        URL, {"files": [upload("a.jsonl", three_traces())], "dataset": private.pk}
    )
    assert response.status_code == 404 and counts() == before
    assert "secret" not in response.content.decode()


def browser(user) -> tuple[Client, str]:
    """A client that checks CSRF as a browser's requests are checked, and its token."""
    client = Client(enforce_csrf_checks=True)  # the CSRF check reads the form first
    client.force_login(user)
    client.get(URL)
    return client, client.cookies["csrftoken"].value


def test_too_many_files_answer_413_with_the_page_and_the_script_checks_first(member, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    client, token = browser(member)
    html = client.get(URL).content.decode()
    assert 'data-max-files="2"' in html  # static/js/app.js refuses more before sending
    before = counts()
    files = [upload(f"{n}.jsonl", three_traces()) for n in range(3)]
    response = client.post(URL, {"files": files, "name": "many", "csrfmiddlewaretoken": token})
    assert response.status_code == 413 and counts() == before
    html = response.content.decode()
    assert "<html" in html and 'id="upload-form"' in html
    assert "More than 2 files in one upload (UPLOAD_MAX_FILES)" in html


def test_too_many_files_give_htmx_the_result_partial(member, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    client, token = browser(member)
    files = [upload(f"{n}.jsonl", three_traces()) for n in range(3)]
    body = {"files": files, "name": "many", "csrfmiddlewaretoken": token}
    response = client.post(URL, body, **HTMX)
    html = response.content.decode()
    assert response.status_code == 413 and "<html" not in html
    assert response["X-Partial"] == "result"
    assert 'id="upload-result"' in html and "More than 2 files" in html


def test_an_upload_over_the_size_cap_answers_413_unread(member, settings):
    client, token = browser(member)
    lines = [{"messages": chat("x" * 2000)}]
    settings.UPLOAD_MAX_BYTES = 1000
    before = counts()
    response = client.post(
        URL, {"files": [upload("big.jsonl", lines)], "name": "big", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 413 and counts() == before
    html = response.content.decode()
    assert 'id="upload-form"' in html and 'data-max-bytes="1000"' in html
    assert "exceeds the 1000-byte limit (UPLOAD_MAX_BYTES)" in html


def test_hundreds_of_files_upload_within_a_low_file_descriptor_limit(member, settings):
    """Each uploaded file used to keep a temporary file open until the request ended:
    past the process's descriptor limit (1,024 by default) the upload answered 500."""
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # Django's own handlers: every file to disk
    client, token = browser(member)
    files = [upload(f"run-{n}.jsonl", [{"messages": chat(f"run {n}")}]) for n in range(300)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    try:
        response = client.post(
            URL, {"files": files, "name": "many runs", "csrfmiddlewaretoken": token}
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert response.status_code == 302
    assert Dataset.objects.get(name="many runs").traces.count() == 300


def test_uploads_leave_no_file_and_no_descriptor_open(member, settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    client, token = browser(member)

    def post(files, name):
        return client.post(URL, {"files": files, "name": name, "csrfmiddlewaretoken": token})

    assert post([upload("warm.jsonl", three_traces())], "warm up").status_code == 302
    before = len(os.listdir("/proc/self/fd"))
    assert post([upload(f"{n}.jsonl", three_traces()) for n in range(5)], "ok").status_code == 302
    assert post([upload("a.jsonl", three_traces()), bad_file()], "bad").status_code == 422
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    assert post([upload(f"{n}.jsonl", three_traces()) for n in range(3)], "x").status_code == 413
    assert len(os.listdir("/proc/self/fd")) == before
    assert list(tmp_path.iterdir()) == []


def test_csrf_is_required(member, org):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = client.post(URL, {"files": [upload("a.jsonl", three_traces())], "name": "csrf"})
    assert response.status_code == 403 and not Dataset.objects.filter(name="csrf").exists()


def test_sign_in_is_required(client):
    assert client.get(URL).status_code == 302


@pytest.mark.parametrize("headers", [{}, HTMX])
def test_no_script_from_data_on_a_failed_upload(member_client, org, headers):
    script, img, js = XSS
    call = {"id": "c", "type": "function", "function": {"name": img, "arguments": "{}"}}
    lines = [
        {"messages": [{"role": img, "content": js}, {"role": "tool", "tool_call_id": script}]},
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]},
    ]
    bad = SimpleUploadedFile(f"{script}.jsonl", jsonl(lines))
    response = member_client.post(URL, {"files": [bad], "name": img}, **headers)
    html = response.content.decode()
    assert response.status_code == 422
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html_problems(html) == []
    assert json.dumps(html_problems(member_client.get(URL).content.decode())) == "[]"


def test_the_menu_offers_upload_to_who_may_upload_somewhere(
    viewer_client, member_client, owner_client, outsider_client, tasks_dataset
):
    def menu(client) -> str:
        html = client.get("/").content.decode()
        return html[html.index('<nav class="topnav"') :].split("</nav>", 1)[0]

    nobody = client_for(user_in(None, "nobody"))  # of no organization
    for client, shown in (
        (member_client, True), (owner_client, True), (outsider_client, True),  # elsewhere
        (viewer_client, False), (nobody, False),
    ):  # fmt: skip
        assert (f'href="{URL}"' in menu(client)) is shown
    # On the upload page itself (a viewer opened its URL) it stays, as the current page.
    assert 'aria-current="page">Upload</a>' in viewer_client.get(URL).content.decode()
