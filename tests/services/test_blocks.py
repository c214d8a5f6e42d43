"""traces/services/blocks.py: appends through the API, one block or a batch."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Block
from traces.services.blocks import BlockInput, blocks_create_batch
from traces.services.traces import trace_create


def turns(count: int) -> list[BlockInput]:
    """`count` turns of a message and a call under it, parents named by ref."""
    blocks = []
    for n in range(count):
        blocks.append(BlockInput(
            sub_type="MESSAGE", payload={"role": "assistant", "content": f"turn {n}"},
            ref=f"m{n}",
        ))  # fmt: skip
        blocks.append(BlockInput(
            sub_type="TOOL_CALL", parent_block_id=f"m{n}",
            payload={"call_id": f"c{n}", "name": "look", "arguments": {}},
        ))  # fmt: skip
    return blocks


def queries_of_a_batch(org, count: int) -> int:
    trace = trace_create(organization=org, dataset=None, name=f"t{count}", metadata={})
    with CaptureQueriesContext(connection) as captured:
        blocks_create_batch(trace=trace, blocks=turns(count))
    return len(captured.captured_queries)


def test_a_batch_looks_up_no_acts_of_the_turns_it_makes(org):
    """The acts of a turn the batch made are known (none): a query for each turn's first
    call made a 1,000-block batch of 500 turns cost 500 queries more."""
    assert queries_of_a_batch(org, 2) == queries_of_a_batch(org, 20)
    acts = list(Block.objects.filter(sub_type="TOOL_CALL").values_list("act", flat=True))
    assert acts == [1] * 22
