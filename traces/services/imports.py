"""`trace_import`: the one code path behind every upload (page, admin, API, CLI).

Two phases, so that no upload holds the database's write lock while it is read:

1. Read: every file is parsed, converted and validated with no transaction open; the
   rows it gives go to anonymous temporary files (traces/spool.py), so memory stays
   flat however large the upload. The first problem stops the spooling but not the
   reading, so every problem is reported; then nothing is written at all.
2. Write: only when the whole upload is valid, one short transaction writes the spooled
   rows with the database's bulk path (COPY on PostgreSQL, `executemany` on SQLite; the
   blocks on SQLite, one INSERT ... SELECT from the throwaway databases their readers
   wrote, traces/spool.py StagedRows). Nothing is visible before it commits.
"""

import hashlib
import logging
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, BinaryIO

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from traces import forked, ids, jsontext
from traces.addresses import AddressInvalid, address_block, address_parse
from traces.bulk import (
    BLOCK_COLUMNS,
    PLACE_COLUMNS,
    TRACE_COLUMNS,
    TRACE_COUNT_COLUMNS,
    adapt_datetime,
    blocks_made_here,
    insert_rows,
    keys_made_here,
    new_uuid,
)
from traces.checks import Limits, check_json_depth, check_no_nul
from traces.errors import ImportFailed, ValidationFailed
from traces.ingest.blocks import blocks_to_drafts
from traces.ingest.detect import detect
from traces.ingest.drafts import BlockDraft, ConvertedTrace, problem, problem_from_error
from traces.ingest.events import Emit, events_to_blocks
from traces.ingest.failure import (
    FAILURE_LABEL,
    FAILURE_LABEL_DESCRIPTION,
    failure_comment,
    failure_of,
    failure_step,
    mark_failure,
)
from traces.ingest.notes import NOTE_LABELS_MAX, NoteDraft
from traces.ingest.parts import Part, count_lines_before, cut, file_size, reopen
from traces.ingest.types import USAGE_COLUMNS, DatasetMetadata, FormatProblem, TraceDraft
from traces.models import (
    Annotation,
    Block,
    Dataset,
    Image,
    Label,
    Organization,
    SearchPending,
    Trace,
    TraceImage,
)
from traces.order import Placer
from traces.search_queue import search_queue_dataset_from, search_queued_here
from traces.services.annotations import COMMENT_MAX, trace_reward
from traces.services.datasets import (
    dataset_get_or_create,
    dataset_lock,
    dataset_lock_next_index,
    dataset_metadata_add,
    dataset_name_check,
    metadata_kept,
    same_json,
)
from traces.services.organizations import organization_hold
from traces.spool import KeySpool, RecordSpool, row_spool
from traces.trials import trace_task_trial
from traces.validation import check_accuracy, check_rewards

logger = logging.getLogger(__name__)

MAX_PROBLEMS = 1000
# What a trace named by its file leaves out of the name (a SWE-agent run's `.traj`).
FILE_EXTENSIONS = (".traj", ".json", ".jsonl")
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
    # The traces left out as duplicates: {"file", "trace" or "line", "name", "reason"}
    # each; the reason is SKIPPED_IN_DATASET or SKIPPED_IN_UPLOAD.
    skipped: list[dict[str, Any]] = field(default_factory=list)
    # What each file gave, in upload order: {"file", "format", "traces", "blocks",
    # "skipped"} (its traces written, their blocks, its duplicates left out).
    files: list[dict[str, Any]] = field(default_factory=list)
    # Dataset metadata the upload brought that the dataset was not given: {"key", "file",
    # "reason"} each; the reason is SKIPPED_IN_DATASET (the dataset has the key: its value
    # is kept) or SKIPPED_IN_UPLOAD (the files do not all give it the same value: it went
    # to the traces of each file named).
    metadata_kept: list[dict[str, Any]] = field(default_factory=list)
    # The most that a process reading a part of a large file grew by (bytes), beside
    # the importing process (benchmarks/import_bench.py adds it).
    part_peak_growth: int = 0


# Why a duplicate was left out: the dataset had it before, or an earlier file or trace
# of the same upload has it.
SKIPPED_IN_DATASET, SKIPPED_IN_UPLOAD = "in_dataset", "in_upload"


class _Problems:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.count = 0

    def add(self, found: dict[str, Any]) -> None:
        self.count += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(found)

    @property
    def full(self) -> bool:
        """As many problems as are listed: the import reads no further (the rest of a file
        of bad lines would only cost time)."""
        return self.count >= MAX_PROBLEMS

    def final(self) -> list[dict[str, Any]]:
        if self.full:
            message = f"stopped after {MAX_PROBLEMS} problems: the rest of the upload was not read"
            self.items.append(problem({}, message, rule="too_many_problems"))
        return self.items


