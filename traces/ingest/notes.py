"""The labels and comments a trace line carries in `annotations`, read for an import.

Two shapes are known: this product's exports write `{label, comment, block_id, author,
created_at}` (traces/selectors/exports.py), Invariant Explorer's downloads and sample data
`{content, address, extra_metadata}` (spec invariant-explorer-api.md 2.13). An import makes
them the new trace's annotations: labels of the dataset's vocabulary (added to it when it
has none of that name), comments, Explorer addresses. A list it cannot read whole stays in
the trace's metadata as it was: nothing of a line is dropped.
"""

from dataclasses import dataclass
from typing import Any

from traces import jsontext
from traces.errors import ValidationFailed
from traces.services.annotations import COMMENT_MAX, label_name_check

# The most annotations one trace brings; more, and the list stays in the metadata.
NOTES_MAX = 1000
# The most label names one import may add to the dataset's vocabulary.
NOTE_LABELS_MAX = 200

_EXPORT_KEYS = frozenset({"label", "comment", "block_id"})
_EXPLORER_KEYS = frozenset({"content", "address", "extra_metadata"})


@dataclass(frozen=True)
class NoteDraft:
    comment: str
    label: str | None = None
    block_id: str | None = None  # the block the export named, by its id there
    address: str | None = None  # an Explorer address (traces/addresses.py), as given
    # Explorer's own JSON, and what else the line said of the note (its id, author and
    # time in the system it came from), under "imported".
    extra_metadata: dict[str, Any] | None = None


def notes_of(value: Any) -> list[NoteDraft] | None:
    """The notes of an `annotations` value, or None when it is not a list of notes of a
    known shape, every one readable (then it is kept as metadata)."""
    if not isinstance(value, list) or not value or len(value) > NOTES_MAX:
        return None
    notes = []
    for item in value:
        note = _note(item)
        if note is None:
            return None
        notes.append(note)
    return notes


def _note(item: Any) -> NoteDraft | None:
    if not isinstance(item, dict):
        return None
    explorer = bool(_EXPLORER_KEYS & item.keys())
    if explorer == bool(_EXPORT_KEYS & item.keys()):
        return None  # neither shape, or both
    try:
        return _explorer_note(item) if explorer else _export_note(item)
    except (ValidationFailed, jsontext.JsonError):
        return None


def _text(value: Any) -> str | None:
    """A comment as an annotation keeps it (services/annotations.py's rules), or None."""
    if value is None:
        return ""
    if not isinstance(value, str) or "\x00" in value:
        return None
    value = value.strip()
    return value if len(value) <= COMMENT_MAX else None


def _imported(item: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    rest = {key: value for key, value in item.items() if key not in known}
    return {"imported": rest} if rest else {}


def _explorer_note(item: dict[str, Any]) -> NoteDraft | None:
    comment, address = _text(item.get("content")), item.get("address")
    if comment is None or not (address is None or isinstance(address, str)):
        return None
    if address is not None and "\x00" in address:
        return None
    if not comment and address is None:
        return None
    given = item.get("extra_metadata")
    if given is not None and not isinstance(given, dict):
        return None
    extra = {**(given or {}), **_imported(item, _EXPLORER_KEYS)}
    jsontext.check_depth(extra)
    return NoteDraft(
        comment=comment, address=address, extra_metadata=extra or given,
    )  # fmt: skip


def _export_note(item: dict[str, Any]) -> NoteDraft | None:
    comment, label, block_id = _text(item.get("comment")), item.get("label"), item.get("block_id")
    if comment is None or not (block_id is None or isinstance(block_id, str)):
        return None
    if label is not None:
        label = label_name_check(label)
    if label is None and not comment:
        return None
    extra = _imported(item, _EXPORT_KEYS)
    if block_id is not None:
        extra.setdefault("imported", {})["block_id"] = block_id
    jsontext.check_depth(extra)
    return NoteDraft(comment=comment, label=label, block_id=block_id, extra_metadata=extra or None)
