"""Annotations of traces and blocks, the two kinds there are and each written here:

- a reward (any JSON) in `extra`, the one mutable field of traces and blocks (DESIGN.md,
  Rules). Each write replaces `extra` as a whole and bumps `updated_at`; a trace's
  `reward` column follows its `extra.reward`, else its `metadata.reward`. A reward out of
  range is refused (traces.validation.check_reward).
- an `Annotation` row: a label of the dataset's own vocabulary (`Label`), a free comment,
  or both, on a trace or on one of its blocks. Labels and comments are one model, so that
  the pages, filters, export and API read one thing.
"""

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from traces import jsontext
from traces.addresses import AddressInvalid, address_parse
from traces.checks import check_json_depth, check_no_nul
from traces.errors import NotFound, TraceStoreError, ValidationFailed
from traces.models import Annotation, ApiKey, Block, Dataset, Label, Trace
from traces.selectors.anchors import anchored_notes
from traces.services.datasets import dataset_lock
from traces.validation import check_rewards, reward_of


def check_extra(extra: Any) -> dict[str, Any]:
    """`extra` (or a merge patch of it) as it may be written: a JSON object whose reward,
    if a number, is in range."""
    if not isinstance(extra, dict):
        raise ValidationFailed(
            f"extra must be a JSON object, not a JSON {type(extra).__name__}",
            {"field": "extra", "rule": "json_object"},
        )
    check_json_depth(extra, "extra")
    try:
        jsontext.dumps(extra)
    except TypeError as exc:
        raise ValidationFailed(
            f"extra cannot be kept as JSON: {exc}", {"field": "extra", "rule": "json"}
        ) from None
    check_rewards(extra, field_name="extra")
    return extra


def trace_reward(*, extra: Any, metadata: Any) -> float | None:
    """The reward column's value: a numeric (or boolean) `extra.reward` wins over
    `metadata.reward`. A number out of range, stored before the rule, counts as none."""
    for source in (extra, metadata):
        if isinstance(source, dict) and isinstance(source.get("reward"), int | float):
            return reward_of(source["reward"])
    return None


def trace_extra_update(*, trace: Trace, extra: dict[str, Any]) -> Trace:
    """Replace the trace's `extra`; recompute its reward from the metadata as stored now
    (locked: a metadata patch in between is not answered with a stale reward); bump
    `updated_at`."""
    check_extra(extra)
    with transaction.atomic():
        locked = Trace.objects.select_for_update().get(pk=trace.pk)
        locked.extra = extra
        locked.reward = trace_reward(extra=extra, metadata=locked.metadata)
        locked.save(update_fields=["extra", "reward", "updated_at"])  # auto_now bumps it
    trace.extra, trace.reward, trace.updated_at = locked.extra, locked.reward, locked.updated_at
    return trace


def block_extra_update(*, block: Block, extra: dict[str, Any]) -> Block:
    """Replace the block's `extra`; bump its `updated_at` (and the trace's)."""
    block.extra = check_extra(extra)
    block.updated_at = timezone.now()
    with transaction.atomic():
        block.save(update_fields=["extra", "updated_at"])
        Trace.objects.filter(pk=block.trace_id).update(updated_at=block.updated_at)
    return block


def block_extra_patch(*, block: Block, patch: dict[str, Any]) -> Block:
    """Merge-patch (RFC 7386) the block's `extra` under a row lock, so that two annotators
    patching at once both keep their change."""
    from traces.validation import merge_patch

    check_extra(patch)
    with transaction.atomic():
        locked = Block.objects.select_for_update().get(pk=block.pk)
        return block_extra_update(block=locked, extra=merge_patch(locked.extra, patch))


# --- Labels and comments ----------------------------------------------------------------

LABEL_NAME_MAX = 100
LABEL_DESCRIPTION_MAX = 2000
COMMENT_MAX = 10_000
ADDRESS_MAX = 1000


class LabelNameTaken(TraceStoreError, code="DUPLICATE_LABEL", http_status=409):
    """The dataset's vocabulary has a label of that name already."""


def _check_text(value: Any, field_name: str, most: int, *, required: bool) -> str:
    if not isinstance(value, str):
        raise ValidationFailed(
            f"{field_name} must be a string", {"field": field_name, "rule": "type"}
        )
    value = value.strip()
    if required and not value:
        raise ValidationFailed(
            f"{field_name} must not be empty", {"field": field_name, "rule": "required"}
        )
    if len(value) > most:
        raise ValidationFailed(
            f"{field_name} has at most {most} characters, not {len(value)}",
            {"field": field_name, "rule": "max_length", "limit": most, "actual": len(value)},
        )
    return check_no_nul(value, field_name)


def label_name_check(name: Any) -> str:
    """A label's name: one line of at most LABEL_NAME_MAX characters, no control
    character (it is shown in lists and used in filters)."""
    name = _check_text(name, "name", LABEL_NAME_MAX, required=True)
    if any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in name):
        raise ValidationFailed(
            "a label name is one line without control characters",
            {"field": "name", "rule": "no_control_characters"},
        )
    return name


def label_create(*, dataset: Dataset, name: Any, description: Any = "") -> Label:
    """Add a label to the dataset's vocabulary; a name it has already is 409. The
    dataset's row is locked first, so that a dataset deleted meanwhile is NotFound (its
    foreign key failing at commit was taken for a duplicate name)."""
    name = label_name_check(name)
    description = _check_text(description, "description", LABEL_DESCRIPTION_MAX, required=False)
    try:
        with transaction.atomic():
            dataset_lock(dataset=dataset)
            return Label.objects.create(dataset=dataset, name=name, description=description)
    except IntegrityError:
        raise LabelNameTaken(
            f"the dataset has a label named {name!r} already",
            {"field": "name", "rule": "unique", "name": name},
        ) from None


