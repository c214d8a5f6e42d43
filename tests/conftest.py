import io
from pathlib import Path

import pytest

from traces.services.organizations import organization_get_or_create

FIXTURES = Path(__file__).parent / "fixtures"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def org(db):
    return organization_get_or_create(slug="acme")


def as_file(data: bytes | str, name: str = "upload.json") -> tuple[str, io.BytesIO]:
    if isinstance(data, str):
        data = data.encode()
    return name, io.BytesIO(data)
