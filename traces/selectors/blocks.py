"""Reading a trace's blocks: flat, and stitched into spec/004's tree.

Rows are read in one query with their JSON columns as text; the API embeds that
text as it is (orjson.Fragment), so a 10,000-block trace is never decoded and
encoded again. Pages ask for each field as StoredJson (decode="lazy"): the text, decoded
only for the blocks a page shows, and only while it may (explorer/render/effort.py).
"""

from collections.abc import Callable, Iterable
from typing import Any

import orjson
from django.db.models import F, TextField
from django.db.models.expressions import ExpressionWrapper

from traces import kinds
from traces.models import Block, Organization, Trace
from traces.selectors import first_or_not_found

# A block as the API, the export and the pages show it (spec/004's fields, in its order),
# and the model's names for them.
BLOCK_FIELDS = (
    "id", "trace_id", "block_type", "sub_type", "parent_block_id", "payload", "metadata",
    "raw", "extra", "created_at", "updated_at",
)  # fmt: skip
BLOCK_MODEL_FIELDS = (*BLOCK_FIELDS[:4], "parent_id", *BLOCK_FIELDS[5:])


def block_dict(values: Iterable[Any]) -> dict[str, Any]:
    """The block whose BLOCK_FIELDS are `values`, in that order, as a dictionary."""
    return dict(zip(BLOCK_FIELDS, values, strict=True))


def block_of(block: Block) -> dict[str, Any]:
    return block_dict(getattr(block, name) for name in BLOCK_MODEL_FIELDS)


_TEXT_COLUMNS = ("payload", "metadata", "raw", "extra")
# The shown fields, then what the tree is built from: the parent, the kind, the order.
_ID, _SUB_TYPE, _PARENT, _CREATED, _SEQ = 0, 3, 4, 9, 11


def _rows(trace: Trace) -> list[tuple]:
    text = {
        f"{name}_text": ExpressionWrapper(F(name), output_field=TextField())
        for name in _TEXT_COLUMNS
    }
    return list(
        Block.objects.filter(trace=trace)
        .annotate(**text)
        .order_by("created_at", "id")
        .values_list(*BLOCK_MODEL_FIELDS[:5], *text, *BLOCK_MODEL_FIELDS[9:], "result_seq")
    )


class StoredJson:
    """A JSON column as stored (its compact text), decoded on demand: decoding allocates
    (up to ~0.4 µs a character), so a page decodes only what it shows."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def decode(self) -> Any:
        return orjson.loads(self.text)


def _node_maker(decode: bool | str) -> Callable[[tuple], dict[str, Any]]:
    def json_value(text: str | None) -> Any:
        if text is None:
            return None
        if decode == "lazy":
            return StoredJson(text)
        return orjson.loads(text) if decode else orjson.Fragment(text)

    def make(row: tuple) -> dict[str, Any]:
        return block_dict((*row[:5], *map(json_value, row[5:9]), *row[9:11]))

    return make


def _seq_order(row: tuple) -> tuple:
    """spec/004: results by seq, nulls last, then created_at, then id."""
    seq = row[_SEQ]
    return (seq is None, 0 if seq is None else seq, row[_CREATED], row[_ID])


def trace_tree_get(*, trace: Trace, decode: bool | str = False) -> dict[str, Any]:
    """spec/004's stitched tree: message -> (think, tool_call -> results), plus orphans.
    JSON fields as orjson.Fragment (the API), decoded (`decode=True`) or StoredJson
    (`decode="lazy"`, the pages).

    Each block hangs under its parent when the parent is of the sub type its kind allows
    (traces/kinds.py); a block whose parent is missing or of another sub type is an
    orphan, listed under its kind's `orphans` key."""
    rows = _rows(trace)
    make = _node_maker(decode)
    by_id = {row[_ID]: row for row in rows}
    children: dict[str, list[tuple]] = {}
    for row in rows:
        if row[_PARENT] is not None:
            children.setdefault(row[_PARENT], []).append(row)

    # sub type -> (the sub types that hang under it, whether they go by seq)
    under = {
        kind.sub_type: (
            {child.sub_type for child in kinds.children_of(kind.sub_type)},
            any(child.by_seq for child in kinds.children_of(kind.sub_type)),
        )
        for kind in kinds.KINDS
    }

    def node(row: tuple) -> dict[str, Any]:
        made = make(row)
        allowed, by_seq = under[row[_SUB_TYPE]]
        if allowed:
            kids = [r for r in children.get(row[_ID], []) if r[_SUB_TYPE] in allowed]
            if by_seq:
                kids.sort(key=_seq_order)
            made["children"] = [node(kid) for kid in kids]
        return made

    roots: list[dict[str, Any]] = []
    orphans: dict[str, list[dict[str, Any]]] = {k.orphans: [] for k in kinds.KINDS if k.parent}
    for row in rows:
        kind = kinds.kind_of(row[_SUB_TYPE])
        if kind is None:
            continue
        if kind.parent is None:
            roots.append(node(row))
            continue
        parent = by_id.get(row[_PARENT])
        if parent is None or parent[_SUB_TYPE] != kind.parent:
            orphans[kind.orphans].append(make(row))
    return {"trace_id": trace.pk, "messages": roots, "orphans": orphans}


def _flatten(nodes: list[dict[str, Any]], out: list[dict[str, Any]]) -> None:
    for node in nodes:
        kids = node.pop("children", [])
        out.append(node)
        _flatten(kids, out)


def trace_blocks_flat(*, trace: Trace, decode: bool = False) -> list[dict[str, Any]]:
    """Every block in stitched order: each message, then its thinks and calls, each call
    followed by its results; orphans last."""
    tree = trace_tree_get(trace=trace, decode=decode)
    out: list[dict[str, Any]] = []
    _flatten(tree["messages"], out)
    for orphans in tree["orphans"].values():
        out.extend(orphans)
    return out


def block_get(*, trace: Trace, block_id: str) -> Block:
    rows = Block.objects.filter(trace=trace, id=block_id)
    return first_or_not_found(rows, "block", "block_id", block_id)


def block_get_in_org(*, organization: Organization, block_id: str) -> Block:
    rows = Block.objects.select_related("trace__dataset")
    rows = rows.filter(trace__organization=organization, id=block_id)
    return first_or_not_found(rows, "block", "block_id", block_id)
