"""Each block's place in the stitched order and its number, each trace's counts per kind
(traces/order.py), filled for the rows already stored: a trace at a time, its blocks
in creation order, as the write paths compute them."""

from django.db import migrations, models

import traces.jsontext
from traces.migrations._parent_same_trace import recreate_sqlite_triggers

BATCH = 1000


def fill_places(apps, schema_editor):
    from traces.order import count_places, stitched_places  # pure: no model involved

    Trace = apps.get_model("traces", "Trace")
    Block = apps.get_model("traces", "Block")
    for trace_id in Trace.objects.values_list("id", flat=True).iterator():
        rows = list(
            Block.objects.filter(trace_id=trace_id)
            .order_by("created_at", "id")
            .values_list("id", "sub_type", "parent_id", "result_seq")
        )
        index = {row[0]: n for n, row in enumerate(rows)}
        places = stitched_places(
            [(sub_type, index.get(parent), seq) for _, sub_type, parent, seq in rows]
        )
        updated = [
            Block(id=row[0], turn=place.turn, act=place.act, step=place.step, number=n + 1)
            for n, (row, place) in enumerate(zip(rows, places, strict=True))
        ]
        Block.objects.bulk_update(updated, ["turn", "act", "step", "number"], batch_size=BATCH)
        counts = count_places([row[1] for row in rows], places)
        Trace.objects.filter(pk=trace_id).update(block_counts=counts)


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0013_merge_reading"),
    ]

    operations = [
        migrations.AddField(
            model_name="block",
            name="act",
            field=models.IntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="block",
            name="number",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="block",
            name="step",
            field=models.SmallIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="block",
            name="turn",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="trace",
            name="block_counts",
            field=traces.jsontext.JSONTextField(blank=True, db_default={}, default=dict),
        ),
        migrations.AddIndex(
            model_name="block",
            index=models.Index(
                fields=["trace", "turn", "act", "step", "result_seq", "created_at", "id"],
                name="block_stitched_order",
            ),
        ),
        migrations.AddIndex(
            model_name="block",
            index=models.Index(fields=["trace", "number"], name="block_number"),
        ),
        # Adding NOT NULL columns rebuilt traces_block on SQLite, which dropped its triggers.
        migrations.RunPython(recreate_sqlite_triggers, migrations.RunPython.noop),
        migrations.RunPython(fill_places, migrations.RunPython.noop),
    ]
