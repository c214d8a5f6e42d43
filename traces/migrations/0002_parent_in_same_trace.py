"""A block's parent must be in the same trace: a composite foreign key on
PostgreSQL, a trigger on SQLite (which cannot add constraints to a table)."""

from django.db import migrations

PG_UP = [
    "ALTER TABLE traces_block ADD CONSTRAINT block_trace_id_id_unique UNIQUE (trace_id, id)",
    "ALTER TABLE traces_block ADD CONSTRAINT block_parent_same_trace "
    "FOREIGN KEY (trace_id, parent_block_id) REFERENCES traces_block (trace_id, id) "
    "DEFERRABLE INITIALLY DEFERRED",
]
PG_DOWN = [
    "ALTER TABLE traces_block DROP CONSTRAINT block_parent_same_trace",
    "ALTER TABLE traces_block DROP CONSTRAINT block_trace_id_id_unique",
]
SQLITE_UP = [
    """
    CREATE TRIGGER block_parent_same_trace_insert BEFORE INSERT ON traces_block
    WHEN NEW.parent_block_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM traces_block p
        WHERE p.id = NEW.parent_block_id AND p.trace_id = NEW.trace_id)
    BEGIN SELECT RAISE(ABORT, 'block_parent_same_trace: parent must be in the same trace'); END
    """,
    """
    CREATE TRIGGER block_parent_same_trace_update BEFORE UPDATE OF parent_block_id, trace_id
    ON traces_block
    WHEN NEW.parent_block_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM traces_block p
        WHERE p.id = NEW.parent_block_id AND p.trace_id = NEW.trace_id)
    BEGIN SELECT RAISE(ABORT, 'block_parent_same_trace: parent must be in the same trace'); END
    """,
]
SQLITE_DOWN = [
    "DROP TRIGGER block_parent_same_trace_insert",
    "DROP TRIGGER block_parent_same_trace_update",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": PG_UP, "sqlite": SQLITE_UP}),
            _run({"postgresql": PG_DOWN, "sqlite": SQLITE_DOWN}),
        )
    ]
