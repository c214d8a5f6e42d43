"""Failure attribution (Who&When's `mistake_step`): the trace's `metadata.failure.step` is
the index of the event that caused the failure; once the blocks have ids, the failure
names the block that event became (`failure.block`) and that block's metadata says
`failure: true`, so the page can mark it and a failure label can point at it."""

from typing import Any

from traces.ingest.drafts import ConvertedTrace


def mark_failure(metadata: dict[str, Any], converted: ConvertedTrace, block_ids: list[str]) -> None:
    failure = metadata.get("failure")
    if not isinstance(failure, dict) or not isinstance(failure.get("step"), int):
        return
    for n, block in enumerate(converted.blocks):
        if block.metadata.get("event_index") == failure["step"]:
            metadata["failure"] = {**failure, "block": block_ids[n]}
            block.metadata["failure"] = True
            return
