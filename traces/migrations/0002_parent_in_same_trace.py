"""A block's parent must be in the same trace: a composite foreign key on
PostgreSQL, a trigger on SQLite (which cannot add constraints to a table)."""

from django.db import migrations

from traces.migrations._parent_same_trace import PG_DOWN, PG_UP, SQLITE_DOWN, SQLITE_UP, run


class Migration(migrations.Migration):
    dependencies = [("traces", "0001_initial")]

    operations = [
        migrations.RunPython(
            run({"postgresql": PG_UP, "sqlite": SQLITE_UP}),
            run({"postgresql": PG_DOWN, "sqlite": SQLITE_DOWN}),
        )
    ]
