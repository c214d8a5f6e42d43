"""JSON stored as text, so that key order and every string survive on both databases.

PostgreSQL's jsonb reorders keys and refuses `\\u0000`; a text column holding the
compact JSON encoding keeps both (JSON escapes control characters, so no NUL
byte ever reaches the database).

The model field and its form field (the admin edits JSON as text) live here together,
so that no two modules import each other.
"""

import json
from typing import Any

import orjson
from django import forms
from django.db import models


class JsonError(ValueError):
    """Input that is not JSON this product can keep without loss."""


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


INT_MIN, INT_MAX = -(2**63), 2**64 - 1
_BIG = float(2**63)

# How deeply one stored JSON value (a payload, raw, metadata or extra) may nest. Real
# traces stay far below it (the deepest benchmark file in shared/data nests 32 levels),
# and it stays far below what the encoder can write back (orjson refuses 255 levels) once
# an answer wraps the value (an API list, the stitched tree, an export line).
MAX_DEPTH = 128
# A document that carries such values (an API body, an import line or file) wraps them in
# a few more levels; deeper documents are refused before anything walks them.
MAX_DOCUMENT_DEPTH = 2 * MAX_DEPTH
# orjson's own limit when parsing.
_PARSER_DEPTH = 1024


class JsonTooDeep(JsonError):
    """A JSON value nested deeper than its limit (`depth` is None past the parser's)."""

    def __init__(self, depth: int | None, limit: int) -> None:
        found = f"{depth} levels" if depth is not None else f"more than {_PARSER_DEPTH} levels"
        super().__init__(f"nested too deeply: {found}; at most {limit} are kept")
        self.depth = depth
        self.limit = limit


def _checked_int(text: str) -> int:
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise JsonError(
            f"the integer {text[:40]} does not fit in 64 bits; write it as a string or a float"
        )
    return value


def loads(text: str | bytes, *, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    """Parse JSON; refuse what could not come back unchanged (NaN, >64-bit integers) and
    what nests deeper than `max_depth` (JsonTooDeep)."""
    return loads_with_depth(text, max_depth=max_depth)[0]


def loads_with_depth(text: str | bytes, *, max_depth: int = MAX_DOCUMENT_DEPTH) -> tuple[Any, int]:
    """`loads`, and how deeply the value nests (found on the way, at no extra cost)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc).lower():
            raise JsonTooDeep(None, max_depth) from None
        raise JsonError(str(exc)) from None
    deepest, big_float = _walk(value)
    if deepest > max_depth:
        raise JsonTooDeep(deepest, max_depth)
    if big_float:
        # orjson turns integers beyond 64 bits into floats, silently losing digits;
        # only then is the text parsed again by a parser that can tell.
        json.loads(text, parse_int=_checked_int)
    return value, deepest


_LEAVES = frozenset({str, int, bool, type(None)})


def _walk(value: Any) -> tuple[int, bool]:
    """How deeply `value` nests (a scalar 0, `[]` 1, `[[]]` 2), and whether it holds a
    float as large as 2**63; without recursion, whatever the depth."""
    if not isinstance(value, dict | list):
        return 0, isinstance(value, float) and abs(value) >= _BIG
    deepest, big_float = 0, False
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, level = pop()
        if level > deepest:
            deepest = level
        for child in item.values() if isinstance(item, dict) else item:
            # Each leaf of a document passes here: its exact type first (an import spent
            # a tenth of its reading in this loop), subclasses by isinstance.
            kind = type(child)
            if kind in _LEAVES:
                continue
            if kind is dict or kind is list or isinstance(child, dict | list):
                push((child, level + 1))
            elif isinstance(child, float) and abs(child) >= _BIG:
                big_float = True
    return deepest, big_float


def depth(value: Any) -> int:
    return _walk(value)[0]


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise JsonTooDeep if `value` nests deeper than `limit`."""
    found = depth(value)
    if found > limit:
        raise JsonTooDeep(found, limit)


def parsed_or_as_is(value: Any) -> Any:
    """A JSON string as its value; anything else, and a string that is not JSON (or nests
    past orjson's 1024 levels), as it is."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def type_name(value: Any) -> str:
    """What JSON calls the type of a decoded value ("array", "null"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def byte_size(value: Any) -> int:
    """Spec/004's size of a field: UTF-8 bytes of a string, else of its compact JSON."""
    if isinstance(value, str):
        # isascii() reads a flag the string keeps: no copy for the common case.
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    return len(orjson.dumps(value))


class JSONTextField(models.TextField):
    """A JSON value kept as its compact encoding (see module docstring)."""

    description = "JSON stored as text, key order preserved"

    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        return orjson.loads(value)

    def to_python(self, value):
        return parsed_or_as_is(value)

    def get_prep_value(self, value):
        if value is None:
            return None
        return dumps(value)

    def value_to_string(self, obj):
        return dumps(self.value_from_object(obj))

    def formfield(self, **kwargs):
        return super().formfield(**{"form_class": JSONTextFormField, **kwargs})


class JSONTextFormField(forms.CharField):
    """Edits a JSON value as text; refuses what is not JSON."""

    widget = forms.Textarea

    def prepare_value(self, value):
        if isinstance(value, str):
            return value
        return dumps(value) if value is not None else ""

    def to_python(self, value):
        value = super().to_python(value)
        if value in self.empty_values:
            return {}
        try:
            return loads(value, max_depth=MAX_DEPTH)
        except JsonTooDeep as exc:
            raise forms.ValidationError(f"JSON {exc}") from None
        except JsonError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from None