class _Spool:
    """What the read phase found valid, kept on disk until the write phase: block rows as
    the table takes them, trace rows without their dataset and index (known only under
    the dataset's lock), images once each, and which trace was stored with which image."""

    def __init__(
        self,
        *,
        hashes: Iterable[str] = (),
        allow_duplicates: bool = False,
        name_taken: Callable[[str], bool] = lambda name: False,
        part_of: "_Spool | None" = None,
    ) -> None:
        """`part_of`: this spool takes the rows of one part of a file that another process
        reads (`_read_parts`), for that spool to `take` when the part is read: it keeps
        every trace, duplicates included, since only that spool knows which are."""
        self.is_part = part_of is not None
        # The content hashes of the traces the dataset has, and of those this upload
        # writes, once each: on disk, since they grow with the dataset and the upload
        # (none kept when duplicates are allowed: nothing asks for them then).
        self.dataset_hashes = None if self.is_part else KeySpool()
        self.upload_hashes = None if self.is_part else KeySpool()
        if not allow_duplicates and self.dataset_hashes is not None:
            self.dataset_hashes.update(hashes)
        self.allow_duplicates = allow_duplicates or self.is_part
        # Whether the dataset has a trace of that name; the names given to the traces that
        # asked for a unique one (TraceDraft.unique_name) in this upload.
        self.name_taken = name_taken
        self.unique_names: set[str] = set()
        self.skipped: list[dict[str, Any]] = []  # where each duplicate left out was
        self.now = timezone.now() if part_of is None else part_of.now
        self.stamp = adapt_datetime(self.now)
        self.traces = RecordSpool()
        # Filled by a forked reader when it is a part's (`part`, `_read_part`).
        self.blocks = row_spool(
            Block._meta.db_table, (*BLOCK_COLUMNS, *PLACE_COLUMNS), for_child=self.is_part
        )
        self.images = RecordSpool()
        self.links = RecordSpool()
        self.image_shas: set[str] = set()
        # Each file's dataset metadata (a JSONL's first line, an eval's), by the file's
        # place in the upload; the file being read.
        self.file_metadata: list[dict[str, Any]] = []
        self.file_names: list[str] = []
        self.file = -1
        self.dataset_metadata: dict[str, Any] = {}  # what the dataset is given
        self.metadata_kept: list[dict[str, Any]] = []
        # Per file, the keys its traces take since the dataset is not given them.
        self.trace_metadata: list[dict[str, Any]] = []
        # Tool errors (few): their block ids, and how many each trace has.
        self.error_blocks: list[str] = []
        self.trace_errors: dict[str, int] = {}
        # Failure attributions (few): (trace id, its block id or None, comment) each, tagged
        # with the dataset's failure label when written (traces/ingest/failure.py).
        self.failures: list[tuple[str, str | None, str]] = []
        # The labels and comments the traces brought (traces/ingest/notes.py): (trace id,
        # block id or None, label name or None, comment, address, extra_metadata) each; on
        # disk, since a file may bring many. The label names, for the vocabulary.
        self.notes = RecordSpool()
        self.note_labels: set[str] = set()
        # The parts of files other processes read, once taken: their blocks are written
        # from their own spools.
        self.parts: list[_Spool] = []
        self.part_peak_growth = 0

    @property
    def block_count(self) -> int:
        """The blocks to write: this spool's and its parts'."""
        return self.blocks.count + sum(part.blocks.count for part in self.parts)

    def close(self) -> None:
        spools = (self.traces, self.blocks, self.images, self.links, self.notes)
        for spool in (*spools, self.dataset_hashes, self.upload_hashes, *self.parts):
            if spool is not None:
                spool.close()

    def flush_blocks(self) -> None:
        """Every block row where the write reads it, before its transaction: a staged
        spool's database is left by the connection that wrote it (a transaction that
        begins takes a lock on every database attached)."""
        for blocks in (self.blocks, *(part.blocks for part in self.parts)):
            blocks.flush()

    def part(self) -> "_Spool":
        """A spool for one part of the file being read (see `__init__`)."""
        part = _Spool(part_of=self)
        part.file = self.file
        return part

    def state(self) -> dict[str, Any]:
        """What a part's reader found besides the rows in its files, for the spool made
        before the fork, in the parent, to `restore`; its rows flushed to its files."""
        for records in (self.traces, self.images, self.links, self.notes):
            records.flush()
        return {
            "counts": (self.traces.count, self.images.count, self.links.count,
                       self.notes.count),
            "blocks": self.blocks.state(),
            "error_blocks": self.error_blocks, "trace_errors": self.trace_errors,
            "failures": self.failures,
        }  # fmt: skip

    def restore(self, state: dict[str, Any]) -> None:
        self.traces.count, self.images.count, self.links.count, self.notes.count = state["counts"]
        self.blocks.restore(state["blocks"])
        self.error_blocks = state["error_blocks"]
        self.trace_errors = state["trace_errors"]
        self.failures = state["failures"]

    def take(self, part: "_Spool", *, file_name: str, trace_offset: int) -> None:
        """The traces of a part read (the next of the file), as if this spool had read
        them: duplicates left out as `trace` leaves them out, in the same order; their
        lines' traces numbered on from `trace_offset`."""
        # The traces left out (few, but for an upload of what the dataset has): a set of
        # those kept would grow with the upload.
        left_out = part.blocks.left_out
        left_out_blocks = 0
        for record in part.traces:
            trace_id, blocks, content_hash, (location, name, notes) = (
                record[0], record[5], record[6], record[10]
            )  # fmt: skip
            reason = self._duplicate_of(content_hash)
            if reason:
                left_out.add(trace_id)
                left_out_blocks += blocks
                self.skipped.append({
                    "file": file_name, **shift_trace(location, trace_offset),
                    "name": name, "reason": reason, **_notes_left_out(notes),
                })  # fmt: skip
                continue
            self.traces.add(record, len(record[2]) + len(record[3]))
        part.blocks.count -= left_out_blocks
        at = 0  # a trace's tool errors follow each other, in the order of trace_errors
        for trace_id, count in part.trace_errors.items():
            if trace_id not in left_out:
                self.error_blocks += part.error_blocks[at : at + count]
                self.trace_errors[trace_id] = count
            at += count
        self.failures += [failure for failure in part.failures if failure[0] not in left_out]
        shown: set[str] = set()
        for trace_id, sha in part.links:
            if trace_id not in left_out:
                shown.add(sha)
                self.links.add((trace_id, sha))
        for sha, mime_type, data in part.images:
            if sha in shown and sha not in self.image_shas:
                self.image_shas.add(sha)
                self.images.add((sha, mime_type, data), len(data))
        for note in part.notes:
            if note[0] not in left_out:
                self.note(note)
        self.parts.append(part)

    def note(self, note: tuple) -> None:
        """Spool one label or comment of a trace kept (see `notes`)."""
        self.notes.add(note, len(note[3]))
        if note[2] is not None:
            self.note_labels.add(note[2])

    def block(
        self, trace: "_TraceState", b: BlockDraft, block_id: str, parent_id: str | None
    ) -> None:
        """Spool one block row: its part of the trace's content hash first (as made),
        then the failure's mark (Who&When) and its tool error noted. Raises TypeError for
        what JSON cannot keep (the rows already spooled do not matter then: a problem
        means nothing is written)."""
        # Encoded once, as bytes: the hash reads them, and the rows take them as text.
        payload = orjson.dumps(b.payload)
        raw = None if b.raw is None else orjson.dumps(b.raw)
        metadata = orjson.dumps(b.metadata)
        # One update of the same bytes as one per field: the same hash as before.
        head = f"{b.sub_type} {b.parent}".encode()
        trace.content.update(
            b"".join((
                _length(len(head)), head, _length(len(payload)), payload,
                *((_NULL_PART,) if raw is None else (_length(len(raw)), raw)),
                _length(len(metadata)), metadata,
            ))
        )  # fmt: skip
        if trace.failure_step is not None and mark_failure(trace.metadata, b, block_id):
            trace.failure_step = None
            trace.failure_block = block_id
            metadata = orjson.dumps(b.metadata)
        if b.is_error:
            self.error_blocks.append(block_id)
            self.trace_errors[trace.id] = self.trace_errors.get(trace.id, 0) + 1
        if trace.spooled_from is None:
            trace.spooled_from = self.blocks.mark()
        place = trace.placer.add(b.sub_type, b.parent, b.result_seq)
        trace.blocks += 1
        extra = b"{}" if type(b.extra) is dict and not b.extra else orjson.dumps(b.extra)
        size = len(payload) + (0 if raw is None else len(raw))
        # Text columns: the rows take str on both databases (traces/spool.py).
        payload, metadata, extra = payload.decode(), metadata.decode(), extra.decode()
        raw = None if raw is None else raw.decode()
        now = self.stamp
        self.blocks.add(
            (
                block_id, trace.id, b.block_type, b.sub_type, parent_id,
                payload, metadata, raw, extra, b.call_id, b.result_seq,
                now, now, place.turn, place.act, place.step, trace.blocks,
            ),
            size,
        )  # fmt: skip

    def trace(self, trace: "_TraceState", draft: TraceDraft, converted: ConvertedTrace) -> bool:
        """Spool the trace's row and its images, once its blocks are spooled, unless
        the dataset (or this upload) has it already and duplicates are not allowed: then
        its blocks already spooled are left out of the write, and False."""
        trace_id = trace.id
        content_hash = trace.content.hexdigest()
        duplicate_of = self._duplicate_of(content_hash)
        if duplicate_of:
            trace.duplicate_of = duplicate_of
            if trace.spooled_from is not None:
                self.blocks.leave_out(trace_id, trace.spooled_from)
            errors = self.trace_errors.pop(trace_id, 0)
            if errors:  # this trace's, noted last
                del self.error_blocks[-errors:]
            return False
        name = self._unique(trace.name[:490]) if draft.unique_name and trace.name else trace.name
        metadata = draft.metadata
        failure = failure_of(metadata)
        # A trace exported here brings its failure's tag among its notes: not made twice.
        if failure is not None and not any(n.label == FAILURE_LABEL for n in draft.notes):
            # On the block marked here, never on one the file names: that id may be no
            # block of this database (a chat export's, or made up).
            comment = failure_comment(failure, COMMENT_MAX)
            self.failures.append((trace_id, trace.failure_block, comment))
        metadata_text = jsontext.dumps(metadata)
        extra_text = jsontext.dumps(draft.extra) if draft.extra else "{}"
        task, trial = trace_task_trial(metadata=metadata)
        self.traces.add(
            (trace_id, name[:500], metadata_text, extra_text,
             trace_reward(extra=draft.extra, metadata=metadata), trace.blocks, content_hash,
             jsontext.dumps(trace.placer.counts), (*draft.usage.row(), task, trial), self.file,
            (draft.location, trace.name, len(draft.notes))),
            len(metadata_text) + len(extra_text),
        )  # fmt: skip
        for sha, image in converted.images.items():
            if sha not in self.image_shas:
                self.image_shas.add(sha)
                self.images.add((sha, image.mime_type, image.data), len(image.data))
            self.links.add((trace_id, sha))
        return True

    def _duplicate_of(self, content_hash: str) -> str:
        """Why a trace of this content hash is left out (SKIPPED_IN_UPLOAD, SKIPPED_IN_DATASET),
        or "" when it is kept: then the upload has it, for the traces after it."""
        if self.allow_duplicates:
            return ""
        if content_hash in self.upload_hashes:
            return SKIPPED_IN_UPLOAD
        if content_hash in self.dataset_hashes:
            return SKIPPED_IN_DATASET
        self.upload_hashes.add(content_hash)
        return ""

    def _unique(self, base: str) -> str:
        """`base`, or `base (2)`, `base (3)`... the first that neither the dataset nor this
        upload's other unique-named traces have. The content hash is of `base`: the same
        run imported again is still a duplicate."""
        name, n = base, 1
        while name in self.unique_names or self.name_taken(name):
            n += 1
            name = f"{base} ({n})"
        self.unique_names.add(name)
        return name

    def _write_failures(self, dataset: Dataset) -> None:
        """Each failure attribution as an annotation with the dataset's failure label."""
        if not self.failures:
            return
        label, _ = Label.objects.get_or_create(
            dataset=dataset, name=FAILURE_LABEL,
            defaults={"description": FAILURE_LABEL_DESCRIPTION},
        )  # fmt: skip
        Annotation.objects.bulk_create(
            Annotation(trace_id=trace_id, block_id=block_id, label=label, comment=comment)
            for trace_id, block_id, comment in self.failures
        )

    def _write_notes(self, dataset: Dataset) -> None:
        """The labels and comments the traces brought, as their annotations: each label
        name the dataset's vocabulary lacks is added to it."""
        if not self.notes.count:
            return
        labels = {}
        for name in sorted(self.note_labels):
            labels[name], _ = Label.objects.get_or_create(dataset=dataset, name=name)
        now = self.stamp
        rows = (
            (ids.annotation_id(), trace_id, block_id,
             None if label is None else labels[label].pk, comment, address,
             None if extra is None else jsontext.dumps(extra), now, new_uuid())
            for trace_id, block_id, label, comment, address, extra in self.notes
        )  # fmt: skip
        # Bulk rows, as the traces' and blocks' (model instances cost ~0.4 ms a note).
        _insert_in_chunks(Annotation._meta.db_table, NOTE_COLUMNS, rows)

    def _write_errors(self) -> None:
        """Block.is_error and Trace.tool_errors, written after the bulk rows (whose
        columns leave them to their database defaults): one update per chunk."""
        for start in range(0, len(self.error_blocks), FLUSH_ROWS):
            chunk = self.error_blocks[start : start + FLUSH_ROWS]
            Block.objects.filter(id__in=chunk).update(is_error=True)
        by_count: dict[int, list[str]] = {}
        for trace_id, count in self.trace_errors.items():
            by_count.setdefault(count, []).append(trace_id)
        for count, trace_ids in by_count.items():
            for start in range(0, len(trace_ids), FLUSH_ROWS):
                chunk = trace_ids[start : start + FLUSH_ROWS]
                Trace.objects.filter(id__in=chunk).update(tool_errors=count)

    def settle_metadata(self) -> None:
        """Which dataset metadata the files give the dataset, and which their traces keep.
        Of the files that give dataset metadata, a key goes to the dataset only when every
        one of them gives it the same value (several evals' accuracies, runs of several
        models, a key of one format only describe some traces, not the dataset): else the
        traces of each file that gave it keep it (a key of their own wins). Files that
        give none (a plain JSONL beside one with a metadata line) have no say."""
        givers = [n for n, given in enumerate(self.file_metadata) if given]
        self.trace_metadata = [{} for _ in self.file_metadata]
        if not givers:
            return
        first, others = self.file_metadata[givers[0]], [self.file_metadata[n] for n in givers[1:]]
        self.dataset_metadata = {
            key: value
            for key, value in first.items()
            if all(key in other and same_json(other[key], value) for other in others)
        }
        for n in givers:
            own = {k: v for k, v in self.file_metadata[n].items() if k not in self.dataset_metadata}
            self.trace_metadata[n] = own
            self.metadata_kept += [
                {"key": key, "file": self.file_names[n], "reason": SKIPPED_IN_UPLOAD} for key in own
            ]

    def _with_file_metadata(self, metadata_text: str, file: int) -> str:
        own = self.trace_metadata[file] if 0 <= file < len(self.trace_metadata) else None
        if not own:
            return metadata_text
        metadata = jsontext.loads(metadata_text)
        if not isinstance(metadata, dict):
            return metadata_text
        return jsontext.dumps({**own, **metadata})

    def write(self, *, dataset: Dataset, first_index: int) -> None:
        """Every spooled row, in the current transaction."""
        now = self.stamp
        org_id, dataset_id = dataset.organization_id, dataset.pk
        rows = (
            (trace_id, org_id, dataset_id, first_index + n, name,
             self._with_file_metadata(metadata, file), extra, reward,
             blocks, now, now, content_hash, counts, *derived, new_uuid())
            for n, (
                trace_id, name, metadata, extra, reward, blocks, content_hash, counts, derived,
                file, _origin,
            ) in enumerate(self.traces)
        )  # fmt: skip
        # derived: the usage figures, then the task and trial (traces/trials.py)
        columns = (
            *TRACE_COLUMNS, "content_hash", *TRACE_COUNT_COLUMNS, *USAGE_COLUMNS, "task", "trial",
            "uuid",
        )  # fmt: skip
        _insert_in_chunks(Trace._meta.db_table, columns, rows)
        # Every trace id was made here, every parent id from a block of the same trace
        # (events.py's `parents`, a block array's `block_ids`): no per-row check needed.
        with blocks_made_here(), search_queued_here():
            self.blocks.insert()
            for part in self.parts:
                part.blocks.insert()
        search_queue_dataset_from(dataset_id=dataset_id, first_index=first_index)
        self._write_errors()
        self._write_failures(dataset)
        self._write_notes(dataset)
        image_ids = self._write_images(dataset.organization_id)
        links = ((trace_id, image_ids[sha]) for trace_id, sha in self.links)
        _insert_in_chunks(TraceImage._meta.db_table, ("trace_id", "image_id"), links)

    def _write_images(self, organization_id: int) -> dict[str, int]:
        """Each image once in the organization (one it already has is kept); their ids,
        each image held (locked) until the commit, so that a delete of the last trace
        that showed it cannot take it away under this import's links (see
        traces/services/deletion.py). An image deleted between finding and holding it
        is stored again."""
        image_ids = self._store_images(organization_id, shas=None)
        for _ in range(IMAGE_ATTEMPTS):
            gone = _hold_images(image_ids)
            if not gone:
                return image_ids
            image_ids.update(self._store_images(organization_id, shas=gone))
        raise RuntimeError("the images of an import kept being deleted under it")

    def _store_images(self, organization_id: int, *, shas: set[str] | None) -> dict[str, int]:
        """Insert the spooled images (only `shas` if given) that the organization does
        not have; the ids of all of them."""
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
            if shas is not None and sha not in shas:
                continue
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


