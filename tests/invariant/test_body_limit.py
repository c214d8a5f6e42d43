"""The REST API's JSON parser (traces/api/json.py): the body limit DATA_UPLOAD_MAX_MEMORY_SIZE
holds for JSON bodies too, which DRF reads past Django's own check."""

import io

import pytest

from traces.api.json import OrjsonParser
from traces.errors import PayloadTooLarge
from traces.models import Trace

pytestmark = pytest.mark.django_db

LIMIT = 1000


def _push_body(size: int) -> bytes:
    text = "x" * size
    return b'{"messages": [[{"role": "user", "content": "' + text.encode() + b'"}]]}'


def test_a_json_body_over_the_limit_is_413_and_writes_nothing(inv, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    response = inv.post("/api/v1/push/trace", _push_body(LIMIT), content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": f"the request body exceeds the {LIMIT}-byte limit (DATA_UPLOAD_MAX_MEMORY_SIZE)"
    }
    assert not Trace.objects.exists()


class _Counting(io.BytesIO):
    """A body stream that counts the bytes read from it."""

    taken = 0

    def read(self, size=-1):
        data = super().read(size)
        self.taken += len(data)
        return data


def test_a_body_without_a_length_is_read_only_up_to_the_limit(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    stream = _Counting(_push_body(100 * LIMIT))
    with pytest.raises(PayloadTooLarge):
        OrjsonParser().parse(stream, parser_context={})
    assert stream.taken == LIMIT + 1


def test_a_body_within_the_limit_is_taken(inv, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    response = inv.post("/api/v1/push/trace", _push_body(100), content_type="application/json")
    assert response.status_code == 200, response.content
