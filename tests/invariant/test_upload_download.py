"""POST /api/v1/dataset/upload (Explorer JSONL: raw and annotated lines, the metadata line,
the index rules, each refusal) and GET .../download (a round trip without loss), live:
uploaded over HTTP as Explorer's UI does, read back through invariant-sdk's session."""

import base64
import json

import pytest

from demo.generator import tiny_png
from traces.models import Dataset, Trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PNG = base64.b64encode(tiny_png()).decode()
CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
ANNOTATED = [
    {"metadata": {"benchmark": "b", "accuracy": 0.5}},
    {"index": 3, "messages": [{"role": "user", "content": "look", "refusal": None},
                              {"role": "user", "content": f"local_base64_img: {PNG}"},
                              {"role": "assistant", "content": "", "tool_calls": [CALL]}],
     "metadata": {"name": "three", "hierarchy_path": ["x"]},
     "annotations": [{"content": "see", "address": "messages[0].content:L0",
                      "extra_metadata": {"source": "analyzer-model"}}]},
    {"index": 7, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "pic"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}],
     "annotations": []},
]  # fmt: skip


def jsonl(rows) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def upload(sdk, name, data, is_public=None):
    fields = {"name": name} if is_public is None else {"name": name, "is_public": is_public}
    return sdk.session.post(
        f"{sdk.api_url}/api/v1/dataset/upload", data=fields,
        files={"file": ("x.jsonl", data)}, headers=sdk._headers,
    )  # fmt: skip


def download(sdk, dataset_id, query=""):
    response = sdk.request("GET", f"/api/v1/dataset/byid/{dataset_id}/download{query}")
    return [json.loads(line) for line in response.text.splitlines()], response


def test_annotated_lines_upload_and_download_back_without_loss(sdk):
    response = upload(sdk, "annotated", jsonl(ANNOTATED), is_public="TRUE")
    assert response.status_code == 200, response.text
    dataset = response.json()
    assert dataset["is_public"] is True
    assert (
        dataset["extra_metadata"]["benchmark"] == "b" and "created_on" in dataset["extra_metadata"]
    )
    byid = sdk.request("GET", f"/api/v1/dataset/byid/{dataset['id']}").json()
    assert {k: byid[k] for k in dataset} == dataset  # clients compare them
    assert byid["num_traces"] == 2
    lines, raw = download(sdk, dataset["id"])
    assert raw.headers["Content-Disposition"] == 'attachment; filename="annotated.jsonl"'
    assert lines[0] == {"metadata": dataset["extra_metadata"]}
    assert [line["index"] for line in lines[1:]] == [3, 7]
    assert lines[1]["messages"] == ANNOTATED[1]["messages"]  # images inline again
    assert lines[2]["messages"] == ANNOTATED[2]["messages"]
    assert lines[1]["annotations"] == ANNOTATED[1]["annotations"]
    assert lines[1]["metadata"] == ANNOTATED[1]["metadata"]
    # the stored events link the images, which the image route serves
    trace = Trace.objects.get(dataset__name="annotated", index=3)
    link = sdk.request("GET", f"/api/v1/trace/{trace.uuid}").json()["messages"][1]["content"]
    assert link.startswith("local_img_link: /api/v1/trace/image/annotated/")
    image = sdk.request("GET", link.removeprefix("local_img_link: "))
    assert image.headers["Content-Type"] == "image/png" and image.content == tiny_png()
    assert trace.name == "three"
    # uploaded again under another name, it gives the same lines
    again = upload(sdk, "again", raw.content).json()
    assert download(sdk, again["id"])[0][1:] == lines[1:]


def test_raw_lines_take_metadata_from_their_first_element_and_number_from_zero(sdk):
    rows = [[{"metadata": {"name": "named"}}, {"role": "user", "content": "a"}],
            [{"role": "user", "content": "b"}]]  # fmt: skip
    dataset = upload(sdk, "raw", jsonl(rows)).json()
    traces = sdk.request("GET", f"/api/v1/dataset/byid/{dataset['id']}/traces").json()
    assert [(t["index"], t["name"]) for t in traces] == [(0, "named"), (1, "Run 1")]
    assert all(t["messages"] == [] for t in traces)
    got = sdk.request("GET", f"/api/v1/trace/{traces[0]['id']}").json()
    assert got["messages"] == [{"role": "user", "content": "a"}]
    # later pushes continue from the highest index + 1
    pushed = sdk.create_request_and_push_trace(messages=[[{"role": "user"}]], dataset="raw")
    assert Trace.objects.get(uuid=pushed.id[0]).index == 2


