"""DESIGN.md "imports keep real logs whole": an import takes a message of any role up to
LIMIT_IMPORT_MESSAGE_BYTES and empty content of any role; the blocks API keeps spec/004's
limits (issue 15 item 2)."""

import json

from django.test import override_settings

from tests.conftest import as_file
from traces.checks import Limits
from traces.models import Block
from traces.services.imports import trace_import

WEB_PAGE = "<p>" + "x" * 80_000 + "</p>"  # a Who&When web page: over the 64 KB API limit


def test_a_message_over_the_api_limit_imports_whole(org):
    events = [
        {"role": "user", "content": "find it"},
        {"role": "WebSurfer", "content": WEB_PAGE},
        {"role": "user", "content": "<returncode>0</returncode>\n" + "y" * 70_000},
    ]
    result = trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    assert (result.traces, result.blocks) == (1, 3)
    stored = [b.payload["content"] for b in Block.objects.order_by("created_at", "id")]
    assert stored[1] == WEB_PAGE and len(stored[2]) == 70_027


def test_empty_content_of_any_role_imports(org):
    events = [
        {"role": "user", "content": "question"},
        {"role": "user", "name": "Orchestrator", "content": ""},
        {"role": "system", "content": None},
        {"role": "WebSurfer", "content": []},
    ]
    result = trace_import(organization=org, dataset_name="d", files=[as_file(json.dumps(events))])
    assert (result.traces, result.blocks) == (1, 4)
    contents = [b.payload["content"] for b in Block.objects.order_by("created_at", "id")]
    assert contents == ["question", "", None, []]


@override_settings(LIMIT_TOOL_RESULT_BYTES=1000, LIMIT_MSG_BYTES=10)
def test_the_import_limit_is_its_own_setting_and_the_api_limit_is_unchanged():
    with override_settings(LIMIT_IMPORT_MESSAGE_BYTES=500):
        assert Limits.for_import().message == 500
    assert Limits.from_settings().message == 10
    assert Limits.for_import().tool_result == 1000
