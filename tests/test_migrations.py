"""The data migrations: existing rows come out as the new rules want them."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.kinds_of import block_counts
from traces.models import Trace
from traces.selectors.search import traces_matching
from traces.services.search_index import search_index_build

# slow: migrates back and forth
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHA = "ab" * 32
UNUSED = "cd" * 32


def migrate_to(name: str):
    """Migrate the traces app to `name`; its models as they were then."""
    executor = MigrationExecutor(connection)
    target = [("traces", name)]
    executor.migrate(target)
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.fixture
def migrated_back():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("traces")[0][1]
    yield migrate_to
    migrate_to(latest)


def blocks_of_one_call(apps, slug: str, seqs: list[int], content: str = "x"):
    Organization, Trace, Block = (
        apps.get_model("traces", name) for name in ("Organization", "Trace", "Block")
    )
    org = Organization.objects.create(slug=slug, name=slug)
    trace = Trace.objects.create(id=f"tr_{slug}", organization=org)
    now = timezone.now()

    def block(n, sub_type, block_type, parent=None, **more):
        return Block.objects.create(
            id=f"tb_{slug}_{n}", trace=trace, sub_type=sub_type, block_type=block_type,
            parent=parent, created_at=now, updated_at=now, **more,
        )  # fmt: skip

    message = block(0, "MESSAGE", "MESSAGE", payload={"role": "user", "content": content},
                    raw={"role": "user", "content": content})  # fmt: skip
    call = block(1, "TOOL_CALL", "ACT", message, payload={}, call_id="c")
    for n, seq in enumerate(seqs, start=2):
        block(n, "TOOL_RESULT", "OBSERVE", call, payload={"seq": seq}, call_id="c", result_seq=seq)
    return trace


def test_0008_stores_a_result_without_seq_as_null(migrated_back):
    apps = migrated_back("0007_trace_reward_in_range")
    trace = blocks_of_one_call(apps, "acme", [-1, 0])
    apps = migrated_back("0008_result_seq_nulls")
    Block = apps.get_model("traces", "Block")
    seqs = Block.objects.filter(trace_id=trace.pk, sub_type="TOOL_RESULT").order_by("id")
    assert list(seqs.values_list("result_seq", flat=True)) == [None, 0]


def test_0009_gives_each_organization_its_images_and_links_the_traces_using_them(
    migrated_back,
):
    apps = migrated_back("0008_result_seq_nulls")
    OldImage = apps.get_model("traces", "Image")
    for sha in (SHA, UNUSED):
        OldImage.objects.create(sha256=sha, mime_type="image/png", data=b"\x89PNG" + sha.encode(),
                                size=68)  # fmt: skip
    ref = f"data:image/png;base64,te-image:sha256:{SHA}"
    acme = blocks_of_one_call(apps, "acme", [], content=ref)
    rival = blocks_of_one_call(apps, "rival", [], content=ref)
    blocks_of_one_call(apps, "plain", [])
    apps = migrated_back("0009_images_per_organization")
    Image, TraceImage = apps.get_model("traces", "Image"), apps.get_model("traces", "TraceImage")
    images = {i.organization.slug: i for i in Image.objects.select_related("organization")}
    assert set(images) == {"acme", "rival"}
    assert {i.sha256 for i in images.values()} == {SHA}  # the unreferenced one is gone
    assert bytes(images["acme"].data) == b"\x89PNG" + SHA.encode()
    links = {(link.trace_id, link.image_id) for link in TraceImage.objects.all()}
    assert links == {(acme.pk, images["acme"].pk), (rival.pk, images["rival"].pk)}


def test_0014_gives_stored_blocks_their_place_in_the_stitched_order_and_counts(migrated_back):
    apps = migrated_back("0013_merge_reading")
    trace = blocks_of_one_call(apps, "acme", [None, 2, 0])
    apps = migrated_back("0014_order_usage_tasks")
    Block, Trace = apps.get_model("traces", "Block"), apps.get_model("traces", "Trace")
    rows = Block.objects.filter(trace_id=trace.pk).order_by("turn", "act", "step", "result_seq")
    places = list(rows.values_list("id", "turn", "act", "step", "number"))
    slug = "tb_acme"
    assert places == [
        (f"{slug}_0", 0, 0, 0, 1), (f"{slug}_1", 0, 1, 0, 2),
        (f"{slug}_4", 0, 1, 1, 5), (f"{slug}_3", 0, 1, 1, 4), (f"{slug}_2", 0, 1, 2, 3),
    ]  # fmt: skip
    counts = Trace.objects.get(pk=trace.pk).block_counts
    assert counts == block_counts(MESSAGE=1, TOOL_CALL=1, TOOL_RESULT=3)


def test_0014_fills_the_task_and_trial_of_existing_traces(migrated_back):
    apps = migrated_back("0013_merge_reading")
    Organization, Trace = (apps.get_model("traces", name) for name in ("Organization", "Trace"))
    org = Organization.objects.create(slug="tasks", name="tasks")
    metas = {
        "tr_tau2": {"task_id": "7", "trial": 2},
        "tr_inspect": {"task_id": "arith/3", "epoch": 4},
        "tr_swe": {"instance_id": "django__django-1"},
        "tr_none": {"reward": 1},
    }
    for trace_id, metadata in metas.items():
        Trace.objects.create(id=trace_id, organization=org, metadata=metadata)
    apps = migrated_back("0014_order_usage_tasks")
    Trace = apps.get_model("traces", "Trace")
    found = dict(
        (trace_id, (task, trial))
        for trace_id, task, trial in Trace.objects.values_list("id", "task", "trial")
    )
    assert found == {
        "tr_tau2": ("7", 2),
        "tr_inspect": ("arith/3", 4),
        "tr_swe": ("django__django-1", None),
        "tr_none": ("", None),
    }


def test_0015_gives_existing_datasets_traces_and_annotations_each_their_own_uuid(migrated_back):
    apps = migrated_back("0014_order_usage_tasks")
    Organization, Dataset, Trace, Annotation = (
        apps.get_model("traces", name)
        for name in ("Organization", "Dataset", "Trace", "Annotation")
    )
    org = Organization.objects.create(slug="uuids", name="uuids")
    dataset = Dataset.objects.create(id="ds_uuids", organization=org, name="d")
    for n in range(3):
        trace = Trace.objects.create(id=f"tr_uuid{n}", organization=org, dataset=dataset, index=n)
        Annotation.objects.create(id=f"an_uuid{n}", trace=trace, comment="note")
    apps = migrated_back("0015_invariant_uuids_addresses_events")
    for name, count in (("Dataset", 1), ("Trace", 3), ("Annotation", 3)):
        uuids = list(apps.get_model("traces", name).objects.values_list("uuid", flat=True))
        assert len(uuids) == count and None not in uuids and len(set(uuids)) == count


@pytest.mark.postgres  # the search index is PostgreSQL's; SQLite's tables stay empty
def test_0019_queues_every_trace_for_the_search_worker_and_search_reads_them_meanwhile(
    migrated_back,
):
    apps = migrated_back("0017_invfix_key_parent")
    old = blocks_of_one_call(apps, "acme", [0], content="a quokka")
    migrated_back("0019_search_index_worker")
    with connection.cursor() as cursor:
        cursor.execute("SELECT trace_id FROM traces_search_pending")
        assert cursor.fetchall() == [(old.pk,)]
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'traces_block'")
        assert "block_payload_fts" not in {row[0] for row in cursor.fetchall()}
    # Found before the worker has run (read directly) and after (its index).
    traces = Trace.objects.filter(pk=old.pk)
    assert list(traces_matching(traces=traces, text="quokka").values_list("pk", flat=True)) == [
        old.pk
    ]
    assert search_index_build(limit=10) == 1
    assert traces_matching(traces=traces, text="quokka").get().pk == old.pk
    assert not traces_matching(traces=traces, text="wombat").exists()
    migrated_back("0017_invfix_key_parent")  # and back: the old index again
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'traces_block'")
        assert "block_payload_fts" in {row[0] for row in cursor.fetchall()}


@pytest.mark.postgres
def test_0022_queues_every_trace_again_so_that_the_words_after_line_breaks_are_found(
    migrated_back,
):
    apps = migrated_back("0021_drop_block_trace_order")
    old = blocks_of_one_call(apps, "acme", [0], content="first line\nquokka")
    with connection.cursor() as cursor:
        # Indexed as before 0022: the word after the line break glued to its n.
        cursor.execute("DELETE FROM traces_search_pending")
        cursor.execute(
            "INSERT INTO traces_block_search (block_id, trace_id, document) SELECT id, "
            "trace_id, to_tsvector('simple'::regconfig, payload) FROM traces_block"
        )
    traces = Trace.objects.filter(pk=old.pk)
    assert not traces_matching(traces=traces, text="quokka").exists()
    migrated_back("0022_search_reads_line_breaks")
    assert traces_matching(traces=traces, text="quokka").get().pk == old.pk  # read directly
    assert search_index_build(limit=10) == 1
    assert traces_matching(traces=traces, text="quokka").get().pk == old.pk  # its new vector
