"""The trigger that queues inserted blocks' traces for the search worker fires once a
row, and not inside `search_queued_here` (traces/search_queue.py), where the writer
queues its traces itself. The statement-level trigger of 0019 read every inserted row
into a transition table, payloads included, even for writers that could have said
which traces they wrote: 0.65 s of a 100 MB import's 4.5 s of COPY."""

from django.db import migrations

# As traces/search_queue.py writes them (a migration keeps its own copy).
QUEUED_HERE = "traces.search_queued_here"
ROW_QUEUE = """
    INSERT INTO traces_search_pending (trace_id, queued_at)
    VALUES (NEW.trace_id, clock_timestamp())
    ON CONFLICT (trace_id) DO UPDATE SET queued_at = EXCLUDED.queued_at
    WHERE traces_search_pending.queued_at < now()
"""

PG_UP = [
    "DROP TRIGGER IF EXISTS block_search_queue_insert ON traces_block",
    "DROP FUNCTION IF EXISTS traces_search_queue_inserted()",
    f"""CREATE FUNCTION traces_search_queue_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN {ROW_QUEUE}; RETURN NULL; END $$""",
    f"""CREATE TRIGGER block_search_queue_insert AFTER INSERT ON traces_block FOR EACH ROW
    WHEN (current_setting('{QUEUED_HERE}', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION traces_search_queue_row()""",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS block_search_queue_insert ON traces_block",
    "DROP FUNCTION IF EXISTS traces_search_queue_row()",
    """CREATE FUNCTION traces_search_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
    INSERT INTO traces_search_pending (trace_id, queued_at)
    SELECT trace_id, clock_timestamp() FROM (SELECT DISTINCT trace_id FROM written) AS queued
    ON CONFLICT (trace_id) DO UPDATE SET queued_at = EXCLUDED.queued_at;
    RETURN NULL; END $$""",
    """CREATE TRIGGER block_search_queue_insert AFTER INSERT ON traces_block
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT
    EXECUTE FUNCTION traces_search_queue_inserted()""",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0019_search_index_worker")]

    operations = [migrations.RunPython(_run(PG_UP), _run(PG_DOWN))]
