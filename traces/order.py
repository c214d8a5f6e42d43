"""The stitched order (spec/004's tree, DESIGN.md), computed when blocks are written.

Every block gets a place `(turn, act, step)`, stored in its row, so that a page reads
any part of a trace in stitched order with one indexed range query and never reads,
sorts or counts the whole trace:

- `turn`: the index of the row, i.e. of its MESSAGE among the trace's messages in
  creation order; a think, call or result has the turn of the message it hangs under.
  NULL for an orphan (a block whose parent is missing or of another sub type).
- `act`: 0 for the message; 1, 2 ... for the thinks and calls under it, in creation
  order; a result has the act of its call.
- `step`: 0 for a message or an act; for a result 1 when it has a `seq`, 2 when not, so
  that ordering by (turn, act, step, result_seq, created_at, id) puts results by seq,
  nulls last, then created_at, then id (spec/004) on every database.

Both write paths call `place_block`: the import (`stitched_places` over a trace's
drafts) and the blocks API (with `TraceOrder.from_trace`). `count_places` gives the
per-kind counts kept on the Trace row (`block_counts`).
"""

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from traces import kinds

ORPHANS = "ORPHAN"  # the key of the orphan count in Trace.block_counts


class Place(NamedTuple):
    """A tuple, not a frozen dataclass: an import makes two a block, and a frozen
    dataclass costs several times a tuple to make."""

    turn: int | None
    act: int = 0
    step: int = 0


ORPHAN = Place(None)


@dataclass
class TraceOrder:
    """What placing the next block needs to know about its trace: how many turns it has,
    and how many acts the turns that get new acts already have."""

    turns: int = 0
    acts: dict[int, int] = field(default_factory=dict)
    acts_of_turn: Callable[[int], int] | None = None  # acts a turn already has stored

    def next_act(self, turn: int) -> int:
        if turn not in self.acts:
            self.acts[turn] = self.acts_of_turn(turn) if self.acts_of_turn else 0
        self.acts[turn] += 1
        return self.acts[turn]


def _kind_depth(sub_type: str) -> int:
    depth, kind = 0, kinds.BY_SUB_TYPE[sub_type]
    while kind.parent is not None:
        depth, kind = depth + 1, kinds.BY_SUB_TYPE[kind.parent]
    return depth


# How far below a MESSAGE each kind hangs (0, 1 or 2), worked out once, not per block.
_DEPTH = {sub_type: _kind_depth(sub_type) for sub_type in kinds.SUB_TYPES}


def place_block(
    sub_type: str,
    result_seq: int | None,
    parent_sub_type: str | None,
    parent_place: Place | None,
    order: TraceOrder,
) -> Place:
    """The place of a new block, appended after every block `order` knows of."""
    kind = kinds.BY_SUB_TYPE[sub_type]
    if kind.parent is None:
        place = Place(order.turns)
        if order.acts_of_turn is not None:
            # A new turn has no acts stored: none to look up when its first one comes.
            order.acts[order.turns] = 0
        order.turns += 1
        return place
    turn = None if parent_place is None else parent_place.turn
    if turn is None or parent_sub_type != kind.parent:
        return ORPHAN
    if _DEPTH[sub_type] == 1:
        return Place(turn, order.next_act(turn))
    step = 2 if kind.by_seq and result_seq is None else 1
    return Place(turn, parent_place.act, step)


class Placer:
    """Places a new trace's blocks one at a time, in creation order, each given with the
    index of its parent among them: what an import does while it streams a trace. Keeps
    what a later block may need of each block in arrays (9 bytes a block), and the
    per-kind counts (`counts`, as count_places gives them)."""

    def __init__(self) -> None:
        self.order = TraceOrder()
        self._kinds = array("B")  # index in kinds.SUB_TYPES
        self._turns = array("i")  # -1: an orphan
        self._acts = array("i")
        self.counts = count_places((), ())

    def add(self, sub_type: str, parent: int | None, result_seq: int | None) -> Place:
        parent_sub_type = parent_place = None
        if parent is not None and 0 <= parent < len(self._kinds):
            parent_sub_type = kinds.SUB_TYPES[self._kinds[parent]]
            turn = self._turns[parent]
            parent_place = ORPHAN if turn < 0 else Place(turn, self._acts[parent])
        # Positional: an import places every block, and keywords cost a tenth more.
        place = place_block(sub_type, result_seq, parent_sub_type, parent_place, self.order)
        self._kinds.append(_KIND_INDEX[sub_type])
        turn = place.turn
        self._turns.append(-1 if turn is None else turn)
        self._acts.append(place.act)
        self.counts[ORPHANS if turn is None else sub_type] += 1
        return place


_KIND_INDEX = {sub_type: n for n, sub_type in enumerate(kinds.SUB_TYPES)}


def stitched_places(blocks: Sequence[tuple[str, int | None, int | None]]) -> list[Place]:
    """The places of a new trace's blocks, given in creation order as (sub_type, index
    of the parent among them or None, result_seq)."""
    placer = Placer()
    return [placer.add(sub_type, parent, seq) for sub_type, parent, seq in blocks]


def count_places(
    sub_types: Iterable[str], places: Iterable[Place], counts: dict[str, int] | None = None
) -> dict[str, int]:
    """Per-kind counts (orphans under ORPHANS) of these blocks, added to `counts`."""
    out = {**dict.fromkeys(kinds.SUB_TYPES, 0), ORPHANS: 0, **(counts or {})}
    for sub_type, place in zip(sub_types, places, strict=True):
        out[ORPHANS if place.turn is None else sub_type] += 1
    return out
