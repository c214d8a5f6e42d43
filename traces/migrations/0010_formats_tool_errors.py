"""Tool errors (issue 11 item 2): Block.is_error, indexed per trace, and Trace.tool_errors."""

from django.db import migrations, models

from traces.migrations._parent_same_trace import recreate_sqlite_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0009_images_per_organization"),
    ]

    operations = [
        migrations.AddField(
            model_name="block",
            name="is_error",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="trace",
            name="tool_errors",
            field=models.IntegerField(db_default=0, default=0),
        ),
        migrations.AddIndex(
            model_name="block",
            index=models.Index(
                condition=models.Q(("is_error", True)),
                fields=["trace", "created_at", "id"],
                name="block_tool_errors",
            ),
        ),
        # Adding a column with a database default rebuilds traces_block on SQLite, which
        # drops its triggers (see _parent_same_trace).
        migrations.RunPython(recreate_sqlite_triggers, migrations.RunPython.noop),
    ]
