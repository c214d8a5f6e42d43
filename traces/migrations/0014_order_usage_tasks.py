"""One release's changes to the store, in one migration:

1. Each block's place in the stitched order and its number, each trace's counts per kind
   (traces/order.py), filled for the rows already stored: a trace at a time, its blocks in
   creation order, as the write paths compute them.
2. A trace's usage figures (tokens, cost, duration) when its format carries them, each
   finite and not negative.
3. The task and trial of each trace (traces/trials.py) as columns, filled for the traces
   there are, and the indexes the trace list's sorts walk (traces/models.py sort_index; the
   descending ones of nullable columns, NULLS LAST, here in each database's own words)."""

from django.db import migrations, models

from traces import jsontext
from traces.migrations._parent_same_trace import recreate_sqlite_triggers
from traces.trials import trace_task_trial

BLOCK_PLACE_FIELDS = [
    ("act", models.IntegerField(db_default=0, default=0)),
    ("number", models.IntegerField(blank=True, null=True)),
    ("step", models.SmallIntegerField(db_default=0, default=0)),
    ("turn", models.IntegerField(blank=True, null=True)),
]
USAGE_FIELDS = [
    ("cost_usd", models.FloatField(blank=True, null=True)),
    ("duration_seconds", models.FloatField(blank=True, null=True)),
    ("input_tokens", models.BigIntegerField(blank=True, null=True)),
    ("output_tokens", models.BigIntegerField(blank=True, null=True)),
]
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


CHUNK = 2000
# traces/models.py sort_index: the ascending indexes, walked both ways.
SORTED_BY = [
    ("reward",), ("block_count",), ("tool_errors",), ("name",), ("task", "trial"), ("trial",),
    ("cost_usd",), ("duration_seconds",),
]  # fmt: skip
TOKENS = '("input_tokens" + "output_tokens")'
# name: (PostgreSQL columns, SQLite columns). SQLite takes no NULLS LAST in an index, and
# its NULLs are the smallest values, so that plain DESC already puts them last.
DESCENDING = {
    "trace_sort_reward_desc": (
        '"reward" DESC NULLS LAST, "index" DESC',
        '"reward" DESC, "index" DESC',
    ),
    "trace_sort_trial_desc": (
        '"trial" DESC NULLS LAST, "index" DESC',
        '"trial" DESC, "index" DESC',
    ),
    "trace_sort_cost_usd_desc": (
        '"cost_usd" DESC NULLS LAST, "index" DESC',
        '"cost_usd" DESC, "index" DESC',
    ),
    "trace_sort_duration_desc": (
        '"duration_seconds" DESC NULLS LAST, "index" DESC',
        '"duration_seconds" DESC, "index" DESC',
    ),
    "trace_sort_tokens_desc": (
        f'{TOKENS} DESC NULLS LAST, "index" DESC',
        f'{TOKENS} DESC, "index" DESC',
    ),
    "trace_sort_task_desc": (
        '"task" DESC, "trial" DESC NULLS LAST, "index" DESC',
        '"task" DESC, "trial" DESC, "index" DESC',
    ),
}


def add_descending(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for name, (pg_columns, sqlite_columns) in DESCENDING.items():
        columns = pg_columns if postgres else sqlite_columns
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "traces_trace" ("dataset_id", {columns})'
        )


def drop_descending(apps, schema_editor):
    for name in DESCENDING:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


def fill_task_trial(apps, schema_editor):
    """Each trace's task and trial from its metadata, a chunk of traces at a time."""
    trace_model = apps.get_model("traces", "Trace")
    after = ""
    while True:
        rows = list(
            trace_model.objects.filter(id__gt=after)
            .order_by("id")
            .values_list("id", "metadata")[:CHUNK]
        )
        if not rows:
            return
        changed = []
        for trace_id, metadata in rows:
            if isinstance(metadata, str):
                metadata = jsontext.loads(metadata)
            task, trial = trace_task_trial(metadata=metadata)
            if task or trial is not None:
                changed.append(trace_model(id=trace_id, task=task, trial=trial))
        trace_model.objects.bulk_update(changed, ["task", "trial"], batch_size=500)
        after = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0013_merge_reading"),
    ]

    operations = [
        *[
            migrations.AddField(model_name="block", name=name, field=field)
            for name, field in BLOCK_PLACE_FIELDS
        ],
        migrations.AddField(
            model_name="trace",
            name="block_counts",
            field=jsontext.JSONTextField(blank=True, db_default={}, default=dict),
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
        *[
            migrations.AddField(model_name="trace", name=name, field=field)
            for name, field in USAGE_FIELDS
        ],
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("cost_usd__isnull", True),
                    models.Q(("cost_usd__gte", 0), ("cost_usd__lte", 1000000000000.0)),
                    _connector="OR",
                ),
                name="trace_cost_in_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("duration_seconds__isnull", True),
                    models.Q(
                        ("duration_seconds__gte", 0), ("duration_seconds__lte", 1000000000000.0)
                    ),
                    _connector="OR",
                ),
                name="trace_duration_in_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("input_tokens__isnull", True), ("input_tokens__gte", 0), _connector="OR"
                ),
                name="trace_input_tokens_not_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("output_tokens__isnull", True), ("output_tokens__gte", 0), _connector="OR"
                ),
                name="trace_output_tokens_not_negative",
            ),
        ),
        migrations.RemoveIndex(
            model_name="trace",
            name="traces_trac_dataset_c313de_idx",
        ),
        migrations.AddField(
            model_name="trace",
            name="task",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="trace",
            name="trial",
            field=models.IntegerField(blank=True, null=True),
        ),
        *[
            migrations.AddIndex(
                model_name="trace",
                index=models.Index(
                    models.F("dataset"),
                    *(models.F(column) for column in columns),
                    models.F("index"),
                    name=f"trace_sort_{columns[0]}",
                ),
            )
            for columns in SORTED_BY
        ],
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(
                models.F("dataset"),
                models.F("input_tokens") + models.F("output_tokens"),
                models.F("index"),
                name="trace_sort_tokens",
            ),
        ),
        migrations.RunPython(add_descending, drop_descending),
        # The rows last: on PostgreSQL a table with pending trigger events (the updates'
        # deferred foreign keys) takes no more schema change in the same transaction.
        # Adding NOT NULL columns rebuilt traces_block on SQLite, which dropped its triggers.
        migrations.RunPython(recreate_sqlite_triggers, migrations.RunPython.noop),
        migrations.RunPython(fill_places, migrations.RunPython.noop),
        migrations.RunPython(fill_task_trial, migrations.RunPython.noop, elidable=True),
    ]
