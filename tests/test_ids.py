from traces import ids


def test_ids_carry_their_prefix_and_a_fixed_width():
    for make, prefix in ((ids.dataset_id, "ds_"), (ids.trace_id, "tr_"), (ids.block_id, "tb_")):
        value = make()
        assert value.startswith(prefix) and len(value) == len(prefix) + 26


def test_ids_sort_in_creation_order_even_within_one_millisecond():
    made = [ids.block_id() for _ in range(20000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
