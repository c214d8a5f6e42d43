"""Many clients pushing into one new dataset at once (2.1): every push succeeds, all land in
one dataset, and the indices are exactly 0..N-1. Live server, a thread per request, each
with its own database connection: SQLite serializes the writes, PostgreSQL races them."""

import pytest

from tests.invariant.conftest import SDK_TIMEOUT_MS
from tests.threads import run_together
from traces.models import Dataset, Trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PUSHES = 12


def test_concurrent_pushes_to_a_new_dataset_get_gapless_indices(live_server, owner_key):
    from invariant_sdk.client import Client

    def push(n):
        client = Client(api_url=live_server.url, api_key=owner_key, timeout_ms=SDK_TIMEOUT_MS)
        try:
            events = [{"role": "user", "content": f"push {n}"}]
            return client.create_request_and_push_trace(messages=[events], dataset="race").id[0]
        finally:
            client.session.close()

    outcomes = run_together([lambda n=n: push(n) for n in range(PUSHES)])
    assert all(isinstance(o, str) for o in outcomes), outcomes
    (dataset,) = Dataset.objects.filter(name="race")
    indices = sorted(Trace.objects.filter(dataset=dataset).values_list("index", flat=True))
    assert indices == list(range(PUSHES))
    assert sorted(str(u) for u in Trace.objects.values_list("uuid", flat=True)) == sorted(outcomes)


def test_concurrent_multi_trace_pushes_keep_each_request_contiguous(live_server, owner_key):
    from invariant_sdk.client import Client

    def push(n):
        client = Client(api_url=live_server.url, api_key=owner_key, timeout_ms=SDK_TIMEOUT_MS)
        try:
            traces = [[{"role": "user", "content": f"{n}.{k}"}] for k in range(3)]
            return client.create_request_and_push_trace(messages=traces, dataset="multi").id
        finally:
            client.session.close()

    outcomes = run_together([lambda n=n: push(n) for n in range(6)])
    assert all(isinstance(o, list) for o in outcomes), outcomes
    for ids in outcomes:
        indices = [Trace.objects.get(uuid=i).index for i in ids]
        assert indices == list(range(indices[0], indices[0] + 3))
    all_indices = sorted(Trace.objects.values_list("index", flat=True))
    assert all_indices == list(range(18))
