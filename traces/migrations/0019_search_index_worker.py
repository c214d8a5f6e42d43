"""Full-text search built after the rows (issue 10): the GIN index on every block's
`to_tsvector(payload)` (0004) cost an import about a third of its time. On PostgreSQL its
place is taken by

- traces_block_search: a block's stored text vector, GIN-indexed, written by the search
  worker (traces/services/search_index.py, `manage.py search_worker`);
- traces_search_pending: the traces written since the worker last indexed them. Triggers
  on traces_block queue them, so every way blocks are written (import, the APIs, OTLP,
  the admin) is covered without touching it. Search reads a pending trace's payloads
  directly (traces/selectors/search.py): the same results before and after the worker.

The tables exist on SQLite too (Django flushes the test database with one TRUNCATE of
the tables it knows, which PostgreSQL refuses for a table another references unless
both are in it), empty there: SQLite scans the payloads.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models.functions import Now

import traces.models

# The keys with the database's cascade: a block's or trace's rows go with it whichever
# way it is deleted (the set-based deletes of traces/services/deletion.py, the ORM's,
# the admin's). Deferred as Django's keys are: an import may write blocks before their
# trace row in the same transaction (the triggers then queue a trace not yet written).
KEYS = (
    ("traces_block_search", "block_search_block_fk", "block_id", "traces_block"),
    ("traces_search_pending", "search_pending_trace_fk", "trace_id", "traces_trace"),
)

# A statement-level trigger on insert (COPY included) reads the statement's rows once
# (a transition table) and queues their distinct traces. ON CONFLICT DO UPDATE, not DO
# NOTHING: the update waits for a worker that holds the row (FOR UPDATE) and queues the
# trace again once the worker has taken it off; DO NOTHING would see the row still there
# and the worker, whose snapshot missed these blocks, would drop them from search.
QUEUE = """
    INSERT INTO traces_search_pending (trace_id, queued_at)
    SELECT trace_id, clock_timestamp() FROM (SELECT DISTINCT trace_id FROM {rows}) AS queued
    ON CONFLICT (trace_id) DO UPDATE SET queued_at = EXCLUDED.queued_at
"""

PG_UP = [
    "DROP INDEX IF EXISTS block_payload_fts",
    *(
        f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}) "
        f"REFERENCES {target} (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
        for table, name, column, target in KEYS
    ),
    # With GIN's pending list (fastupdate, the default): measured on 100 MB of real runs,
    # the worker's inserts took 36 s with it and 131 s without. The worker merges the
    # list at the end of each batch (search_index_build), so that searches, and the
    # planner that costs them, do not read through it.
    "CREATE INDEX block_search_document ON traces_block_search USING GIN (document)",
    f"""CREATE FUNCTION traces_search_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN {QUEUE.format(rows="written")}; RETURN NULL; END $$""",
    """CREATE TRIGGER block_search_queue_insert AFTER INSERT ON traces_block
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT
    EXECUTE FUNCTION traces_search_queue_inserted()""",
    # PostgreSQL allows no transition table with a column list (UPDATE OF): a row trigger,
    # only for rows whose searched text or kind really changed (updates are few: the
    # page's `rendered` fills and the order's refills leave these columns alone).
    f"""CREATE FUNCTION traces_search_queue_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN {QUEUE.format(rows="(SELECT NEW.trace_id) AS updated")}; RETURN NULL; END $$""",
    """CREATE TRIGGER block_search_queue_update AFTER UPDATE OF payload, sub_type
    ON traces_block FOR EACH ROW
    WHEN (OLD.payload IS DISTINCT FROM NEW.payload OR OLD.sub_type IS DISTINCT FROM NEW.sub_type)
    EXECUTE FUNCTION traces_search_queue_updated()""",
    # Every trace there is waits for the worker; search reads them directly meanwhile.
    "INSERT INTO traces_search_pending (trace_id, queued_at) "
    "SELECT id, clock_timestamp() FROM traces_trace ON CONFLICT DO NOTHING",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS block_search_queue_insert ON traces_block",
    "DROP TRIGGER IF EXISTS block_search_queue_update ON traces_block",
    "DROP FUNCTION IF EXISTS traces_search_queue_inserted()",
    "DROP FUNCTION IF EXISTS traces_search_queue_updated()",
    "CREATE INDEX IF NOT EXISTS block_payload_fts ON traces_block "
    "USING GIN (to_tsvector('simple'::regconfig, payload))",
]


def _pattern_indexes(schema_editor) -> list[str]:
    """The `varchar_pattern_ops` copies Django made of the two primary keys: only a
    `LIKE 'prefix%'` would use them (none does; see 0012), and each insert paid for one.
    Django creates them at the end of the migration (its deferred statements): they are
    run now, so that there is something to drop."""
    while schema_editor.deferred_sql:
        schema_editor.execute(schema_editor.deferred_sql.pop(0))
    names = (
        schema_editor._create_index_name(table, [column], suffix="_like")
        for table, _, column, _ in KEYS
    )
    return [f'DROP INDEX IF EXISTS "{name}"' for name in names]


def _run(statements, *, and_then=None):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in [*statements, *(and_then(schema_editor) if and_then else [])]:
                schema_editor.execute(sql)

    return run


def _key(to: str) -> models.OneToOneField:
    """The primary key that is another table's key, without a constraint of Django's
    (KEYS above adds the database's, with its cascade)."""
    return models.OneToOneField(
        db_constraint=False,
        on_delete=django.db.models.deletion.DO_NOTHING,
        primary_key=True,
        related_name="+",
        serialize=False,
        to=to,
    )


class Migration(migrations.Migration):
    dependencies = [("traces", "0018_impy_drop_single_parent_fk")]

    operations = [
        migrations.CreateModel(
            name="SearchPending",
            fields=[
                ("trace", _key("traces.trace")),
                ("queued_at", models.DateTimeField(db_default=Now())),
            ],
            options={"db_table": "traces_search_pending"},
        ),
        migrations.CreateModel(
            name="BlockSearch",
            fields=[
                ("block", _key("traces.block")),
                ("trace_id", models.CharField(max_length=32)),
                ("document", traces.models.TextVectorField()),
            ],
            options={
                "db_table": "traces_block_search",
                "indexes": [models.Index(fields=["trace_id"], name="block_search_trace")],
            },
        ),
        migrations.RunPython(_run(PG_UP, and_then=_pattern_indexes), _run(PG_DOWN)),
    ]
