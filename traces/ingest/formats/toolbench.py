"""ToolBench answers: `{win, tree, forward_args, compare_candidates, answer_generation}`.

One trace per file. `answer_generation.train_messages` holds one chat per model call,
each a prefix of the search path at that call (DFS may drop an earlier "diversity"
user turn, so they are not strict prefixes): the longest, the latest of equals, is the
run. Legacy `function_call` + role `function`, no ids. Reward: `win` as 1/0. A failed run
(`valid_data: false`) has no `train_messages`: its run is read from the search `tree`.
Every other value is kept in the trace's metadata: `answer_generation`'s (query, final
answer, tool definitions `function`...) and the file's (`tree`, the whole search with the
branches it went back from, `compare_candidates`, `forward_args`, `win`). The shorter
chats of `train_messages` are the prompts of the earlier model calls, prefixes of the
search path that `tree` holds: only their count is kept.
"""

from collections.abc import Iterator
from typing import Any

from traces.ingest.formats.common import WholeJsonFile, kept, number
from traces.ingest.types import DatasetMetadata, FormatProblem, Item, Sniff, TraceDraft

NODE_KEPT = ("node_type", "depth", "is_terminal", "pruned", "finished", "observation_code")


def tree_events(tree: dict[str, Any]) -> list[Any]:
    """The events of a DFS search tree (`tree.tree`), in the order it was walked: each
    `Thought` an assistant turn, each `Action` (the tool's name) with its `Action Input`
    child (the arguments) a call, the input's `observation` its output. A branch the
    search went back from is followed by the next one, as the run went."""
    root = tree.get("tree", tree)
    events: list[Any] = []
    stack = [root] if isinstance(root, dict) else []
    calls = 0
    while stack:
        node = stack.pop()
        kind, text = node.get("node_type"), node.get("description")
        node_facts = {k: node[k] for k in NODE_KEPT if k in node}
        children = [c for c in node.get("children") or [] if isinstance(c, dict)]
        if kind == "Thought" and isinstance(text, str) and text:
            events.append({"role": "assistant", "content": text, "toolbench_node": node_facts})
        elif kind == "Action" and isinstance(text, str) and text:
            inputs = [c for c in children if c.get("node_type") == "Action Input"]
            arguments = inputs[0].get("description", "") if inputs else ""
            calls += 1
            call_id = f"tree_call_{calls}"
            call = {"id": call_id, "function": {"name": text, "arguments": arguments}}
            events.append(
                {"role": "assistant", "content": None, "tool_calls": [call],
                 "toolbench_node": node_facts}
            )  # fmt: skip
            if inputs and "observation" in inputs[0]:
                observed = inputs[0]
                events.append(
                    {"role": "tool", "tool_call_id": call_id,
                     "content": observed["observation"],
                     "toolbench_node": {k: observed[k] for k in NODE_KEPT if k in observed}}
                )  # fmt: skip
            if inputs:
                children = [c for c in children if c is not inputs[0]] + list(
                    inputs[0].get("children") or []
                )
        stack.extend(reversed(children))
    return events


class ToolBench(WholeJsonFile):
    def detect(self, sniff: Sniff) -> bool:
        return sniff.first_char == "{" and "answer_generation" in sniff.top_keys

    def read_value(self, data: Any) -> Iterator[Item]:
        where = {"trace": 0}
        answer = data.get("answer_generation") if isinstance(data, dict) else None
        if not isinstance(answer, dict):
            yield FormatProblem("`answer_generation` must be an object", where)
            return
        yield DatasetMetadata({"benchmark": "ToolBench"})
        chats = answer.get("train_messages")
        field = {**where, "field": "answer_generation.train_messages"}
        if chats is None and isinstance(data.get("tree"), dict):
            # A failed run (`valid_data: false`) has no train_messages: only its tree.
            chats = [tree_events(data["tree"])]
        if not isinstance(chats, list) or not all(isinstance(c, list) for c in chats):
            yield FormatProblem("`train_messages` must be an array of message arrays", field)
            return
        if not any(chats):
            yield FormatProblem("`train_messages` holds no message: nothing to import", field)
            return
        longest = max(range(len(chats)), key=lambda i: (len(chats[i]), i))
        metadata: dict[str, Any] = kept(
            {k: v for k, v in answer.items() if k != "train_messages"}
            | {k: v for k, v in data.items() if k != "answer_generation"}
        )
        metadata["train_messages_count"] = len(chats)
        tools = answer.get("function")
        if isinstance(tools, list):
            metadata["tools"] = [t.get("name") for t in tools if isinstance(t, dict)]
        if "win" in data:
            if number(data["win"]) is not None:
                metadata["reward"] = number(data["win"])
        query = answer.get("query")
        name = " ".join(query.split()) if isinstance(query, str) else ""
        yield TraceDraft(location=where, events=chats[longest], metadata=metadata, name=name)


FORMAT = ToolBench(
    name="toolbench",
    recognised_by="an object with `answer_generation` (ToolBench answers; failed runs from `tree`)",
)
