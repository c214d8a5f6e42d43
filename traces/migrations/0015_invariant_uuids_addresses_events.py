"""Invariant Explorer's /api/v1 (traces/invariant) on the store:

1. A UUID for each dataset, trace and annotation, the ids Explorer's clients use (/v1 and
   the pages keep theirs): added nullable, filled for the rows there are, then made unique
   and given their default (a default on AddField would give every existing row one UUID).
2. An annotation's Explorer `address` and `extra_metadata`; a note with an address may
   have empty text.
3. TraceEvent: a trace's events as pushed, in order, with their blocks.

The schema first and the rows after, then the unique constraints: PostgreSQL takes no
schema change on a table with pending trigger events in one transaction, so the fill ends
by running the deferred checks (SET CONSTRAINTS ALL IMMEDIATE)."""

import uuid

import django.db.models.deletion
from django.db import migrations, models

import traces.jsontext
import traces.models
from traces.migrations._parent_same_trace import recreate_sqlite_triggers

WITH_UUID = ("Dataset", "Trace", "Annotation")
BATCH = 1000


def fill_uuids(apps, schema_editor):
    for name in WITH_UUID:
        model = apps.get_model("traces", name)
        pks = list(model.objects.filter(uuid__isnull=True).values_list("pk", flat=True))
        for start in range(0, len(pks), BATCH):
            rows = [model(pk=pk, uuid=uuid.uuid4()) for pk in pks[start : start + BATCH]]
            model.objects.bulk_update(rows, ["uuid"])
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def uuid_added(name: str) -> migrations.AddField:
    return migrations.AddField(
        model_name=name.lower(), name="uuid", field=models.UUIDField(null=True, editable=False)
    )


def uuid_made_unique(name: str) -> migrations.AlterField:
    # A trace's also has a database default: bulk inserts of traces do not name it.
    more = {"db_default": traces.models.RandomUUID()} if name == "Trace" else {}
    return migrations.AlterField(
        model_name=name.lower(),
        name="uuid",
        field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True, **more),
    )


class Migration(migrations.Migration):
    dependencies = [("traces", "0014_order_usage_tasks")]

    operations = [
        migrations.CreateModel(
            name="TraceEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),  # noqa: E501
                ("position", models.IntegerField()),
                ("event", traces.jsontext.JSONTextField()),
                ("timestamp", models.DateTimeField(blank=True, null=True)),
                ("first_block", models.IntegerField(blank=True, null=True)),
                ("block_count", models.IntegerField(default=0)),
                (
                    "trace",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="traces.trace",
                    ),
                ),  # noqa: E501
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("trace", "position"), name="trace_event_position"
                    )
                ]
            },
        ),
        migrations.RemoveConstraint(model_name="annotation", name="annotation_label_or_comment"),
        migrations.AddField(
            model_name="annotation", name="address", field=models.TextField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="annotation",
            name="extra_metadata",
            field=traces.jsontext.JSONTextField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="annotation",
            constraint=models.CheckConstraint(
                condition=models.Q(label__isnull=False)
                | ~models.Q(comment="")
                | models.Q(address__isnull=False),
                name="annotation_label_or_comment",
            ),
        ),
        *[uuid_added(name) for name in WITH_UUID],
        migrations.RunPython(fill_uuids, migrations.RunPython.noop),
        *[uuid_made_unique(name) for name in WITH_UUID],
        migrations.RunPython(recreate_sqlite_triggers, migrations.RunPython.noop),
    ]
