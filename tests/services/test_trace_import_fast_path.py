"""The JSON Lines fast path (traces/ingest/formats/jsonl.py): what a line's bytes prove
lets the import skip walking each value for images and depth, and never more."""

import base64

import pytest

from tests.conftest import as_file
from traces.errors import ImportFailed
from traces.ingest.formats.jsonl import images_possible
from traces.jsontext import MAX_DEPTH
from traces.models import Image
from traces.services.imports import trace_import

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2).decode()


def run(org, text: str):
    return trace_import(organization=org, dataset_name="fast", files=[as_file(text, "a.jsonl")])


@pytest.mark.parametrize(
    "url",
    [
        f"data:image/png;base64,{PNG}",
        f"data:image\\/png;base64,{PNG}",  # JSON's escaped slash
        f"\\u0064ata:image/png;base64,{PNG}",  # an escaped letter
    ],
)
def test_an_image_is_taken_out_however_json_escapes_its_prefix(org, url):
    part = '{"type": "image_url", "image_url": {"url": "' + url + '"}}'
    line = '{"messages": [{"role": "user", "content": [' + part + "]}]}\n"
    assert images_possible(line.encode())
    run(org, line)
    assert Image.objects.count() == 1


def test_a_line_without_an_image_hint_holds_no_image():
    assert not images_possible(b'{"messages": [{"role": "user", "content": "data: image"}]}')


def test_a_value_nested_deeper_than_the_limit_is_still_refused(org):
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    line = '{"messages": [{"role": "user", "content": ' + deep + "}]}\n"
    with pytest.raises(ImportFailed) as caught:
        run(org, line)
    assert any(p.get("rule") == "max_depth" for p in caught.value.problems), caught.value.problems


def test_a_value_at_the_limit_is_still_kept(org):
    # content nests MAX_DEPTH - 1 levels: the payload {"role", "content"} nests MAX_DEPTH.
    deep = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    line = '{"messages": [{"role": "user", "content": ' + deep + "}]}\n"
    assert run(org, line).blocks == 1
