"""JSON stored as text, so that key order and every string survive on both databases.

PostgreSQL's jsonb reorders keys and refuses `\\u0000`; a text column holding the
compact JSON encoding keeps both (JSON escapes control characters, so no NUL
byte ever reaches the database).
"""

from typing import Any

import orjson
from django.db import models


class JsonError(ValueError):
    """Input that is not JSON this product can keep without loss."""


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | bytes) -> Any:
    """Parse JSON; refuse what could not come back unchanged (NaN, >64-bit integers)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise JsonError(_describe(exc)) from None


def _describe(exc: orjson.JSONDecodeError) -> str:
    msg = str(exc)
    if "integer" in msg.lower() or "number" in msg.lower():
        return f"{msg} (numbers must fit in 64 bits, or be written as floats)"
    return msg


def byte_size(value: Any) -> int:
    """Spec/004's size of a field: UTF-8 bytes of a string, else of its compact JSON."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(orjson.dumps(value))


class JSONTextField(models.TextField):
    """A JSON value kept as its compact encoding (see module docstring)."""

    description = "JSON stored as text, key order preserved"

    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        return orjson.loads(value)

    def to_python(self, value):
        if isinstance(value, str):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
        return value

    def get_prep_value(self, value):
        if value is None:
            return None
        return dumps(value)

    def value_to_string(self, obj):
        return dumps(self.value_from_object(obj))

    def formfield(self, **kwargs):
        from traces.forms import JSONTextFormField

        return super().formfield(**{"form_class": JSONTextFormField, **kwargs})
