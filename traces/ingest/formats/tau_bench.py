"""tau-bench (v1) results: a JSON array of runs `{task_id, reward, info, traj, trial}`,
written by tau_bench/run.py. One trace per run: `traj` is the OpenAI chat (tool calls
with ids, outputs linked by `tool_call_id`); every other key goes to the metadata, the
reward is `reward`. A run that crashed before its first turn (`traj: []`, the error in
`info`) is kept, without blocks. Read one run at a time.
"""

from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from traces.ingest.formats.common import number, run_trace
from traces.ingest.types import PARSE_BUFFER, Adapter, DatasetMetadata, FormatProblem, Item, Sniff

RUN_KEYS = frozenset({"task_id", "reward", "traj"})


def _trace(run: Any, index: int) -> Item:
    where = {"trace": index}
    if not isinstance(run, dict) or not isinstance(run.get("traj"), list):
        return FormatProblem("a tau-bench run needs a `traj` array", {**where, "field": "traj"})
    metadata = {k: v for k, v in run.items() if k != "traj"}
    draft = run_trace(
        where,
        run["traj"],
        metadata,
        reward=number(run.get("reward")),
        task_id=run.get("task_id"),
        run=f"trial {run.get('trial', 0)}",
    )
    draft.keep_empty = True
    return draft


class TauBench(Adapter):
    def detect(self, sniff: Sniff) -> bool:
        return sniff.first_char == "[" and RUN_KEYS <= sniff.item_keys

    def read(self, stream: BinaryIO) -> Iterator[Item]:
        yield DatasetMetadata({"benchmark": "tau-bench"})
        try:
            for index, run in enumerate(
                ijson.items(stream, "item", use_float=True, buf_size=PARSE_BUFFER)
            ):
                draft, run = _trace(run, index), None
                yield draft
                draft = None
        except ijson.JSONError as exc:
            yield FormatProblem(f"invalid JSON: {exc}", {}, rule="json")


FORMAT = TauBench(
    name="tau-bench",
    recognised_by="a JSON array of runs with `task_id`, `reward` and `traj` (tau-bench v1 results)",
)
