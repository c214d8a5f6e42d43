import time

from traces import ids
from traces.forked import Forked


def test_ids_carry_their_prefix_and_a_fixed_width():
    for make, prefix in ((ids.dataset_id, "ds_"), (ids.trace_id, "tr_"), (ids.block_id, "tb_")):
        value = make()
        assert value.startswith(prefix) and len(value) == len(prefix) + 26


def test_ids_sort_in_creation_order_even_within_one_millisecond():
    made = [ids.block_id() for _ in range(20000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_the_encoding_is_crockford_base32_of_130_bits_most_significant_first():
    import random

    from traces.ids import _ALPHABET, _encode

    def slow(value):
        return "".join(_ALPHABET[(value >> (5 * i)) & 31] for i in reversed(range(26)))

    rng = random.Random(7)
    for value in [0, 1, 2**128 - 1, *(rng.getrandbits(128) for _ in range(1000))]:
        assert _encode(value) == slow(value)


def test_ids_counting_up_are_encoded_as_each_alone_across_their_shared_head():
    import random

    from traces.ids import _encode, _encode_next, _Head

    rng = random.Random(11)
    starts = [0, (1 << 20) - 3, (5 << 100) + (1 << 40) - 2]
    starts += [rng.getrandbits(128) for _ in range(50)]
    head = _Head()
    for start in starts:
        for value in range(start, start + 8):
            assert _encode_next(value, head) == _encode(value)
    for value in (rng.getrandbits(128) for _ in range(1000)):  # jumping about, too
        assert _encode_next(value, head) == _encode(value)


def test_a_forked_process_never_makes_its_parents_next_ids(monkeypatch):
    # Both in the millisecond of the fork: the parent counts on from its last id.
    monkeypatch.setattr(ids, "_last_ms", time.time_ns() // 1_000_000 + 60_000)
    child = Forked(lambda: [ids.block_id() for _ in range(100)])
    mine = [ids.block_id() for _ in range(100)]
    assert not set(mine) & set(child.result())


def test_pinned_parts_count_in_ranges_that_sort_in_part_order():
    ms = ids.pin_ms()
    made = {}
    for part in (2, 0, 1):
        ids.pin(ms=ms, part=part)
        made[part] = [ids.block_id() for _ in range(3)]
        ids.unpin(parts=3)
    after = ids.block_id()
    assert made[0] + made[1] + made[2] + [after] == sorted([*made[0], *made[1], *made[2], after])


def test_a_pin_is_its_threads_own():
    """A threaded server imports two uploads at once: the one that unpinned first moved
    the other's counter into the range of one of its parts, whose reader then made the
    same ids, and the upload failed on the trace's key (researcher review). Each thread
    counts in its own pin; ids made unpinned meanwhile are of a later millisecond."""
    import threading

    ms = ids.pin_ms()
    assert ids.pin_ms() > ms  # an import's millisecond is its own
    ids.pin(ms=ms, part=0)
    try:
        first = [ids.block_id() for _ in range(3)]
        other: list[str] = []

        def another_import() -> None:
            ids.pin(ms=ms, part=2)
            other.append(ids.block_id())
            ids.unpin(parts=2)  # fewer parts than this thread's import
            other.append(ids.block_id())  # unpinned: the clock's

        thread = threading.Thread(target=another_import)
        thread.start()
        thread.join()
        second = [ids.block_id() for _ in range(3)]
    finally:
        ids.unpin(parts=3)
    mine = first + second
    assert mine == sorted(mine) and len(set(mine)) == 6
    # Still in part 0's range, next to each other: not moved above the other's parts.
    counters = [_counter(made) for made in mine]
    assert counters == list(range(1, 7))
    assert other[0] not in mine and _counter(other[0]) == 2 * ids.PART_SPAN + 1
    assert other[1] > max(mine)  # later than the pinned millisecond
    assert ids.block_id() > other[1]


def _counter(made: str) -> int:
    """The 80 bits that count up within a millisecond, read back from an id."""
    from traces.ids import _ALPHABET

    value = 0
    for char in made.split("_", 1)[1]:
        value = value * 32 + _ALPHABET.index(char)
    return value & ((1 << 80) - 1)
