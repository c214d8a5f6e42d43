"""One JSON value that stands for one trace, in any of the shapes DESIGN.md lists."""

from typing import Any

from traces.ingest.notes import notes_of
from traces.ingest.types import USAGE_COLUMNS, FormatProblem, TraceDraft, Usage

USAGE = frozenset(USAGE_COLUMNS)

# The keys of a trace object that become blocks, or the trace's own fields (as this
# product's exports write them: an export imports back as it was).
TURNED_INTO_BLOCKS = ("messages", "blocks", "metadata", "extra")


def _is_blocks(items: list[Any]) -> bool:
    return bool(items) and isinstance(items[0], dict) and "sub_type" in items[0]


def trace_from_value(
    value: Any,
    location: dict[str, Any],
    *,
    depth: int | None = None,
    images_possible: bool = True,
) -> TraceDraft | FormatProblem:
    """An event array, a block array, or `{"messages"|"blocks": [...], "metadata": {...}}`
    (with, as exports write them, the trace's `extra` and `usage` figures).
    `depth` and `images_possible`: what the caller knows of the bytes of `value`
    (TraceDraft)."""
    metadata: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    usage = Usage()
    name = ""
    notes: list[Any] = []
    if isinstance(value, dict):
        items = value.get("messages", value.get("blocks"))
        if not isinstance(items, list):
            return FormatProblem(
                "a trace object needs a `messages` (or `blocks`) array",
                {**location, "field": "messages"},
            )
        # Optional objects: absent or null stand for none; any other value is refused.
        for key in ("metadata", "extra"):
            if value.get(key) is not None and not isinstance(value[key], dict):
                return FormatProblem.not_an_object(key, value[key], location)
        if value.get("metadata") is not None:
            metadata = dict(value["metadata"])
        extra = dict(value.get("extra") or {})
        taken = set(TURNED_INTO_BLOCKS)
        given = value.get("usage")
        if isinstance(given, dict) and given and set(given) <= USAGE:  # an export's figures
            usage = Usage.of(**given)
            taken.add("usage")
        # A top-level name is the trace's name (as exports write it), not metadata.
        if isinstance(value.get("name"), str) and "name" not in metadata:
            name = value["name"]
            taken.add("name")
        # Labels and comments (an export's, Invariant Explorer's): the trace's annotations.
        notes = notes_of(value.get("annotations")) or []
        if notes:
            taken.add("annotations")
        # Nothing is dropped (DESIGN.md "imports keep real logs whole"): every other key
        # goes to the metadata (`reward` there is the trace's reward), unless the
        # metadata object has one of that name.
        for key, kept in value.items():
            if key not in taken and kept is not None:
                metadata.setdefault(key, kept)
    elif isinstance(value, list):
        items = value
        # Invariant's raw lines may lead with {"metadata": {...}} instead of an event.
        if items and isinstance(items[0], dict) and set(items[0]) == {"metadata"}:
            if items[0]["metadata"] is not None and not isinstance(items[0]["metadata"], dict):
                return FormatProblem.not_an_object("metadata", items[0]["metadata"], location)
            metadata = dict(items[0]["metadata"] or {})
            items = items[1:]
    else:
        return FormatProblem(
            f"a trace must be an array of events or an object with `messages`, "
            f"not a JSON {type(value).__name__}",
            location,
        )
    if not name and isinstance(metadata.get("name"), str):
        name = metadata["name"]
    known = {
        "depth": depth, "images_possible": images_possible, "extra": extra, "usage": usage,
        "notes": notes,
    }  # fmt: skip
    if _is_blocks(items):
        return TraceDraft(location=location, blocks=items, metadata=metadata, name=name, **known)
    return TraceDraft(location=location, events=items, metadata=metadata, name=name, **known)
