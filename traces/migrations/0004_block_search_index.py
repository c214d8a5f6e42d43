"""Full-text search over block payloads: a GIN index on PostgreSQL (SQLite scans)."""

from django.db import migrations

PG_UP = (
    "CREATE INDEX IF NOT EXISTS block_payload_fts ON traces_block "
    "USING GIN (to_tsvector('simple'::regconfig, payload))"
)
PG_DOWN = "DROP INDEX IF EXISTS block_payload_fts"


def _run(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0003_api_key")]

    operations = [migrations.RunPython(_run(PG_UP), _run(PG_DOWN))]
