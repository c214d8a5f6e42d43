"""The labels and comments a trace line carries in `annotations`, read for an import.

Two shapes are known: this product's exports write `{label, comment, block_id, author,
created_at}`, with an Explorer note's `address` and `extra_metadata` where it has them
(traces/selectors/exports.py); Invariant Explorer's downloads and sample data write
`{content, address, extra_metadata}` (spec invariant-explorer-api.md 2.13). An import makes
them the new trace's annotations: labels of the dataset's vocabulary (added to it when it
has none of that name), comments, Explorer addresses. A list it cannot read whole stays in
the trace's metadata as it was: nothing of a line is dropped.
"""

from dataclasses import dataclass
from typing import Any

from traces import jsontext
from traces.errors import ValidationFailed
from traces.services.annotations import address_text_check, comment_check, label_name_check

# The most annotations one trace brings; more, and the list stays in the metadata.
NOTES_MAX = 1000
# The most label names one import may add to the dataset's vocabulary.
NOTE_LABELS_MAX = 200

_EXPORT_KEYS = frozenset({"label", "comment", "block_id", "address", "extra_metadata"})
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
    # An export's note says `comment` or `label`; Explorer's `content` or only `address`.
    export = "comment" in item or "label" in item
    explorer = "content" in item or ("address" in item and not export)
    if export == explorer:
        return None  # neither shape, or both
    try:
        return _explorer_note(item) if explorer else _export_note(item)
    except (ValidationFailed, jsontext.JsonError):
        return None


def _address(item: dict[str, Any]) -> str | None:
    """The note's address as annotations keep one, or none (ValidationFailed)."""
    address = item.get("address")
    return None if address is None else address_text_check(address)


def _extra(
    item: dict[str, Any], known: frozenset[str], provenance: dict[str, Any]
) -> tuple[bool, dict[str, Any] | None]:
    """(readable, the note's extra_metadata): the one given, with what else the line said
    of the note under "imported", unless the one given has that already (a note exported
    and uploaded again keeps where it first came from)."""
    given = item.get("extra_metadata")
    if given is not None and not isinstance(given, dict):
        return False, None
    rest = {key: value for key, value in item.items() if key not in known}
    rest.update(provenance)
    extra = dict(given or {})
    if rest and "imported" not in extra:
        extra["imported"] = rest
    jsontext.check_depth(extra)
    return True, extra if extra or given is not None else None


def _explorer_note(item: dict[str, Any]) -> NoteDraft | None:
    comment, address = comment_check(item.get("content")), _address(item)
    if not comment and address is None:
        return None
    readable, extra = _extra(item, _EXPLORER_KEYS, {})
    if not readable:
        return None
    return NoteDraft(comment=comment, address=address, extra_metadata=extra)


def _export_note(item: dict[str, Any]) -> NoteDraft | None:
    comment, address = comment_check(item.get("comment")), _address(item)
    label, block_id = item.get("label"), item.get("block_id")
    if not (block_id is None or isinstance(block_id, str)):
        return None
    if label is not None:
        label = label_name_check(label)
    if label is None and not comment and address is None:
        return None
    readable, extra = _extra(item, _EXPORT_KEYS, {} if block_id is None else {"block_id": block_id})
    if not readable:
        return None
    return NoteDraft(
        comment=comment, label=label, block_id=block_id, address=address, extra_metadata=extra,
    )  # fmt: skip
