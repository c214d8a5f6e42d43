"""PostgreSQL: a block's parent in the same trace is kept by constraint triggers instead
of the composite key `block_parent_same_trace` of migration 0002.

The key needed a unique index on (trace_id, id) that nothing else reads (the primary key
finds a block by id), and checked every block's parent at the commit of an import whose
parent ids the import made itself from blocks of the same trace: of a 100 MB import
(157,502 blocks), 1.3 s of COPY went to that index and 0.9 s of the commit to those
checks. The triggers keep the same rule, deferred to the commit as the key was:

- a block inserted, or updated to another trace or parent, must have its parent in
  its trace (the parent row locked FOR KEY SHARE until the commit, as the key's check
  did, so that a concurrent delete of it waits or fails);
- a block deleted, or moved to another id or trace, must leave no children behind
  (found through the index on parent_block_id);

and a trusted bulk write lifts the insert check for its own rows, as it lifts SQLite's
trigger (traces/bulk.py `parents_made_in_trace`, the setting below). Errors are
foreign_key_violation (23503) naming the constraint, as the key's were.
"""

from django.db import migrations

# As traces/bulk.py sets it (a migration keeps its own copy).
PARENTS_MADE_HERE = "traces.parents_made_here"


def _refuse(message: str, detail: str, *values: str) -> str:
    """An error as the composite key's: foreign_key_violation, naming the constraint."""
    return (
        "RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', "
        f"CONSTRAINT = 'block_parent_same_trace', MESSAGE = 'block_parent_same_trace: {message}', "
        f"DETAIL = format('{detail}', {', '.join(values)})"
    )


PG_UP = [
    f"""CREATE FUNCTION traces_block_parent_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- A row deleted or changed since (later in this transaction) is not checked
        -- as it was: its own update fires this again.
        PERFORM 1 FROM traces_block b WHERE b.id = NEW.id AND b.trace_id = NEW.trace_id
            AND b.parent_block_id = NEW.parent_block_id;
        IF NOT FOUND THEN RETURN NULL; END IF;
        PERFORM 1 FROM traces_block p WHERE p.id = NEW.parent_block_id
            AND p.trace_id = NEW.trace_id FOR KEY SHARE OF p;
        IF NOT FOUND THEN {
        _refuse(
            "parent must be in the same trace",
            'Key (trace_id, parent_block_id)=(%s, %s) is not present in table "traces_block".',
            "NEW.trace_id",
            "NEW.parent_block_id",
        )
    }; END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION traces_block_children_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- The same block is there again (written back in this transaction).
        PERFORM 1 FROM traces_block b WHERE b.id = OLD.id AND b.trace_id = OLD.trace_id;
        IF FOUND THEN RETURN NULL; END IF;
        PERFORM 1 FROM traces_block c WHERE c.parent_block_id = OLD.id
            AND c.trace_id = OLD.trace_id;
        IF FOUND THEN {
        _refuse(
            "a block with children must stay in its trace",
            'Key (trace_id, id)=(%s, %s) is still referenced from table "traces_block".',
            "OLD.trace_id",
            "OLD.id",
        )
    }; END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE CONSTRAINT TRIGGER block_parent_same_trace_insert
    AFTER INSERT OR UPDATE OF trace_id, parent_block_id ON traces_block
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.parent_block_id IS NOT NULL
          AND current_setting('{PARENTS_MADE_HERE}', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION traces_block_parent_check()""",
    """CREATE CONSTRAINT TRIGGER block_parent_same_trace_delete
    AFTER DELETE ON traces_block DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    EXECUTE FUNCTION traces_block_children_check()""",
    """CREATE CONSTRAINT TRIGGER block_parent_same_trace_move
    AFTER UPDATE OF id, trace_id ON traces_block DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.trace_id IS DISTINCT FROM NEW.trace_id)
    EXECUTE FUNCTION traces_block_children_check()""",
    "ALTER TABLE traces_block DROP CONSTRAINT block_parent_same_trace",
    "ALTER TABLE traces_block DROP CONSTRAINT block_trace_id_id_unique",
]
PG_DOWN = [
    "ALTER TABLE traces_block ADD CONSTRAINT block_trace_id_id_unique UNIQUE (trace_id, id)",
    "ALTER TABLE traces_block ADD CONSTRAINT block_parent_same_trace "
    "FOREIGN KEY (trace_id, parent_block_id) REFERENCES traces_block (trace_id, id) "
    "DEFERRABLE INITIALLY DEFERRED",
    "DROP TRIGGER block_parent_same_trace_move ON traces_block",
    "DROP TRIGGER block_parent_same_trace_delete ON traces_block",
    "DROP TRIGGER block_parent_same_trace_insert ON traces_block",
    "DROP FUNCTION traces_block_children_check()",
    "DROP FUNCTION traces_block_parent_check()",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql, None)  # None: its %s are format()'s

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0022_search_reads_line_breaks")]

    operations = [migrations.RunPython(_run(PG_UP), _run(PG_DOWN))]
