"""Kept so that tests which star-import it still run: its helpers and data fixtures live in
tests/explorer/conftest.py, its people and organizations in tests/conftest.py (the one set,
where `ui_org`, `members_client`... are names of the canonical fixtures). New tests import
from those two."""

from tests.conftest import client_for, user_in  # noqa: F401
from tests.explorer.conftest import (  # noqa: F401
    XSS,
    airline_dataset,
    chat,
    html_problems,
    import_lines,
    jsonl,
    tasks_dataset,
    xss_dataset,
)
