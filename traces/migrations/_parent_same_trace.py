"""SQL that keeps a block's parent in the same trace (see 0002).

SQLite cannot add constraints to a table, so there it is two triggers, and every
migration that rebuilds traces_block on SQLite (an AlterField does) drops them:
such a migration must end with `recreate_sqlite_triggers`.
"""

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
_CHECK = """
    WHEN NEW.parent_block_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM traces_block p
        WHERE p.id = NEW.parent_block_id AND p.trace_id = NEW.trace_id)
    BEGIN SELECT RAISE(ABORT, 'block_parent_same_trace: parent must be in the same trace'); END
"""
# The insert trigger alone: a trusted bulk write (traces/bulk.py) lifts it for its own
# transaction and puts it back before the commit.
SQLITE_INSERT_TRIGGER = "block_parent_same_trace_insert"
SQLITE_INSERT_UP = (
    f"CREATE TRIGGER IF NOT EXISTS {SQLITE_INSERT_TRIGGER} BEFORE INSERT ON traces_block" + _CHECK
)
SQLITE_UP = [
    SQLITE_INSERT_UP,
    "CREATE TRIGGER IF NOT EXISTS block_parent_same_trace_update "
    "BEFORE UPDATE OF parent_block_id, trace_id ON traces_block" + _CHECK,
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS block_parent_same_trace_insert",
    "DROP TRIGGER IF EXISTS block_parent_same_trace_update",
]


def run(statements_by_vendor):
    def apply(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return apply


def recreate_sqlite_triggers(apps, schema_editor):
    run({"sqlite": SQLITE_UP})(apps, schema_editor)
