"""What the API answers for every kind of block, read from the table of kinds
(traces/kinds.py), so that an exact answer written in a test names only the kinds it is
about and a new sub type does not change it."""

from typing import Any

from traces import kinds
from traces.order import ORPHANS


def block_counts(**given: int) -> dict[str, int]:
    """Trace.block_counts: `given`, every other kind (and the orphans) at 0."""
    unknown = set(given) - {kind.sub_type for kind in kinds.KINDS} - {ORPHANS}
    assert not unknown, unknown
    return {**{kind.sub_type: 0 for kind in kinds.KINDS}, ORPHANS: 0, **given}


def no_orphans() -> dict[str, list[Any]]:
    """The stitched tree's `orphans` when there are none: an empty list a kind."""
    return {kind.orphans: [] for kind in kinds.KINDS if kind.orphans}
