"""The migrations say everything the models say: a change to a model (a new block sub
type changes Block's choices and its type constraint, traces/kinds.py) without its
migration fails here, not on someone's database."""

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db  # makemigrations reads which migrations are applied
def test_makemigrations_finds_nothing_to_write():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, verbosity=1)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        raise AssertionError(f"a migration is missing:\n{out.getvalue()}") from exc
    assert "No changes detected" in out.getvalue()