def test_an_empty_file_makes_an_empty_dataset_that_a_later_upload_may_fill(sdk):
    assert upload(sdk, "empty", b"").status_code == 200
    assert Dataset.objects.get(name="empty").traces.count() == 0
    assert upload(sdk, "empty", jsonl([[{"role": "user", "content": "a"}]])).status_code == 200
    again = upload(sdk, "empty", jsonl([[{"role": "user", "content": "b"}]]))
    assert again.status_code == 400 and "push" in again.json()["detail"]


def test_unindexed_lines_before_the_first_indexed_one_pass(sdk):
    rows = [{"messages": []}, {"messages": [], "index": 0}, {"messages": [], "index": 5}]
    dataset = upload(sdk, "early", jsonl(rows)).json()
    traces = sdk.request("GET", f"/api/v1/dataset/byid/{dataset['id']}/traces").json()
    assert sorted(t["index"] for t in traces) == [0, 1, 5]


META = {"metadata": {"k": 1}}
LINE = {"messages": [{"role": "user", "content": "a"}]}


@pytest.mark.parametrize(
    ("rows", "name", "words"),
    [
        ([META, LINE, META], "ok", "at most once"),
        ([LINE, META], "ok", "first row"),
        ([LINE, [{"role": "user"}]], "ok", "not both"),
        ([{**LINE, "index": "1"}], "ok", "index must be an integer"),
        ([{**LINE, "index": 1.0}], "ok", "index must be an integer"),
        ([{**LINE, "index": 1}, {**LINE, "index": 1}], "ok", "used by an earlier line"),
        ([{**LINE, "index": 2**31 - 1}], "ok", "line 0: index must be between 0 and 2147483646"),
        ([LINE, {**LINE, "index": 2**63 - 1}], "ok", "line 1: index must be between 0 and"),
        ([{**LINE, "index": -1}], "ok", "line 0: index must be between 0 and 2147483646"),
        ([{**LINE, "index": 1}, LINE], "ok", "no index, after a line that has one"),
        ([{**LINE, "annotations": [{"content": "x"}]}], "ok", "needs an address and content"),
        ([LINE], "bad name", "Dataset name can only contain A-Z, a-z, 0-9, - and _"),
        (b"{not json}\n", "ok", "not valid JSON"),
        (b'{"messages": []}\n\n{"messages": []}\n', "ok", "blank"),
        ([3], "ok", "neither a list of events"),
    ],
)
def test_each_refusal_is_400_and_stores_nothing(sdk, rows, name, words):
    data = rows if isinstance(rows, bytes) else jsonl(rows)
    response = upload(sdk, name, data)
    assert response.status_code == 400, response.text
    assert words in response.json()["detail"]
    assert not Trace.objects.exists()


def test_the_highest_index_taken_leaves_room_for_a_push_after_it(sdk):
    response = upload(sdk, "top", jsonl([{**LINE, "index": 2**31 - 2}]))
    assert response.status_code == 200, response.text
    pushed = sdk.create_request_and_push_trace(messages=[[{"role": "user"}]], dataset="top")
    assert Trace.objects.get(uuid=pushed.id[0]).index == 2**31 - 1


def test_upload_without_a_file_is_422_and_a_bad_is_public_400(sdk):
    response = sdk.session.post(
        f"{sdk.api_url}/api/v1/dataset/upload", data={"name": "x"}, headers=sdk._headers
    )
    assert response.status_code == 422 and isinstance(response.json()["detail"], list)
    assert upload(sdk, "x", jsonl([LINE]), is_public="maybe").status_code == 400
    assert not Dataset.objects.exists()


def test_download_only_annotated_and_with_ids(sdk):
    dataset = upload(sdk, "annotated", jsonl(ANNOTATED)).json()
    lines, _ = download(sdk, dataset["id"], "/annotated")
    assert [line["index"] for line in lines[1:]] == [3]
    lines, _ = download(sdk, dataset["id"], "?only_annotated=true&include_trace_ids=true")
    assert [line["index"] for line in lines[1:]] == [3]
    assert lines[1]["id"] == str(Trace.objects.get(index=3).uuid)
