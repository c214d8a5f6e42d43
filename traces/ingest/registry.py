"""Every input format, in the order detection tries them: specific shapes first.

Adding a format: one module in traces/ingest/formats/ with a FORMAT, one line here,
one test file in tests/ingest/formats/.
"""

from traces.ingest.formats import (
    atif,
    inspect_ai,
    inspect_eval,
    json_array,
    json_object,
    jsonl,
    mini_swe_agent,
    openhands,
    swe_agent,
    tau2,
    tau_bench,
    toolbench,
    who_and_when,
)
from traces.ingest.types import KNOWN, Format

FORMATS: list[Format] = [
    tau2.FORMAT,
    swe_agent.FORMAT,
    toolbench.FORMAT,
    inspect_ai.FORMAT,
    inspect_eval.FORMAT,
    who_and_when.FORMAT,
    mini_swe_agent.FORMAT,
    atif.FORMAT,
    json_object.FORMAT,
    jsonl.FORMAT,
    tau_bench.FORMAT,
    openhands.FORMAT,
    json_array.FORMAT,
]

KNOWN.extend(FORMATS)