# The columns of an annotation an import writes; the others take their defaults (no author,
# no API key).
NOTE_COLUMNS = (
    "id", "trace_id", "block_id", "label_id", "comment", "address", "extra_metadata",
    "created_at", "uuid",
)  # fmt: skip

# How often an import stores again images deleted under it before it gives up.
IMAGE_ATTEMPTS = 5


def _hold_images(image_ids: dict[str, int]) -> set[str]:
    """Lock the images (FOR KEY SHARE: other imports may hold them too; a delete waits
    for this transaction) in ascending id order, as deletes lock them; the shas of those
    deleted meanwhile. SQLite runs one write transaction at a time: nothing to hold."""
    if connection.vendor != "postgresql" or not image_ids:
        return set()
    by_id = {image_id: sha for sha, image_id in image_ids.items()}
    ordered = sorted(by_id)
    held: set[int] = set()
    table = Image._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), FLUSH_ROWS):
            cursor.execute(
                f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE",
                [ordered[start : start + FLUSH_ROWS]],
            )
            held.update(row[0] for row in cursor.fetchall())
    return {by_id[i] for i in ordered if i not in held}


class _TraceState:
    """One trace while its blocks are spooled: its id, name and metadata, its content
    hash so far (SHA-256 of what it stores but its ids and times: name, metadata as read,
    then each block as made, before the failure's mark), how many blocks are spooled,
    and the failure step whose block is still to be marked."""

    def __init__(self, draft: TraceDraft, file_name: str = "") -> None:
        self.id = ids.trace_id()
        self.name = _trace_name(draft, file_name)
        self.metadata = draft.metadata
        self.blocks = 0
        self.failure_step = failure_step(draft.metadata)
        self.failure_block: str | None = None  # the block marked as the failure's, if one
        self._content: Any = None
        self.spooled_from: Any = None  # the block spool's mark before its first block
        self.duplicate_of = ""  # why it is left out, if it is (SKIPPED_IN_DATASET...)
        self.placer = Placer()  # its blocks' places in the stitched order (traces/order.py)

    @property
    def content(self) -> Any:
        """The hash, begun at its first use: once the trace's values are checked (a
        metadata nested too deeply is reported as such, not as unkeepable). Raises
        TypeError for what JSON cannot keep."""
        if self._content is None:
            content = hashlib.sha256()
            content.update(_hash_part(self.name))
            content.update(_hash_part(jsontext.dumps(self.metadata)))
            self._content = content
        return self._content


