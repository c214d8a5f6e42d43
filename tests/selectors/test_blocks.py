"""traces/selectors/blocks.py: one block dictionary, whichever way a block is read."""

import pytest

from traces.models import Block
from traces.selectors.blocks import (
    BLOCK_FIELDS,
    block_of,
    trace_blocks_from,
    trace_blocks_page,
    trace_tree_get,
)
from traces.selectors.exports import trace_blocks_export
from traces.services.blocks import BlockInput, block_create, blocks_create_batch
from traces.services.traces import trace_create

pytestmark = pytest.mark.django_db


def _message_and_think(org, name: str):
    """A trace of a user message (with raw and extra) and a think under it."""
    trace = trace_create(organization=org, dataset=None, name=name, metadata={})
    written = block_create(
        trace=trace,
        block=BlockInput("MESSAGE", {"role": "user", "content": "hi"}, raw={"r": 1},
                         extra={"reward": 1}),
    )  # fmt: skip
    [batched] = blocks_create_batch(
        trace=trace, blocks=[BlockInput("THINK", {"text": "hm"}, None, written["id"])]
    )
    return trace, written, batched


def test_a_block_reads_the_same_written_listed_stitched_fetched_and_exported(org):
    trace, written, batched = _message_and_think(org, "one")
    assert list(written) == list(batched) == list(BLOCK_FIELDS)
    fetched = block_of(Block.objects.get(pk=written["id"]))
    [listed, _], _ = trace_blocks_page(trace=trace, cursor=None, limit=10, decode=True)
    [stitched] = trace_tree_get(trace=trace, decode=True)["messages"]
    assert stitched.pop("children")[0]["id"] == batched["id"]
    assert written == fetched == listed == stitched
    [exported, _] = trace_blocks_export(trace=trace)
    assert exported == {
        **{k: v for k, v in written.items() if k != "trace_id"},
        "created_at": written["created_at"].isoformat(),
        "updated_at": written["updated_at"].isoformat(),
    }


def test_the_trace_pages_read_gives_the_payload_only_of_the_blocks_it_draws(org):
    trace, message, _ = _message_and_think(org, "page")
    Block.objects.filter(pk=message["id"]).update(rendered="kept", metadata={"m": 1})
    nodes = [
        node
        for node, _place in trace_blocks_from(
            trace=trace, decode="lazy", drawn=lambda node: node["rendered"] is None
        )
    ]
    kept, think = nodes
    assert kept["rendered"] == "kept" and "payload" not in kept
    assert kept["metadata"].decode() == {"m": 1} and kept["extra"].decode() == {"reward": 1}
    assert "raw" not in kept and "created_at" not in kept
    assert think["rendered"] is None and think["payload"].decode() == {"text": "hm"}
