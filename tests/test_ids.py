from traces import ids


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
