"""An Invariant Explorer trace as its client pushes it (traces/invariant/services.py), for
the tests of notes anchored to text: the first trace of Explorer's own sample dataset
with its annotation, when ../shared/data is there, else a self-made one of its shape
(a user question, assistant text with a call, the tool's output, an answer)."""

import json
from pathlib import Path

from traces.invariant.services import Writer, explorer_traces_push
from traces.models import Organization, Trace

SAMPLE = Path(__file__).resolve().parents[3] / "shared/data/invariant-explorer/sample_data.jsonl"
SELF_MADE = {
    "messages": [
        {"role": "user", "content": "Who won two Nobel Prizes?\nAnswer in one line."},
        {
            "role": "assistant",
            "content": "Let me look it up.",
            "tool_calls": [{"type": "function", "id": "call_1", "function": {
                "name": "search", "arguments": {"query": "two Nobel Prizes"}}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"name": "Marie Curie"}'},
        {"role": "assistant", "content": "Marie Curie, born in Warsaw, Poland."},
    ],
    "annotations": [{"content": "the tool's answer", "address": "messages[2].content:L0"}],
}  # fmt: skip


def explorer_trace(org: Organization, *, real: bool = True) -> Trace:
    """The trace pushed into dataset `sample` of `org`, its annotations with it."""
    line = SELF_MADE
    if real and SAMPLE.exists():
        line = json.loads(SAMPLE.read_text().splitlines()[1])
    traces, _ = explorer_traces_push(
        organization=org, messages=[line["messages"]],
        annotations=[[{"content": a["content"], "address": a["address"]}
                      for a in line.get("annotations", [])]],
        metadata=None, dataset_name="sample", writer=Writer(),
    )  # fmt: skip
    return traces[0]
