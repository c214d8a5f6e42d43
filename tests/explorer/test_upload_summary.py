"""After a successful upload the dataset page it lands on says what happened
(explorer/upload_summary.py): traces and blocks written, which file gave which, each
duplicate left out and why; the plain form and htmx alike; bounded however many files."""

import html as html_lib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.conftest import SHARED_DATA
from tests.explorer.conftest import chat, jsonl
from traces.models import Block, Trace

URL = reverse("upload")
HTMX = {"HTTP_HX_REQUEST": "true"}
TAU2 = SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json"
TOOLBENCH = SHARED_DATA / "toolbench" / "13_ChatGPT_DFS_woFilter_w2.json"


def real(path) -> SimpleUploadedFile:
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    return SimpleUploadedFile(path.name, path.read_bytes())


def made(name: str, *questions: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl([{"messages": chat(q, "search")} for q in questions]))


def summary(page: str) -> str:
    found = re.search(r'<div class="upload-summary".*?</div>', page, re.S)
    assert found, "the page shows no upload summary"
    return found.group()


def file_rows(page: str) -> list[list[str]]:
    """The summary's table: file, format, traces, blocks, skipped, as text."""
    body = re.search(r"<tbody>(.*?)</tbody>", summary(page), re.S).group(1)
    return [
        [html_lib.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in
         re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]  # fmt: skip


def text(page: str) -> str:
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", summary(page))).split())


def blocks_of(dataset_name: str) -> int:
    return Block.objects.filter(trace__dataset__name=dataset_name).count()


def test_real_files_say_which_file_gave_which_and_why_a_copy_was_skipped(member_client, org):
    files = [real(TAU2), real(TOOLBENCH), real(TOOLBENCH)]
    page = member_client.post(
        URL, {"files": files, "name": "runs", "organization": org.slug}, follow=True
    ).content.decode()
    tau2_blocks = Block.objects.filter(trace__dataset__name="runs", trace__index__lt=20).count()
    toolbench_blocks = Block.objects.filter(trace__dataset__name="runs", trace__index=20).count()
    assert Trace.objects.filter(dataset__name="runs").count() == 21
    assert tau2_blocks == 596 and toolbench_blocks == 17
    assert f"Imported 21 traces ({blocks_of('runs')} blocks) into runs" in text(page)
    assert file_rows(page) == [
        [TAU2.name, "tau2-bench", "20", "596", "0"],
        [TOOLBENCH.name, "toolbench", "1", "17", "0"],
        [TOOLBENCH.name, "toolbench", "0", "0", "1"],
    ]
    said = text(page)
    assert "skipped 1 duplicate" in said and "1 repeated within this upload" in said
    # Its name cut at 80 characters (whole in its title), and why it was left out.
    cut = "I'm in the mood for a thriller movie night. Help me find some popular thriller…"
    assert f"{TOOLBENCH.name} · trace 0 “{cut}” : repeats a trace earlier in this upload" in said


def test_the_same_real_file_again_is_skipped_because_the_dataset_has_it(member_client, org):
    def upload(**more):
        data = {"files": [real(TAU2)], "name": "telecom", "organization": org.slug, **more}
        return member_client.post(URL, data, follow=True).content.decode()

    upload()
    page = upload()
    assert Trace.objects.filter(dataset__name="telecom").count() == 20
    said = text(page)
    assert "Imported 0 traces (0 blocks) into telecom" in said
    assert "skipped 20 duplicates" in said and "20 the dataset already had" in said
    assert said.count(": the dataset already has it") == 10  # the first ten listed...
    assert "…and 10 more." in said  # ...the others counted
    assert file_rows(page) == [[TAU2.name, "tau2-bench", "0", "0", "20"]]


def test_htmx_uploads_land_on_the_dataset_page_with_the_summary(member_client, org):
    response = member_client.post(
        URL,
        {"files": [made("a.jsonl", "one", "two"), made("b.jsonl", "three", "one")],
         "name": "made", "organization": org.slug},
        **HTMX,
    )  # fmt: skip
    assert response.status_code == 200
    page = member_client.get(response["HX-Redirect"]).content.decode()
    assert file_rows(page) == [
        ["a.jsonl", "jsonl", "2", "10", "0"], ["b.jsonl", "jsonl", "1", "5", "1"]
    ]  # fmt: skip
    assert blocks_of("made") == 15
    assert "b.jsonl · line 2, trace 1" in text(page)
    # Shown once: the next page has no summary.
    again = member_client.get(response["HX-Redirect"]).content.decode()
    assert 'class="upload-summary"' not in again


def test_many_files_list_the_first_twenty_and_count_the_rest(member_client, org):
    files = [made(f"f{n:02}.jsonl", f"question {n}") for n in range(23)]
    page = member_client.post(
        URL, {"files": files, "name": "many", "organization": org.slug}, follow=True
    ).content.decode()
    rows = file_rows(page)
    assert [r[0] for r in rows] == [f"f{n:02}.jsonl" for n in range(20)]
    assert "…and 3 more files." in text(page)


def test_hostile_names_are_escaped_and_their_controls_shown(member_client, org):
    file_name = "<img src=x onerror=alert(1)>.jsonl"  # (Django drops controls from it)
    trace = {"name": "\u202e<b>evil</b>", "messages": chat("x")}
    files = [SimpleUploadedFile(file_name, jsonl([trace, trace]))]
    page = member_client.post(
        URL, {"files": files, "name": "hostile", "organization": org.slug}, follow=True
    ).content.decode()
    shown = summary(page)
    assert "<img" not in shown and "&lt;img src=x" in shown
    assert "<b>" not in shown and "&lt;b&gt;evil" in shown
    assert "\u202e" not in shown and "⟨U+202E⟩" in shown


def test_the_summary_says_which_dataset_metadata_was_not_written(member_client, org):
    def with_metadata(name: str, accuracy: float, question: str) -> SimpleUploadedFile:
        metadata = {"accuracy": accuracy, "<b>k</b>": 1}
        lines = [{"metadata": metadata}, {"messages": chat(question, "s")}]
        return SimpleUploadedFile(name, jsonl(lines))

    files = [with_metadata("a.jsonl", 0.75, "one"), with_metadata("b.jsonl", 0.25, "two")]
    page = member_client.post(
        URL, {"files": files, "name": "evals", "organization": org.slug}, follow=True
    ).content.decode()
    said = text(page)
    assert "Not every file gives the same accuracy : each trace keeps its own file" in said
    assert "<b>k</b>" not in summary(page)  # a key is content: escaped
