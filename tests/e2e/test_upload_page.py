"""The upload page in a real browser: htmx posts the form (explorer/views/upload.py), the
problems come back in place, more files or bytes than one upload takes are refused
before anything is sent (static/js/app.js), and without JavaScript the form is a plain
POST. The progress bar is seen in test_browser.py's upload."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import SHARED_DATA
from tests.e2e.conftest import jsonl, weather_events
from tests.e2e.test_browser import REFUSED
from traces.models import Dataset, Trace

pytestmark = pytest.mark.django_db(transaction=True)


def good(tmp_path, name: str = "runs.jsonl", city: str = "Paris"):
    path = tmp_path / name
    path.write_bytes(jsonl([{"messages": weather_events(city), "metadata": {"reward": 1}}]))
    return str(path)


def broken(tmp_path):
    path = tmp_path / "broken.jsonl"
    unanswered = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nope", "content": "x"},
    ]
    path.write_bytes(jsonl([{"messages": weather_events()}, {"messages": unanswered}]) + b"{\n")
    return str(path)


@pytest.fixture
def upload_page(page: Page, live_server, member, sign_in) -> Page:
    sign_in(page, member.username)
    page.goto(f"{live_server.url}/upload/")
    return page


def posts(page: Page) -> list[str]:
    """The POST requests the page makes from now on."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    return sent


def test_a_bad_file_lists_its_problems_in_place(upload_page, live_server, tmp_path, console_errors):
    page = upload_page
    page.set_input_files("#upload-files", broken(tmp_path))
    page.fill("#upload-name", "never")
    page.click("#upload-submit")
    problems = page.locator("#upload-result .problem-table tbody tr")
    expect(problems).to_have_count(2)
    expect(page.locator("#upload-result")).to_contain_text("unknown_call_id")
    # The page stayed (htmx swapped the result in), with the form as it was, ready again.
    assert page.url == f"{live_server.url}/upload/"
    expect(page.locator("#upload-name")).to_have_value("never")
    expect(page.locator("#upload-submit")).to_be_enabled()
    expect(page.locator("#upload-progress")).to_be_hidden()
    assert not Dataset.objects.filter(name="never").exists()
    assert console_errors == [REFUSED]


def test_more_files_than_one_upload_takes_are_refused_before_sending(
    upload_page, tmp_path, settings
):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    page = upload_page
    page.reload()
    sent = posts(page)
    files = [good(tmp_path, f"{n}.jsonl") for n in range(3)]
    page.set_input_files("#upload-files", files)
    page.fill("#upload-name", "too many")
    page.click("#upload-submit")
    expect(page.locator("#upload-result .notice.bad")).to_have_text(
        "Not uploaded. 3 files chosen; at most 2 go in one upload. Put the traces in fewer "
        "files (a JSONL file holds any number of traces), or use the import_traces command."
    )
    assert sent == [] and not Dataset.objects.filter(name="too many").exists()


def test_more_bytes_than_one_upload_takes_are_refused_before_sending(
    upload_page, tmp_path, settings, console_errors
):
    settings.UPLOAD_MAX_BYTES = 1000
    page = upload_page
    page.reload()
    sent = posts(page)
    files = [good(tmp_path, "a.jsonl"), good(tmp_path, "b.jsonl")]
    size = sum(os.path.getsize(f) for f in files)
    assert size > 1000 and os.path.getsize(files[0]) < 1000
    page.set_input_files("#upload-files", files)
    page.fill("#upload-name", "too big")
    page.click("#upload-submit")
    expect(page.locator("#upload-result .notice.bad")).to_have_text(
        f"Not uploaded. {size / 1024:.1f} KB chosen; at most 1000 B go in one upload. Upload "
        "the files in several parts, or use the import_traces command."
    )
    assert sent == []
    # Files under the cap in a request over it (the form's fields count too): the
    # server's refusal (413) comes back in the same place.
    page.set_input_files("#upload-files", files[0])
    page.click("#upload-submit")
    expect(page.locator("#upload-result .notice.bad")).to_contain_text(
        "exceeds the 1000-byte limit (UPLOAD_MAX_BYTES); upload the files in several parts."
    )
    assert len(sent) == 1 and not Dataset.objects.filter(name="too big").exists()
    assert console_errors == [
        "console: Failed to load resource: the server responded with a status of 413 "
        "(Request Entity Too Large)"
    ]


def test_files_into_an_existing_dataset(upload_page, tmp_path, weather_traces):
    page = upload_page
    dataset = weather_traces[0].dataset
    page.reload()  # the dataset is new
    expect(page.locator("#upload-new")).to_be_visible()
    page.select_option("#upload-dataset", dataset.pk)
    expect(page.locator("#upload-new")).to_be_hidden()  # a new dataset's fields
    page.set_input_files("#upload-files", [good(tmp_path, "a.jsonl"), good(tmp_path, "b.jsonl")])
    page.check("input[name=allow_duplicates]")  # b.jsonl is a copy of a.jsonl
    page.click("#upload-submit")
    page.wait_for_url(re.compile(rf"/d/{dataset.pk}/$"))
    expect(page.locator(".flash")).to_contain_text("Imported 2 traces")
    assert Trace.objects.filter(dataset=dataset).count() == 4


def test_without_javascript_the_form_is_a_plain_post(page_without_js, live_server, tmp_path):
    page = page_without_js
    page.goto(f"{live_server.url}/upload/")
    page.set_input_files("#upload-files", broken(tmp_path))
    page.fill("#upload-name", "plain")
    page.click("#upload-submit")
    expect(page.locator("#upload-result .problem-table tbody tr")).to_have_count(2)
    expect(page.locator("#upload-name")).to_have_value("plain")

    page.set_input_files("#upload-files", good(tmp_path))
    page.click("#upload-submit")
    page.wait_for_url(re.compile(r"/d/ds_[A-Za-z0-9_-]+/$"))
    expect(page.locator(".flash")).to_contain_text("Imported 1 trace ")
    assert Dataset.objects.get(name="plain").traces.count() == 1


def test_the_dataset_page_says_what_a_real_upload_did(upload_page, tmp_path):
    """Real files (tau2-bench's telecom results and a ToolBench answer given twice): the
    dataset page the upload lands on lists each file's traces and blocks and the copy it
    left out, with why. Its screenshot: upload-summary.png in $E2E_SHOTS."""
    tau2 = SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json"
    toolbench = SHARED_DATA / "toolbench" / "13_ChatGPT_DFS_woFilter_w2.json"
    if not (tau2.is_file() and toolbench.is_file()):
        pytest.skip(f"{SHARED_DATA} is absent: the real benchmark files are not here")
    page = upload_page
    page.set_input_files("#upload-files", [str(tau2), str(toolbench), str(toolbench)])
    page.fill("#upload-name", "telecom and movies")
    page.click("#upload-submit")
    page.wait_for_url(re.compile(r"/d/ds_[A-Za-z0-9_-]+/$"))
    summary = page.locator(".flash .upload-summary")
    expect(summary).to_contain_text("Imported 21 traces")
    expect(summary).to_contain_text("skipped 1 duplicate")
    rows = summary.locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("tau2-bench")
    expect(rows.nth(2).locator("td").last).to_have_text("1")
    expect(summary.locator(".skipped-list li")).to_contain_text(
        "repeats a trace earlier in this upload"
    )
    folder = Path(os.environ.get("E2E_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=str(folder / "upload-summary.png"))
    assert (folder / "upload-summary.png").stat().st_size > 10_000
