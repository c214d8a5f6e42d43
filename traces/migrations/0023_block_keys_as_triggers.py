"""PostgreSQL: a block's two keys, its trace and its parent in the same trace, are kept
by deferred constraint triggers instead of foreign keys (the composite key
`block_parent_same_trace` of migration 0002, Django's key of `Block.trace`).

A foreign key is checked row by row at the commit of every write, an import's too,
whose ids the import made itself (its traces' and, for parents, its blocks' of the same
trace). Of a 100 MB import (157,502 blocks): 1.3 s of COPY went to the unique (trace_id,
id) index that the composite key needed and nothing else reads (the primary key finds a
block by id), and 1.9 s of the commit to the two keys' checks. The triggers keep the
same rules, deferred to the commit as the keys were:

- a block inserted, or updated to another trace or parent, must have its trace, and its
  parent in that trace; the row found is locked FOR KEY SHARE until the commit, as the
  keys' checks did, so that a concurrent delete of it waits or fails;
- a block deleted, or moved to another id or trace, must leave no children behind
  (found through the index on parent_block_id);
- a trace deleted, or given another id, must leave no blocks behind (found through the
  index block_number, which starts with trace_id);

and a trusted bulk write lifts the insert checks for its own rows, as it lifts SQLite's
trigger (traces/bulk.py `blocks_made_here`: the setting below, set to the id of its
transaction). Errors are
foreign_key_violation (23503) naming the rule, as the keys' were.

Django's state still describes the key of `Block.trace` (the same model on both
databases; SQLite keeps it, and turns its lookups off for an import's transaction): an
AlterField of `Block.trace` on PostgreSQL would put the key back, as 0018 says of
`Block.parent`.
"""

from django.db import migrations

# As traces/bulk.py sets it (a migration keeps its own copy).
BLOCKS_MADE_HERE = "traces.blocks_made_here"
# Lifted only by the transaction whose id the setting holds: a value set for a session, a
# role or a database (SET, ALTER ROLE ... SET, a pooler's leftover) lifts nothing.
_NOT_LIFTED = (
    f"current_setting('{BLOCKS_MADE_HERE}', true) IS DISTINCT FROM pg_current_xact_id()::text"
)

_FIND_TRACE_KEY = """
    SELECT conname FROM pg_constraint WHERE contype = 'f'
    AND conrelid = 'traces_block'::regclass AND confrelid = 'traces_trace'::regclass
"""


def _refuse(rule: str, message: str, detail: str, *values: str) -> str:
    """An error as a foreign key's: foreign_key_violation, naming the rule."""
    return (
        "RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', "
        f"CONSTRAINT = '{rule}', MESSAGE = '{rule}: {message}', "
        f"DETAIL = format('{detail}', {', '.join(values)})"
    )


def _function(name: str, body: str) -> str:
    return f"""CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
{body}
        RETURN NULL;
    END $$"""


def _block_still(keys: str) -> str:
    """Whether the block's row still has the values checked: one deleted or changed
    since (later in the same transaction) is not checked as it was; a change of those
    columns fires the check again with the new ones."""
    return f"""
        PERFORM 1 FROM traces_block b WHERE b.id = NEW.id AND {keys};
        IF NOT FOUND THEN RETURN NULL; END IF;"""


PARENT_CHECK = _function(
    "traces_block_parent_check",
    f"""{_block_still("b.trace_id = NEW.trace_id AND b.parent_block_id = NEW.parent_block_id")}
        PERFORM 1 FROM traces_block p WHERE p.id = NEW.parent_block_id
            AND p.trace_id = NEW.trace_id FOR KEY SHARE OF p;
        IF NOT FOUND THEN {
        _refuse(
            "block_parent_same_trace",
            "parent must be in the same trace",
            'Key (trace_id, parent_block_id)=(%s, %s) is not present in table "traces_block".',
            "NEW.trace_id",
            "NEW.parent_block_id",
        )
    }; END IF;""",
)
CHILDREN_CHECK = _function(
    "traces_block_children_check",
    f"""
        -- The same block is there again (written back in this transaction).
        PERFORM 1 FROM traces_block b WHERE b.id = OLD.id AND b.trace_id = OLD.trace_id;
        IF FOUND THEN RETURN NULL; END IF;
        PERFORM 1 FROM traces_block c WHERE c.parent_block_id = OLD.id
            AND c.trace_id = OLD.trace_id;
        IF FOUND THEN {
        _refuse(
            "block_parent_same_trace",
            "a block with children must stay in its trace",
            'Key (trace_id, id)=(%s, %s) is still referenced from table "traces_block".',
            "OLD.trace_id",
            "OLD.id",
        )
    }; END IF;""",
)
TRACE_CHECK = _function(
    "traces_block_trace_check",
    f"""{_block_still("b.trace_id = NEW.trace_id")}
        PERFORM 1 FROM traces_trace t WHERE t.id = NEW.trace_id FOR KEY SHARE OF t;
        IF NOT FOUND THEN {
        _refuse(
            "block_trace_exists",
            "a block must be in a trace",
            'Key (trace_id)=(%s) is not present in table "traces_trace".',
            "NEW.trace_id",
        )
    }; END IF;""",
)
BLOCKS_CHECK = _function(
    "traces_trace_blocks_check",
    f"""
        PERFORM 1 FROM traces_trace t WHERE t.id = OLD.id;
        IF FOUND THEN RETURN NULL; END IF;
        PERFORM 1 FROM traces_block b WHERE b.trace_id = OLD.id;
        IF FOUND THEN {
        _refuse(
            "block_trace_exists",
            "a trace with blocks must stay",
            'Key (id)=(%s) is still referenced from table "traces_block".',
            "OLD.id",
        )
    }; END IF;""",
)