def label_delete(*, label: Label) -> int:
    """Remove the label from its vocabulary, with every annotation that uses it (a comment
    given with it goes too). Returns how many annotations went.

    The label's row is locked first, as `annotation_create` locks it before tagging with
    it (one lock order): a tag being made ends before the delete looks for the label's
    annotations, and goes with it; one made later finds no label (422). Without the lock,
    either side's commit failed on the foreign key (a 500 on PostgreSQL). A label deleted
    meanwhile is NotFound."""
    with transaction.atomic():
        if not _lock_label(label):
            raise NotFound(f"no label {label.pk!r}", {"label_id": label.pk})
        count = Annotation.objects.filter(label=label).count()
        label.delete()
    return count


def _lock_label(label: Label) -> bool:
    """Lock the label's row for the current transaction; False if it is gone."""
    return Label.objects.select_for_update().filter(pk=label.pk).exists()


def _label_of(trace: Trace, label: Any) -> Label | None:
    """The trace's dataset's label named (or with the id) `label`; None for no label."""
    if label is None or label == "":
        return None
    if not isinstance(label, str):
        raise ValidationFailed("label must be a string", {"field": "label", "rule": "type"})
    if trace.dataset_id is None:
        raise ValidationFailed(
            "this trace is in no dataset, so it has no vocabulary of labels; add a comment",
            {"field": "label", "rule": "no_vocabulary"},
        )
    found = (
        Label.objects.filter(dataset_id=trace.dataset_id, name=label.strip()).first()
        or Label.objects.filter(dataset_id=trace.dataset_id, id=label).first()
        if "\x00" not in label
        else None
    )
    if found is None:
        names = list(
            Label.objects.filter(dataset_id=trace.dataset_id).order_by("name")
            .values_list("name", flat=True)[:50]
        )  # fmt: skip
        raise ValidationFailed(
            f"the dataset has no label {label[:100]!r}; add it to the vocabulary first",
            {"field": "label", "rule": "in_vocabulary", "known": names},
        )
    return found


def _block_of(trace: Trace, block_id: Any) -> Block | None:
    if block_id is None or block_id == "":
        return None
    if not isinstance(block_id, str) or "\x00" in block_id:
        raise ValidationFailed(
            "block_id must be a block's id", {"field": "block_id", "rule": "type"}
        )
    found = Block.objects.filter(trace=trace, id=block_id).only("id", "trace_id").first()
    if found is None:
        raise ValidationFailed(
            f"the trace has no block {block_id[:100]!r}",
            {"field": "block_id", "rule": "in_trace", "block_id": block_id[:100]},
        )
    return found


def comment_check(comment: Any) -> str:
    """A comment as an annotation keeps it (none: empty); ValidationFailed otherwise."""
    return _check_text("" if comment is None else comment, "comment", COMMENT_MAX, required=False)


def address_text_check(address: Any) -> str:
    """An Explorer address as an annotation keeps it: a string of at most ADDRESS_MAX
    characters without NUL (its grammar is `_address_check`'s)."""
    if not isinstance(address, str) or len(address) > ADDRESS_MAX or "\x00" in address:
        raise ValidationFailed(
            f"address: a string of at most {ADDRESS_MAX} characters",
            {"field": "address", "rule": "type"},
        )
    return address


def _address_check(trace: Trace, address: Any) -> tuple[str, Block | None]:
    """The address as it is kept, and the block it lands on now (None: nowhere)."""
    address_text_check(address)
    try:
        address_parse(address)
    except AddressInvalid as exc:
        raise ValidationFailed(
            f"address {address[:100]!r}: {exc}", {"field": "address", "rule": "grammar"}
        ) from None
    probe = Annotation(trace=trace, address=address)
    place = anchored_notes(annotations=[probe], trace=trace)[0].place
    found = Block.objects.filter(pk=place.block).first() if place.block else None
    return address, found


def annotation_create(
    *,
    trace: Trace,
    label: Any = None,
    comment: Any = "",
    block_id: Any = None,
    author: Any = None,
    api_key: ApiKey | None = None,
    address: Any = None,
    extra_metadata: Any = None,
) -> Annotation:
    """Tag the trace, or its block `block_id`, with a label of its dataset's vocabulary
    (by name or id) and/or a free comment; at least one of them. An Explorer `address`
    (traces/addresses.py) anchors it to text: it must parse (422 saying where it breaks),
    may point nowhere (the page lists it unplaced), and gives the block when none is."""
    comment = comment_check(comment)
    found_label = _label_of(trace, label)
    if found_label is None and not comment:
        raise ValidationFailed(
            "give a label, a comment or both", {"field": "label", "rule": "label_or_comment"}
        )
    block = _block_of(trace, block_id)
    if address is not None:
        address, anchored_block = _address_check(trace, address)
        block = block or anchored_block
    if extra_metadata is not None:
        check_json_depth(extra_metadata, "extra_metadata")
    with transaction.atomic():
        # The label's row is locked until the tag is written (label_delete locks it too):
        # a label deleted meanwhile is not used.
        if found_label is not None and not _lock_label(found_label):
            raise ValidationFailed(
                f"the dataset has no label {found_label.name[:100]!r} any more; it was deleted",
                {"field": "label", "rule": "in_vocabulary"},
            )
        return Annotation.objects.create(
            trace=trace,
            block=block,
            label=found_label,
            comment=comment,
            author=author if author is not None and author.is_authenticated else None,
            api_key=api_key,
            address=address,
            extra_metadata=extra_metadata,
        )


def annotation_delete(*, annotation: Annotation) -> None:
    Annotation.objects.filter(pk=annotation.pk).delete()