# The prefix of one field of a trace's content hash: its length, as 8 bytes big-endian.
_length = struct.Struct(">Q").pack

_NULL_PART = _length(4) + b"null"  # a block without `raw`


def _hash_part(part: str | bytes) -> bytes:
    """One field of a trace's content hash, length-prefixed so that fields cannot run
    into each other."""
    data = part.encode() if isinstance(part, str) else part
    return len(data).to_bytes(8, "big") + data


def _insert_in_chunks(table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
    chunk: list[tuple] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= FLUSH_ROWS:
            insert_rows(table, columns, chunk)
            chunk = []
    insert_rows(table, columns, chunk)


def _trace_name(draft: TraceDraft, file_name: str = "") -> str:
    """The draft's name; else its file's name without its folder and its JSON extensions,
    where the format asks for it (`runs/foo__bar-12.traj` -> `foo__bar-12`); else
    `metadata.name`."""
    if draft.name:
        return draft.name
    if draft.name_from_file and file_name:
        path = PurePath(file_name.replace("\\", "/"))
        while path.suffix in FILE_EXTENSIONS and path.stem:
            path = PurePath(path.stem)
        return path.name
    metadata = draft.metadata
    return metadata.get("name") if isinstance(metadata.get("name"), str) else ""


def _unstorable(draft: TraceDraft) -> list[dict[str, Any]]:
    """A problem for a name the trace's text column cannot keep (NUL), and for each JSON
    value of the draft that would be stored nested deeper than the limit: its metadata,
    each event (kept whole in `raw`), each block's fields."""
    found = []
    try:
        check_no_nul(_trace_name(draft), "name")
    except ValidationFailed as exc:
        found.append(problem_from_error(draft.location, exc))
    if draft.depth is not None and draft.depth <= jsontext.MAX_DEPTH:
        return found  # no value inside the document nests deeper than the document
    values = [(draft.location, "metadata", draft.metadata)]
    # Events read as they are converted (an iterator) are checked by the converter.
    for n, event in enumerate(draft.events if isinstance(draft.events, list) else []):
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


def _convert(draft: TraceDraft, limits: Limits, emit: Emit) -> ConvertedTrace:
    """Chat events are converted one at a time, each block given to `emit` as it is made;
    a spec/004 block array is converted whole (its `blocks`)."""
    unstorable = _unstorable(draft)
    if unstorable:
        return ConvertedTrace([], {}, unstorable)
    if draft.keep_empty and not draft.events:
        converted = ConvertedTrace([], {}, [])
    elif draft.blocks is not None:
        converted = blocks_to_drafts(draft.blocks, location=draft.location, limits=limits)
    else:
        converted = events_to_blocks(
            draft.events or [],
            location=draft.location,
            limits=limits,
            images=draft.images_possible,
            depth=draft.depth,
            emit=emit,
            check_events=not isinstance(draft.events, list),
        )
    try:
        check_rewards(draft.metadata, field_name="metadata")
        check_rewards(draft.extra, field_name="extra")
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


def _import_trace(
    draft: TraceDraft, *, spool: _Spool, problems: _Problems, limits: Limits, file_name: str
) -> None:
    """Convert, check and spool one trace. Its blocks are spooled as they are made, while
    the upload has no problem; a problem found later still means nothing is written."""

    def unkeepable(exc: TypeError) -> None:  # NaN or >64-bit numbers from a lenient parser
        found = problem(draft.location, f"cannot be kept as JSON: {exc}")
        problems.add(_with_file(found, file_name))

    trace = _TraceState(draft, file_name)
    # The blocks each event became, for the notes that name an event by their address.
    event_blocks: dict[int, list[tuple[str, str]]] | None = (
        {} if any(note.address is not None for note in draft.notes) else None
    )

    def emit(block: BlockDraft) -> None:
        if not problems.count:
            try:
                spool.block(trace, block, block.id, block.parent_id)
            except TypeError as exc:
                unkeepable(exc)
            if event_blocks is not None:
                event = block.metadata.get("event_index")
                if type(event) is int:
                    event_blocks.setdefault(event, []).append((block.id, block.sub_type))

    converted = _convert(draft, limits, emit)
    for found in converted.problems:
        problems.add(_with_file(found, file_name))
    if problems.count:
        return
    renamed: dict[str, str] = {}  # a block array's ids -> the ids its blocks are given
    try:
        if converted.blocks:  # a block array, converted whole: its ids are made here
            block_ids = [ids.block_id() for _ in converted.blocks]
            for n, b in enumerate(converted.blocks):
                parent_id = None if b.parent is None else block_ids[b.parent]
                spool.block(trace, b, block_ids[n], parent_id)
            if draft.notes and draft.blocks and len(draft.blocks) == len(block_ids):
                renamed = {
                    item["id"]: block_ids[n] for n, item in enumerate(draft.blocks)
                    if isinstance(item, dict) and isinstance(item.get("id"), str)
                }  # fmt: skip
        if not spool.trace(trace, draft, converted):
            spool.skipped.append(
                {"file": file_name, **draft.location, "name": trace.name,
                 "reason": trace.duplicate_of, **_notes_left_out(len(draft.notes))}
            )  # fmt: skip
            return
    except TypeError as exc:
        unkeepable(exc)
        return
    for note in draft.notes:
        spool.note(_note_row(trace.id, note, event_blocks or {}, renamed))


def _notes_left_out(count: int) -> dict[str, int]:
    """What a skipped trace's entry says of the labels and comments it brought: the trace
    the dataset has is not given them (it may have its own)."""
    return {"annotations": count} if count else {}


def _note_row(
    trace_id: str,
    note: NoteDraft,
    event_blocks: dict[int, list[tuple[str, str]]],
    renamed: dict[str, str],
) -> tuple:
    """A note's row for the notes spool: on the block its export named (by the id the
    block is given now) or its Explorer address points at (the event's blocks, as
    annotations pushed through /api/v1 find it), else on the trace."""
    block_id = None if note.block_id is None else renamed.get(note.block_id)
    if block_id is None and note.address is not None:
        try:
            address = address_parse(note.address)
        except AddressInvalid:
            address = None  # kept as given: an address may point nowhere
        if address is not None and address.event is not None:
            block_id = address_block(address, event_blocks.get(address.event, []))
    return (trace_id, block_id, note.label, note.comment, note.address, note.extra_metadata)


def _add_dataset_metadata(spool: _Spool, metadata: dict[str, Any]) -> None:
    """A file's dataset metadata (settled across files by `_Spool.settle_metadata`)."""
    spool.file_metadata[spool.file].update(metadata)


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
    parts = _parts(fmt, stream)
    if parts is None:
        found_any = _read_items(
            fmt.read(stream), name=name, stream=stream, spool=spool, problems=problems,
            limits=limits, progress=progress,
        )  # fmt: skip
    else:
        found_any = _read_parts(
            fmt, parts, name=name, stream=stream, spool=spool, problems=problems,
            limits=limits, progress=progress,
        )  # fmt: skip
    if not found_any and not problems.full:
        problems.add(_with_file(problem({}, "the file holds no trace", rule="non_empty"), name))


def _read_items(
    items: Iterable[Any],
    *,
    name: str,
    stream: BinaryIO,
    spool: _Spool,
    problems: _Problems,
    limits: Limits,
    progress: Callable[[int], None] | None,
) -> bool:
    """Spool every trace the format reads; whether it read anything."""
    found_any = False
    last_pos = stream.tell()
    try:
        for item in items:
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
                    _add_dataset_metadata(spool, item.metadata)
            else:
                _import_trace(item, spool=spool, problems=problems, limits=limits, file_name=name)
            # The trace is spooled: nothing of it stays in memory while the next is read.
            item = None
            if progress is not None:
                pos = stream.tell()
                progress(pos - last_pos)
                last_pos = pos
            if problems.full:
                return found_any
    except RecursionError:
        problems.add(
            _with_file(problem({}, "JSON nested too deeply to import", rule="depth"), name)
        )
    except (ValueError, UnicodeDecodeError) as exc:  # a parser error mid-stream
        problems.add(_with_file(problem({}, f"invalid JSON: {exc}", rule="json"), name))
    return found_any


def _parts(fmt: Any, stream: BinaryIO) -> list[Part] | None:
    """The parts a large file of independent lines is read in, one process each (the
    import's CPU-bound half, on as many cores as settings.IMPORT_WORKERS allows); None
    to read it whole here."""
    workers = settings.IMPORT_WORKERS
    if workers < 2 or not getattr(fmt, "splittable", False) or not forked.can_fork():
        return None
    size = file_size(stream)
    if size is None or size < 2 * PART_MIN_BYTES:
        return None
    parts = cut(stream, size=size, parts=min(workers, size // PART_MIN_BYTES, ids.MAX_PARTS))
    return parts if len(parts) > 1 else None


# A file is cut in parts of at least this size: below it, a process of its own costs
# more than it saves.
PART_MIN_BYTES = 8 << 20


@dataclass
class _PartRead:
    """What the reader of a part found, besides the rows in its spool's files."""

    found_any: bool
    traces: int  # the traces its lines hold (the next part numbers its traces on from it)
    problems: list[dict[str, Any]]
    problem_count: int
    state: dict[str, Any]
    peak_growth: int = 0  # bytes the reader's process grew by, at most


def _read_part(
    fmt: Any,
    part: Part,
    *,
    name: str,
    stream: BinaryIO,
    spool: _Spool,
    limits: Limits,
    ids_from: tuple[int, int],
    in_child: bool = True,
    parts: int = 0,
) -> _PartRead:
    """Read one part of the file into `spool` (a part spool): in a child, from a file of
    its own (the open file's position is the parent's too); in the importer, which is
    done with its own part by then, from its stream. Its ids in the range `ids_from`
    (the pinned millisecond, the part's number: traces/ids.py `pin`)."""
    peak = forked.PeakGrowth() if in_child else None
    spool.blocks.open_here()  # first: its file's name is gone once it is open
    ms, number = ids_from
    ids.pin(ms=ms, part=number)
    problems = _Problems()
    try:
        with reopen(stream) if in_child else nullcontext(stream) as own:
            part.first_line = count_lines_before(own, part.start)
            own.seek(part.start)
            found_any = _read_items(
                fmt.read(own, part), name=name, stream=own, spool=spool, problems=problems,
                limits=limits, progress=None,
            )  # fmt: skip
    finally:
        if not in_child:  # the importer counts on in its own range, above this one
            ids.unpin(parts=parts)
    state = spool.state()
    growth = 0 if peak is None else peak.bytes()
    return _PartRead(found_any, part.traces, problems.items, problems.count, state, growth)


def _read_parts(
    fmt: Any,
    parts: list[Part],
    *,
    name: str,
    stream: BinaryIO,
    spool: _Spool,
    problems: _Problems,
    limits: Limits,
    progress: Callable[[int], None] | None,
) -> bool:
    """The file's first part read here while a forked child reads each other part into a
    spool of its own (made here, before the fork: the files are shared); then each part
    taken in order, as if read here. A child that fails is replaced by a read here."""
    readers: list[tuple[Part, _Spool, forked.Forked | None]] = []
    # Each part's ids in a range of its own, so that the file's traces sort by id in file
    # order (the API lists them so) whichever process read them.
    ms = ids.pin_ms()
    ids.pin(ms=ms, part=0)
    try:
        for n, part in enumerate(parts[1:], 1):
            part_spool = spool.part()
            try:
                child: forked.Forked | None = forked.Forked(
                    lambda n=n, part=part, part_spool=part_spool: _read_part(
                        fmt,
                        part,
                        name=name,
                        stream=stream,
                        spool=part_spool,
                        limits=limits,
                        ids_from=(ms, n),
                    )  # fmt: skip
                )
            except OSError as exc:  # no process to be had (the pid limit, memory)
                logger.warning("no process to read a part of %s, read here: %s", name, exc)
                child = None
                part_spool.blocks.open_here()  # here, now: no name left on disk meanwhile
            readers.append((part, part_spool, child))
        stream.seek(0)
        shown = _WholeFileProgress(progress, parts)
        found_any = _read_items(
            fmt.read(stream, parts[0]), name=name, stream=stream, spool=spool,
            problems=problems, limits=limits, progress=shown.first_part if progress else None,
        )  # fmt: skip
        offset = parts[0].traces
        for n, (part, part_spool, child) in enumerate(readers):
            read = None
            if child is not None:
                try:
                    read = child.result(timeout=_part_timeout(part))
                    part_spool.restore(read.state)
                except forked.ChildFailed as exc:
                    logger.warning("a part reader failed, the part is read again here: %s", exc)
                    part_spool.close()
                    part_spool = spool.part()
                readers[n] = (part, part_spool, None)
            if read is None:
                read = _read_part(
                    fmt, part, name=name, stream=stream, spool=part_spool, limits=limits,
                    in_child=False, ids_from=(ms, n + 1), parts=len(parts),
                )  # fmt: skip
            spool.part_peak_growth = max(spool.part_peak_growth, read.peak_growth)
            for found in read.problems:
                problems.add(shift_trace(found, offset))
            problems.count += read.problem_count - len(read.problems)
            if not problems.count:
                spool.take(part_spool, file_name=name, trace_offset=offset)
            else:
                part_spool.close()
            offset += read.traces
            found_any = found_any or read.found_any
        shown.done()
    except BaseException:
        for _, part_spool, child in readers:
            if child is not None:
                child.stop()
            part_spool.close()
        raise
    finally:
        ids.unpin(parts=len(parts))
    return found_any


class _WholeFileProgress:
    """Progress through a file read in parts: the readers of the other parts say nothing
    until they are done, and read about as fast as the first part's; so the first part's
    bytes are shown as that share of the whole file, and what is left when all are taken."""

    def __init__(self, progress: Callable[[int], None] | None, parts: list[Part]) -> None:
        self.progress = progress
        self.size = parts[-1].end - parts[0].start
        self.scale = self.size / max(1, parts[0].end - parts[0].start)
        self.shown = 0

    def first_part(self, read: int) -> None:
        step = min(int(read * self.scale), self.size - self.shown)
        if step > 0 and self.progress is not None:
            self.shown += step
            self.progress(step)

    def done(self) -> None:
        if self.progress is not None and self.shown < self.size:
            self.progress(self.size - self.shown)
            self.shown = self.size


# How long a part's reader may take before it is taken for hung (a lock it inherited
# held for ever, say) and the part read here instead: 50 times what reading it here takes.
PART_SECONDS_MIN = 120.0
PART_SECONDS_PER_MB = 2.0


def _part_timeout(part: Part) -> float:
    return max(PART_SECONDS_MIN, (part.end - part.start) / 1e6 * PART_SECONDS_PER_MB)


def shift_trace(location: dict[str, Any], offset: int) -> dict[str, Any]:
    """A location (of a problem, of a trace left out) in a part of a file, with its
    trace numbered in the whole file."""
    if offset and isinstance(location.get("trace"), int):
        return {**location, "trace": location["trace"] + offset}
    return location


def _dataset_has_name(
    *, organization: Organization, dataset_name: str, dataset: Dataset | None = None
) -> Callable[[str], bool]:
    """Whether the dataset (else the named one) has a trace of a name. Its names are read
    in one query at the first question, asked only when a trace wants a unique name (a
    SWE-agent run), so other imports never pay for it."""
    traces = (
        Trace.objects.filter(dataset=dataset)
        if dataset is not None
        else Trace.objects.filter(dataset__organization=organization, dataset__name=dataset_name)
    )
    names: set[str] | None = None

    def taken(name: str) -> bool:
        nonlocal names
        if names is None:
            names = set(traces.values_list("name", flat=True))
        return name in names

    return taken


def _refuse_traces_written_meanwhile(*, dataset: Dataset, hashes: KeySpool) -> None:
    """Under the dataset's lock: if another import wrote some of these traces since this
    one read the dataset's hashes (two uploads of one file at once), refuse this one whole
    rather than store copies that pass@k would count; uploaded again, they are skipped."""
    found = 0
    for chunk in hashes.chunks(HASH_CHUNK):
        found += Trace.objects.filter(dataset=dataset, content_hash__in=chunk).count()
    if found:
        raise ImportFailed([problem(
            {"dataset": dataset.name},
            f"another import into this dataset has just written {found} of these traces; "
            "nothing was written: import again and they are skipped as duplicates",
            code="CONFLICT", rule="imported_meanwhile",
        )])  # fmt: skip


HASH_CHUNK = 500  # hashes a query asks for (SQLite takes a few hundred parameters at most)


def _dataset_hashes(
    *, organization: Organization, dataset_name: str, dataset: Dataset | None = None
) -> Iterator[str]:
    """The content hashes of the traces the dataset (else the named one) has (none if it
    is new), read a chunk at a time as the caller takes them."""
    found = (
        Trace.objects.filter(dataset=dataset)
        if dataset is not None
        else Trace.objects.filter(dataset__organization=organization, dataset__name=dataset_name)
    ).exclude(content_hash="")
    return found.values_list("content_hash", flat=True).iterator(chunk_size=HASH_CHUNK * 4)


def _labels_new(
    names: set[str], *, organization: Organization, dataset_name: str, dataset: Dataset | None
) -> int:
    """How many of `names` the dataset's vocabulary (else the named dataset's) lacks."""
    if len(names) <= NOTE_LABELS_MAX:
        return 0  # within the limit whatever the vocabulary has
    labels = (
        Label.objects.filter(dataset=dataset)
        if dataset is not None
        else Label.objects.filter(dataset__organization=organization, dataset__name=dataset_name)
    )
    known = 0
    pending = sorted(names)
    for start in range(0, len(pending), HASH_CHUNK):
        known += labels.filter(name__in=pending[start : start + HASH_CHUNK]).count()
    return len(names) - known


# After this many new blocks, PostgreSQL's statistics are looked at before the commit.
ANALYZE_AFTER_BLOCKS = 10_000
# ... and after this many new traces, those search reads after the commit (as autovacuum).
SEARCH_ANALYZE_AFTER_TRACES = 50


def _refresh_statistics(blocks: int) -> None:
    """Statistics that say the blocks table is far smaller than it now is make the
    planner read it whole where it would look a row up: in the checks of the keys still
    checked at the commit (its notes' blocks), and after it, in every statement until
    autovacuum's ANALYZE comes (up to a minute later): a delete of 100 blocks took 4 s,
    a seq scan each, after an import of 157,502 into an empty table. So once an import
    grows the blocks by a tenth (autovacuum's own threshold), their key columns and the
    traces' ids are analyzed, in the transaction, which sees its own rows; only those
    columns, because the payloads are what makes a full ANALYZE slow (0.8 s of a 100 MB
    import); and from a sample of a tenth of the usual size (STATISTICS_TARGET), because
    what matters until autovacuum's own ANALYZE (which the import's growth by a tenth
    asks for) is the table's size, not fine histograms (0.17 s -> 0.015 s there)."""
    if connection.vendor != "postgresql" or blocks < ANALYZE_AFTER_BLOCKS:
        return
    table = Block._meta.db_table
    with connection.cursor() as cursor:
        if not _grown_by_a_tenth(cursor, table, blocks):
            return
        cursor.execute("SELECT current_setting('default_statistics_target')")
        (target,) = cursor.fetchone()
        cursor.execute(
            "SELECT set_config('default_statistics_target', %s, true)", [str(STATISTICS_TARGET)]
        )
        cursor.execute(
            f"ANALYZE {table} (id, trace_id, parent_block_id), {Trace._meta.db_table} (id)"
        )
        cursor.execute("SELECT set_config('default_statistics_target', %s, true)", [target])


# The statistics target of an import's own ANALYZE (PostgreSQL's default: 100, a sample of
# 300 times as many rows).
STATISTICS_TARGET = 10


def _grown_by_a_tenth(cursor: Any, table: str, rows: int) -> bool:
    """Whether `rows` new rows are a tenth of what the table's statistics know of it, or
    more (autovacuum's own threshold for a new ANALYZE)."""
    cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
    (known,) = cursor.fetchone()
    return rows >= max(known, 0) / 10


def _refresh_search_statistics(traces: int) -> None:
    """A search right after an import reads the queued traces' blocks directly
    (traces/selectors/search.py), joining the queue to the dataset's traces as the
    statistics of both tables say: those taken while the tables were all but empty (before
    autovacuum's ANALYZE, up to a minute later) made the planner join them a row at a
    time, each row of one against all of the other (21 s for 4,222 traces queued, and
    more than 18 minutes before the queue was a query of its own). So once an import has
    grown the traces by a tenth (when autovacuum would look), the queue (a small table) and
    the traces' key columns are analyzed: a few milliseconds. After the commit, so that
    its lock is held for that long only."""
    if connection.vendor != "postgresql" or traces < SEARCH_ANALYZE_AFTER_TRACES:
        return
    table = Trace._meta.db_table
    with connection.cursor() as cursor:
        if not _grown_by_a_tenth(cursor, table, traces):
            return
        # Never waits for a lock: a VACUUM, an index being built or another import's
        # ANALYZE holding one would hold the upload's answer (its rows written already).
        cursor.execute(
            f"ANALYZE (SKIP_LOCKED) {SearchPending._meta.db_table}, "
            f"{table} (id, organization_id, dataset_id)"
        )


def trace_import(
    *,
    organization: Organization | None = None,
    dataset_name: str = "",
    files: Iterable[tuple[str, BinaryIO]],
    limits: Limits | None = None,
    progress: Callable[[int], None] | None = None,
    allow_duplicates: bool = False,
    dataset: Dataset | None = None,
) -> ImportResult:
    """Import every trace of `files` into the named dataset of `organization` (created if
    needed), or into `dataset`, an existing one (an upload to a dataset by id): that one
    must still be there when the import writes, else NotFound; an import never makes a
    new dataset under the name of one deleted meanwhile.

    `files` is read once, in order: it may open each file only when its turn comes.
    Raises ImportFailed with every problem found; then nothing is written. A trace the
    dataset already has (the same content hash), or that the upload has twice, is left
    out and listed in `skipped`, unless `allow_duplicates`.
    """
    started = time.perf_counter()
    limits = limits or Limits.for_import()
    if dataset is not None:
        organization, dataset_name = dataset.organization, dataset.name
    if organization is None:
        raise TypeError("trace_import needs an organization and a dataset name, or a dataset")
    dataset_name = dataset_name_check(dataset_name)
    problems = _Problems()
    formats: dict[str, str] = {}
    files_read: list[dict[str, Any]] = []
    spool = _Spool(
        hashes=_dataset_hashes(
            organization=organization, dataset_name=dataset_name, dataset=dataset
        ),
        allow_duplicates=allow_duplicates,
        name_taken=_dataset_has_name(
            organization=organization, dataset_name=dataset_name, dataset=dataset
        ),
    )
    try:
        for name, stream in files:
            if problems.full:
                break  # the later files are not read
            # Django's uploaded files split lines at a lone \r too; the file inside does not.
            stream = getattr(stream, "file", stream)
            spool.file += 1
            spool.file_names.append(name)
            spool.file_metadata.append({})
            before = (spool.traces.count, spool.block_count, len(spool.skipped))
            _import_file(
                name, stream, spool=spool, problems=problems, formats=formats,
                limits=limits, progress=progress,
            )  # fmt: skip
            files_read.append({
                "file": name, "format": formats.get(name, ""),
                "traces": spool.traces.count - before[0],
                "blocks": spool.block_count - before[1],
                "skipped": len(spool.skipped) - before[2],
            })  # fmt: skip
        new_labels = _labels_new(
            spool.note_labels, organization=organization, dataset_name=dataset_name,
            dataset=dataset,
        )  # fmt: skip
        if new_labels > NOTE_LABELS_MAX:
            problems.add(problem(
                {}, f"the traces' annotations name {new_labels} labels the dataset's "
                f"vocabulary lacks; an upload adds at most {NOTE_LABELS_MAX} to it",
                rule="labels",
            ))  # fmt: skip
        if problems.count:
            raise ImportFailed(problems.final())
        spool.flush_blocks()
        with keys_made_here(), transaction.atomic():
            organization_hold(organization=organization)
            if dataset is not None:
                dataset = dataset_lock(dataset=dataset)
            else:
                dataset, _ = dataset_get_or_create(organization=organization, name=dataset_name)
            _refuse_traces_written_meanwhile(dataset=dataset, hashes=spool.upload_hashes)
            spool.settle_metadata()
            spool.write(dataset=dataset, first_index=dataset_lock_next_index(dataset=dataset))
            _refresh_statistics(spool.block_count)
            written = spool.traces.count
            # robust: a failure (a timeout the database's role sets) is logged; the
            # import, committed, stands.
            transaction.on_commit(lambda: _refresh_search_statistics(written), robust=True)
            brought = spool.dataset_metadata
            first_giver = {}
            for n, own in enumerate(spool.file_metadata):
                for key in own:
                    first_giver.setdefault(key, spool.file_names[n])
            spool.metadata_kept += [
                {"key": key, "file": first_giver[key], "reason": SKIPPED_IN_DATASET}
                for key in metadata_kept(stored=dataset.metadata, brought=brought)
            ]
            dataset = dataset_metadata_add(dataset=dataset, metadata=brought)
    finally:
        spool.close()
    return ImportResult(
        dataset=dataset,
        traces=spool.traces.count,
        blocks=spool.block_count,
        part_peak_growth=spool.part_peak_growth,
        images=len(spool.image_shas),
        seconds=time.perf_counter() - started,
        formats=formats,
        skipped=spool.skipped,
        files=files_read,
        metadata_kept=spool.metadata_kept,
    )