_DEFERRED = "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW"
PG_UP = [
    PARENT_CHECK,
    CHILDREN_CHECK,
    TRACE_CHECK,
    BLOCKS_CHECK,
    f"""CREATE CONSTRAINT TRIGGER block_parent_same_trace_insert
    AFTER INSERT OR UPDATE OF trace_id, parent_block_id ON traces_block {_DEFERRED}
    WHEN (NEW.parent_block_id IS NOT NULL AND {_NOT_LIFTED})
    EXECUTE FUNCTION traces_block_parent_check()""",
    f"""CREATE CONSTRAINT TRIGGER block_parent_same_trace_delete
    AFTER DELETE ON traces_block {_DEFERRED}
    EXECUTE FUNCTION traces_block_children_check()""",
    f"""CREATE CONSTRAINT TRIGGER block_parent_same_trace_move
    AFTER UPDATE OF id, trace_id ON traces_block {_DEFERRED}
    WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.trace_id IS DISTINCT FROM NEW.trace_id)
    EXECUTE FUNCTION traces_block_children_check()""",
    f"""CREATE CONSTRAINT TRIGGER block_trace_exists_insert
    AFTER INSERT OR UPDATE OF trace_id ON traces_block {_DEFERRED}
    WHEN ({_NOT_LIFTED})
    EXECUTE FUNCTION traces_block_trace_check()""",
    f"""CREATE CONSTRAINT TRIGGER block_trace_exists_delete
    AFTER DELETE ON traces_trace {_DEFERRED}
    EXECUTE FUNCTION traces_trace_blocks_check()""",
    f"""CREATE CONSTRAINT TRIGGER block_trace_exists_move
    AFTER UPDATE OF id ON traces_trace {_DEFERRED}
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION traces_trace_blocks_check()""",
    "ALTER TABLE traces_block DROP CONSTRAINT block_parent_same_trace",
    "ALTER TABLE traces_block DROP CONSTRAINT block_trace_id_id_unique",
]
PG_DOWN = [
    "ALTER TABLE traces_block ADD CONSTRAINT block_trace_id_id_unique UNIQUE (trace_id, id)",
    "ALTER TABLE traces_block ADD CONSTRAINT block_parent_same_trace "
    "FOREIGN KEY (trace_id, parent_block_id) REFERENCES traces_block (trace_id, id) "
    "DEFERRABLE INITIALLY DEFERRED",
    "ALTER TABLE traces_block ADD CONSTRAINT traces_block_trace_id_b9c3ae67_fk_traces_trace_id "
    "FOREIGN KEY (trace_id) REFERENCES traces_trace (id) DEFERRABLE INITIALLY DEFERRED",
    "DROP TRIGGER block_trace_exists_move ON traces_trace",
    "DROP TRIGGER block_trace_exists_delete ON traces_trace",
    "DROP TRIGGER block_trace_exists_insert ON traces_block",
    "DROP TRIGGER block_parent_same_trace_move ON traces_block",
    "DROP TRIGGER block_parent_same_trace_delete ON traces_block",
    "DROP TRIGGER block_parent_same_trace_insert ON traces_block",
    "DROP FUNCTION traces_trace_blocks_check()",
    "DROP FUNCTION traces_block_trace_check()",
    "DROP FUNCTION traces_block_children_check()",
    "DROP FUNCTION traces_block_parent_check()",
]


def up(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in PG_UP:
        schema_editor.execute(sql, None)  # None: its %s are format()'s
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_FIND_TRACE_KEY)
        names = [row[0] for row in cursor.fetchall()]
    for name in names:
        schema_editor.execute(f'ALTER TABLE traces_block DROP CONSTRAINT "{name}"')


def down(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in PG_DOWN:
        schema_editor.execute(sql, None)


class Migration(migrations.Migration):
    dependencies = [("traces", "0022_search_reads_line_breaks")]

    operations = [migrations.RunPython(up, down)]
