"""Explorer JSONL uploads (spec invariant-explorer-api.md 2.7): each line read and checked
first, then all of it written in one transaction, or nothing."""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from traces import jsontext
from traces.errors import BadRequest
from traces.invariant.services import (
    Writer,
    _new_trace,
    _NewTrace,
    _next_index,
    _trace_write,
    explorer_name_check,
)
from traces.models import Dataset, Organization
from traces.services.datasets import dataset_get_or_create, dataset_lock

MAX_INDEX = 2**31 - 2


@dataclass
class _Line:
    number: int
    events: list[Any]
    metadata: dict[str, Any]
    annotations: list[Any] = field(default_factory=list)
    index: int | None = None
    name: str | None = None


def _lines(data: bytes) -> Iterator[tuple[int, Any]]:
    try:
        rows = data.decode("utf-8").split("\n") if data else []
    except UnicodeDecodeError:
        raise BadRequest("the file is not UTF-8 text") from None
    if rows and rows[-1] == "":
        rows.pop()  # the file's final line break
    for number, line in enumerate(rows):
        if not line.strip():
            raise BadRequest(f"line {number} is blank")
        try:
            yield number, jsontext.loads(line)
        except (jsontext.JsonError, ValueError) as exc:
            raise BadRequest(f"line {number} is not valid JSON: {exc}") from None


def _annotated(number: int, row: dict[str, Any]) -> _Line:
    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    metadata = dict(metadata)
    for key in ("name", "hierarchy_path"):
        if key in row:
            metadata[key] = row[key]
    notes = row.get("annotations") or []
    if not isinstance(notes, list):
        raise BadRequest(f"line {number}: annotations must be a list")
    for note in notes:
        if not isinstance(note, dict) or "address" not in note or "content" not in note:
            raise BadRequest(f"line {number}: each annotation needs an address and content")
        for key in ("content", "address"):
            if isinstance(note[key], str) and "\x00" in note[key]:
                raise BadRequest(f"line {number}: an annotation's {key} holds a NUL (U+0000)")
    notes = [{**note, "extra_metadata": note.get("extra_metadata", {})} for note in notes]
    if not isinstance(row["messages"], list):
        raise BadRequest(f"line {number}: messages must be a list")
    name = row.get("name") if isinstance(row.get("name"), str) else None
    return _Line(number, row["messages"], metadata, notes, name=name)


def _raw(number: int, events: list[Any]) -> _Line:
    metadata: dict[str, Any] = {}
    if events and isinstance(events[0], dict) and "metadata" in events[0]:
        first = events[0]["metadata"]
        metadata = dict(first) if isinstance(first, dict) else {}
        events = events[1:]
    return _Line(number, events, metadata)


def explorer_lines_read(data: bytes) -> tuple[dict[str, Any] | None, list[_Line]]:
    """The file's metadata line and its traces; BadRequest for the first rule broken."""
    rows = list(_lines(data))
    meta_rows = [
        (n, row) for n, row in rows
        if isinstance(row, dict) and "metadata" in row and "messages" not in row
    ]  # fmt: skip
    if len(meta_rows) > 1:
        raise BadRequest("the metadata row may appear at most once")
    if meta_rows and meta_rows[0][0] != 0:
        raise BadRequest("the metadata row must be the first row")
    file_metadata = None
    if meta_rows:
        file_metadata = meta_rows[0][1]["metadata"]
        if not isinstance(file_metadata, dict):
            raise BadRequest("the metadata row's metadata must be an object")
    lines, kinds, seen, indexed = [], set(), set(), False
    for number, row in rows:
        if meta_rows and number == 0:
            continue
        if isinstance(row, list):
            kinds.add("raw")
            lines.append(_raw(number, row))
            continue
        if not isinstance(row, dict) or "messages" not in row:
            raise BadRequest(
                f"line {number} is neither a list of events nor an object with messages"
            )
        kinds.add("annotated")
        line = _annotated(number, row)
        if "index" in row:
            index = row["index"]
            if isinstance(index, bool) or not isinstance(index, int):
                raise BadRequest(f"line {number}: index must be an integer")
            if not 0 <= index <= MAX_INDEX:
                # the column is a 32-bit integer, and a push takes the next index above
                # the highest: the highest must leave room for one more
                raise BadRequest(f"line {number}: index must be between 0 and {MAX_INDEX}")
            if index in seen:
                raise BadRequest(f"line {number}: index {index} is used by an earlier line")
            seen.add(index)
            line.index, indexed = index, True
        elif indexed:
            raise BadRequest(f"line {number} has no index, after a line that has one")
        lines.append(line)
    if len(kinds) > 1:
        raise BadRequest("a file holds either raw lines (event lists) or annotated lines, not both")
    return file_metadata, lines


def explorer_dataset_upload(
    *, organization: Organization, name: Any, data: bytes, is_public: bool, writer: Writer
) -> Dataset:
    explorer_name_check(name)
    file_metadata, lines = explorer_lines_read(data)
    prepared = [(line, _new_trace(line.events, line.metadata, name)) for line in lines]
    with transaction.atomic():
        dataset, created = dataset_get_or_create(organization=organization, name=name)
        dataset = dataset_lock(dataset=dataset)
        if not created and dataset.traces.exists():
            raise BadRequest(
                f"Dataset {name!r} already exists and has traces; add traces to it with the "
                "push API (POST /api/v1/push/trace)"
            )
        metadata = dict(dataset.metadata) if isinstance(dataset.metadata, dict) else {}
        if created:
            metadata["created_on"] = timezone.localtime().strftime("%Y-%m-%d %H:%M:%S")
        metadata.update(file_metadata or {})
        _write_lines(dataset, organization, prepared, writer)
        dataset.metadata, dataset.is_public = metadata, is_public
        dataset.save(update_fields=["metadata", "is_public", "updated_at"])
    return dataset


def _write_lines(
    dataset: Dataset, organization: Organization,
    prepared: list[tuple[_Line, _NewTrace]], writer: Writer,
) -> None:  # fmt: skip
    given = {line.index for line, _ in prepared if line.index is not None}
    counter = _next_index(dataset)
    for line, new in prepared:
        index = line.index
        if index is None:
            while counter in given:
                counter += 1
            index, counter = counter, counter + 1
        _trace_write(
            new, organization=organization, dataset=dataset, index=index, writer=writer,
            notes=line.annotations, name=line.name,
        )  # fmt: skip
