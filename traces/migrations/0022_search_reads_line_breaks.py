"""Search reads a payload's line breaks, tabs and carriage returns as spaces
(traces/selectors/search.py, `pg_document_sql`): the stored text vectors, built from the
JSON text as it was, had glued an `n` to the word after each line break. On PostgreSQL
every trace is queued for the search worker to index again; search reads a queued
trace's payloads directly meanwhile (migration 0019), with the new reading. SQLite scans
the payloads and has nothing to do."""

from django.db import migrations

QUEUE_ALL = (
    "INSERT INTO traces_search_pending (trace_id, queued_at) "
    "SELECT id, clock_timestamp() FROM traces_trace ON CONFLICT DO NOTHING"
)


def queue_all(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(QUEUE_ALL)


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0021_drop_block_trace_order"),
    ]

    operations = [migrations.RunPython(queue_all, migrations.RunPython.noop)]
