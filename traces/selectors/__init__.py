"""Reads shared by the pages, the API and the commands."""

from collections.abc import Callable
from typing import TypeVar

from django.db.models import Model, QuerySet

from traces.errors import NotFound

M = TypeVar("M", bound=Model)


def first_or_not_found(
    rows: QuerySet[M] | Callable[[], list[M]], what: str, key: str, value: str
) -> M:
    """The first of `rows` (a query for `value`, or a function that reads it: a Prepared
    one), else NotFound: "no <what> <value>", with {key: value} in its details. A value
    holding NUL names nothing, and is not looked for (PostgreSQL would refuse it)."""
    found = None
    if "\x00" not in value:
        found = rows.first() if isinstance(rows, QuerySet) else next(iter(rows()), None)
    if found is None:
        raise NotFound(f"no {what} {value!r}", {key: value})
    return found
