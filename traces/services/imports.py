"""`trace_import`: the one code path behind every upload (page, admin, API, CLI).

Two phases, so that no upload holds the database's write lock while it is read:

1. Read: every file is parsed, converted and validated with no transaction open; the
   rows it gives go to anonymous temporary files (traces/spool.py), so memory stays
   flat however large the upload. The first problem stops the spooling but not the
   reading, so every problem is reported; then nothing is written at all.
2. Write: only when the whole upload is valid, one short transaction writes the spooled
   rows with the database's bulk path (COPY on PostgreSQL, `executemany` on SQLite).
   Nothing is visible before it commits.
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from traces import ids, jsontext
from traces.bulk import (
    BLOCK_COLUMNS,
    PLACE_COLUMNS,
    TRACE_COLUMNS,
    TRACE_COUNT_COLUMNS,
    adapt_datetime,
    insert_rows,
)
from traces.checks import Limits, check_json_depth, check_no_nul
from traces.errors import ImportFailed, ValidationFailed
from traces.ingest.blocks import blocks_to_drafts
from traces.ingest.detect import detect
from traces.ingest.drafts import ConvertedTrace, problem, problem_from_error
from traces.ingest.events import events_to_blocks
from traces.ingest.types import DatasetMetadata, FormatProblem, TraceDraft
from traces.models import Block, Dataset, Image, Organization, Trace, TraceImage
from traces.order import count_places, stitched_places
from traces.services.annotations import trace_reward
from traces.services.datasets import (
    dataset_get_or_create,
    dataset_lock_next_index,
    dataset_metadata_add,
    dataset_name_check,
)
from traces.spool import RecordSpool, RowSpool
from traces.validation import check_accuracy, check_rewards

MAX_PROBLEMS = 1000
FLUSH_ROWS = 2000  # trace and link rows written at a time
IMAGE_FLUSH_BYTES = 32 << 20  # image bytes written at a time


@dataclass
class ImportResult:
    dataset: Dataset
    traces: int = 0
    blocks: int = 0
    images: int = 0
    seconds: float = 0.0
    formats: dict[str, str] = field(default_factory=dict)


class _Problems:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.count = 0

    def add(self, found: dict[str, Any]) -> None:
        self.count += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(found)

    def final(self) -> list[dict[str, Any]]:
        if self.count > len(self.items):
            more = self.count - len(self.items)
            self.items.append(
                problem({}, f"{more} more problems not listed", rule="too_many_problems")
            )
        return self.items


class _Spool:
    """What the read phase found valid, kept on disk until the write phase: block rows as
    the table takes them, trace rows without their dataset and index (known only under
    the dataset's lock), images once each, and which trace was stored with which image."""

    def __init__(self) -> None:
        self.now = timezone.now()
        self.stamp = adapt_datetime(self.now)
        self.traces = RecordSpool()
        self.blocks = RowSpool(Block._meta.db_table, (*BLOCK_COLUMNS, *PLACE_COLUMNS))
        self.images = RecordSpool()
        self.links = RecordSpool()
        self.image_shas: set[str] = set()
        self.dataset_metadata: dict[str, Any] = {}

    def close(self) -> None:
        for spool in (self.traces, self.blocks, self.images, self.links):
            spool.close()

    def add(self, draft: TraceDraft, converted: ConvertedTrace) -> None:
        """Spool one trace; raises TypeError for what JSON cannot keep (the rows already
        spooled do not matter then: a problem means nothing is written)."""
        trace_id = ids.trace_id()
        block_ids = [ids.block_id() for _ in converted.blocks]
        dumps, now = self.blocks.json, self.stamp
        drafts = converted.blocks
        places = stitched_places([(b.sub_type, b.parent, b.result_seq) for b in drafts])
        for n, b in enumerate(drafts):
            place = places[n]
            payload = dumps(b.payload)
            raw = None if b.raw is None else dumps(b.raw)
            self.blocks.add(
                (
                    block_ids[n], trace_id, b.block_type, b.sub_type,
                    None if b.parent is None else block_ids[b.parent],
                    payload, dumps(b.metadata), raw, dumps(b.extra), b.call_id, b.result_seq,
                    now, now, place.turn, place.act, place.step, n + 1,
                ),
                len(payload) + (0 if raw is None else len(raw)),
            )  # fmt: skip
        metadata = draft.metadata
        name = _trace_name(draft)
        metadata_text = jsontext.dumps(metadata)
        counts = jsontext.dumps(count_places((b.sub_type for b in drafts), places))
        self.traces.add(
            (trace_id, name[:500], metadata_text, trace_reward(extra={}, metadata=metadata),
             len(block_ids), counts),
            len(metadata_text),
        )  # fmt: skip
        for sha, image in converted.images.items():
            if sha not in self.image_shas:
                self.image_shas.add(sha)
                self.images.add((sha, image.mime_type, image.data), len(image.data))
            self.links.add((trace_id, sha))

    def write(self, *, dataset: Dataset, first_index: int) -> None:
        """Every spooled row, in the current transaction."""
        now = self.stamp
        org_id, dataset_id = dataset.organization_id, dataset.pk
        rows = (
            (trace_id, org_id, dataset_id, first_index + n, name, metadata, "{}", reward,
             blocks, now, now, counts)
            for n, (trace_id, name, metadata, reward, blocks, counts) in enumerate(self.traces)
        )  # fmt: skip
        _insert_in_chunks(Trace._meta.db_table, (*TRACE_COLUMNS, *TRACE_COUNT_COLUMNS), rows)
        self.blocks.insert()
        image_ids = self._write_images(dataset.organization_id)
        links = ((trace_id, image_ids[sha]) for trace_id, sha in self.links)
        _insert_in_chunks(TraceImage._meta.db_table, ("trace_id", "image_id"), links)

    def _write_images(self, organization_id: int) -> dict[str, int]:
        """Each image once in the organization (one it already has is kept); their ids."""
        image_ids: dict[str, int] = {}
        chunk: list[Image] = []
        size = 0

        def flush() -> None:
            Image.objects.bulk_create(chunk, ignore_conflicts=True)
            found = Image.objects.filter(
                organization_id=organization_id, sha256__in=[i.sha256 for i in chunk]
            ).values_list("sha256", "id")
            image_ids.update(found)
            chunk.clear()

        for sha, mime_type, data in self.images:
            chunk.append(
                Image(
                    organization_id=organization_id, sha256=sha, mime_type=mime_type,
                    data=data, size=len(data),
                )
            )  # fmt: skip
            size += len(data)
            if size >= IMAGE_FLUSH_BYTES or len(chunk) >= FLUSH_ROWS:
                flush()
                size = 0
        if chunk:
            flush()
        return image_ids


def _insert_in_chunks(table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
    chunk: list[tuple] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= FLUSH_ROWS:
            insert_rows(table, columns, chunk)
            chunk = []
    insert_rows(table, columns, chunk)


def _trace_name(draft: TraceDraft) -> str:
    metadata = draft.metadata
    return draft.name or (metadata.get("name") if isinstance(metadata.get("name"), str) else "")


def _unstorable(draft: TraceDraft) -> list[dict[str, Any]]:
    """A problem for a name the trace's text column cannot keep (NUL), and for each JSON
    value of the draft that would be stored nested deeper than the limit: its metadata,
    each event (kept whole in `raw`), each block's fields."""
    found = []
    try:
        check_no_nul(_trace_name(draft), "name")
    except ValidationFailed as exc:
        found.append(problem_from_error(draft.location, exc))
    values = [(draft.location, "metadata", draft.metadata)]
    for n, event in enumerate(draft.events or []):
        values.append(({**draft.location, "event": n}, "event", event))
    for n, block in enumerate(draft.blocks or []):
        if isinstance(block, dict):
            for key in ("payload", "raw", "metadata", "extra"):
                values.append(({**draft.location, "block": n}, key, block.get(key)))
    for where, field_name, value in values:
        try:
            check_json_depth(value, field_name)
        except ValidationFailed as exc:
            found.append(problem_from_error(where, exc))
    return found


def _convert(draft: TraceDraft, limits: Limits) -> ConvertedTrace:
    unstorable = _unstorable(draft)
    if unstorable:
        return ConvertedTrace([], {}, unstorable)
    if draft.blocks is not None:
        converted = blocks_to_drafts(draft.blocks, location=draft.location, limits=limits)
    else:
        converted = events_to_blocks(draft.events or [], location=draft.location, limits=limits)
    try:
        check_rewards(draft.metadata, field_name="metadata")
    except ValidationFailed as exc:
        converted.problems.append(problem_from_error(draft.location, exc))
    for image in converted.images.values():
        if len(image.data) > settings.LIMIT_IMAGE_BYTES:
            converted.problems.append(
                problem(
                    draft.location,
                    f"an image of {len(image.data)} bytes exceeds the "
                    f"{settings.LIMIT_IMAGE_BYTES}-byte image limit",
                    code="PAYLOAD_TOO_LARGE",
                    rule="limit",
                    field_name="image",
                    details={
                        "field": "image",
                        "limit_bytes": settings.LIMIT_IMAGE_BYTES,
                        "actual_bytes": len(image.data),
                    },
                )
            )
    return converted


def _with_file(found: dict[str, Any], name: str) -> dict[str, Any]:
    return {"file": name, **found}


def _import_file(
    name: str,
    stream: BinaryIO,
    *,
    spool: _Spool,
    problems: _Problems,
    formats: dict[str, str],
    limits: Limits,
    progress: Callable[[int], None] | None,
) -> None:
    try:
        fmt = detect(stream)
    except FormatProblem as exc:
        problems.add(_with_file(problem(exc.location, exc.message, rule=exc.rule), name))
        return
    formats[name] = fmt.name
    found_any = False
    last_pos = 0
    try:
        for item in fmt.read(stream):
            found_any = True
            if isinstance(item, FormatProblem):
                problems.add(_with_file(problem(item.location, item.message, rule=item.rule), name))
            elif isinstance(item, DatasetMetadata):
                try:
                    check_json_depth(item.metadata, "metadata")
                    check_accuracy(item.metadata)
                except ValidationFailed as exc:
                    problems.add(_with_file(problem_from_error({}, exc), name))
                else:
                    spool.dataset_metadata.update(item.metadata)
            else:
                converted = _convert(item, limits)
                for found in converted.problems:
                    problems.add(_with_file(found, name))
                if not problems.count:
                    try:
                        spool.add(item, converted)
                    except TypeError as exc:  # NaN or >64-bit numbers from a lenient parser
                        problems.add(
                            _with_file(
                                problem(item.location, f"cannot be kept as JSON: {exc}"), name
                            )
                        )
            # The trace is spooled: nothing of it stays in memory while the next is read.
            item = converted = None
            if progress is not None:
                pos = stream.tell()
                progress(pos - last_pos)
                last_pos = pos
    except RecursionError:
        problems.add(
            _with_file(problem({}, "JSON nested too deeply to import", rule="depth"), name)
        )
    except (ValueError, UnicodeDecodeError) as exc:  # a parser error mid-stream
        problems.add(_with_file(problem({}, f"invalid JSON: {exc}", rule="json"), name))
    if not found_any:
        problems.add(_with_file(problem({}, "the file holds no trace", rule="non_empty"), name))


# After this many new blocks, PostgreSQL's statistics are refreshed before the commit.
ANALYZE_AFTER_BLOCKS = 10_000


def _refresh_statistics(blocks: int) -> None:
    """The deferred foreign keys are checked at commit, one query per row, planned from
    the table's statistics: when those still say the table is empty (a new database, or
    autovacuum has not run yet), each check may scan the table, and a large import's
    commit takes minutes instead of seconds. ANALYZE sees this transaction's rows."""
    if connection.vendor == "postgresql" and blocks >= ANALYZE_AFTER_BLOCKS:
        with connection.cursor() as cursor:
            # Only the key columns: the payloads are what makes a full ANALYZE slow.
            cursor.execute(
                f"ANALYZE {Block._meta.db_table} (id, trace_id, parent_block_id), "
                f"{Trace._meta.db_table} (id)"
            )


def trace_import(
    *,
    organization: Organization,
    dataset_name: str,
    files: Iterable[tuple[str, BinaryIO]],
    limits: Limits | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import every trace of `files` into the named dataset (created if needed).

    `files` is read once, in order: it may open each file only when its turn comes.
    Raises ImportFailed with every problem found; then nothing is written.
    """
    started = time.perf_counter()
    limits = limits or Limits.from_settings()
    dataset_name = dataset_name_check(dataset_name)
    problems = _Problems()
    formats: dict[str, str] = {}
    spool = _Spool()
    try:
        for name, stream in files:
            # Django's uploaded files split lines at a lone \r too; the file inside does not.
            stream = getattr(stream, "file", stream)
            _import_file(
                name, stream, spool=spool, problems=problems, formats=formats,
                limits=limits, progress=progress,
            )  # fmt: skip
        if problems.count:
            raise ImportFailed(problems.final())
        with transaction.atomic():
            dataset, _ = dataset_get_or_create(organization=organization, name=dataset_name)
            spool.write(dataset=dataset, first_index=dataset_lock_next_index(dataset=dataset))
            _refresh_statistics(spool.blocks.count)
            dataset = dataset_metadata_add(dataset=dataset, metadata=spool.dataset_metadata)
    finally:
        spool.close()
    return ImportResult(
        dataset=dataset,
        traces=spool.traces.count,
        blocks=spool.blocks.count,
        images=len(spool.image_shas),
        seconds=time.perf_counter() - started,
        formats=formats,
    )
