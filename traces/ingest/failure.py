"""Failure attribution (Who&When's `mistake_step`): the trace's `metadata.failure.step` is
the index of the event that caused the failure; once the blocks have ids, the failure
names the block that event became (`failure.block`) and that block's metadata says
`failure: true`, so the page can mark it and a failure label can point at it.

Blocks are marked one at a time, as they are made and before they are spooled
(traces/services/imports.py): `failure_step` says which event to look for, and
`mark_failure` marks the first block of that event.

The import also tags each such trace with the label `mistake` of its dataset's vocabulary
(made if the dataset has none of that name), on the failure's block where it has one,
with the agent and the reason as comment (`failure_comment`): the failure is then found
by the dataset page's `label=` filter, its search and the export like any label."""

from typing import Any

from traces.ingest.drafts import BlockDraft

FAILURE_LABEL = "mistake"
FAILURE_LABEL_DESCRIPTION = (
    "the turn the benchmark names as the cause of the run's failure, and the agent at fault "
    "(tagged on import from the log's failure attribution, e.g. Who&When's mistake_step, "
    "mistake_agent and mistake_reason)"
)


def failure_of(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The failure attribution the metadata holds, if any."""
    failure = metadata.get("failure")
    return failure if isinstance(failure, dict) else None


def failure_comment(failure: dict[str, Any], most: int) -> str:
    """ "<agent>: <reason>" (either alone where the other is missing), at most `most`
    characters: a longer reason (or one a text column cannot keep) is not cut but named,
    as it stays whole in the trace's metadata."""
    agent, reason = failure.get("agent"), failure.get("reason")
    agent = agent.strip() if isinstance(agent, str) else ""
    reason = reason.strip() if isinstance(reason, str) else ""
    comment = ": ".join(part for part in (agent, reason) if part)
    if len(comment) <= most and "\x00" not in comment:
        return comment
    where = f"the reason ({len(reason)} characters) is in the trace's metadata, failure.reason"
    return f"{agent}: {where}" if agent and "\x00" not in agent else where


def failure_step(metadata: dict[str, Any]) -> int | None:
    """The event index `metadata.failure.step` names, if any."""
    failure = failure_of(metadata)
    if failure is None or not isinstance(failure.get("step"), int):
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
