"""Failure attribution (Who&When's `mistake_step`): the trace's `metadata.failure.step` is
the index of the event that caused the failure; once the blocks have ids, the failure
names the block that event became (`failure.block`) and that block's metadata says
`failure: true`, so the page can mark it and a failure label can point at it.

Blocks are marked one at a time, as they are made and before they are spooled
(traces/services/imports.py): `failure_step` says which event to look for, and
`mark_failure` marks the first block of that event."""

from typing import Any

from traces.ingest.drafts import BlockDraft


def failure_step(metadata: dict[str, Any]) -> int | None:
    """The event index `metadata.failure.step` names, if any."""
    failure = metadata.get("failure")
    if not isinstance(failure, dict) or not isinstance(failure.get("step"), int):
        return None
    return failure["step"]


def mark_failure(metadata: dict[str, Any], block: BlockDraft, block_id: str) -> bool:
    """Mark `block` (with id `block_id`) as the failure's if it is the first block of the
    failure's step: True then (the caller looks no further)."""
    step = failure_step(metadata)
    if step is None or block.metadata.get("event_index") != step:
        return False
    metadata["failure"] = {**metadata["failure"], "block": block_id}
    block.metadata["failure"] = True
    return True
