"""PostgreSQL: the key checks of 0023 look a block up by its primary key alone, and its
children by their parent alone, then compare the trace in PL/pgSQL.

A PL/pgSQL statement keeps the plan it was given in its session. `WHERE b.id = NEW.id AND
b.trace_id = NEW.trace_id` planned while traces_block had no statistics (a new database)
was given the index block_number, which starts with trace_id: it walked every block of
the trace, for each block checked. Pushing 10,000 blocks into one trace by blocks:batch
took a commit of 0.3 s for the first 1,000 and 2.4 s for the tenth (50 s for 50,000
blocks where 4 s would do), until autovacuum's ANALYZE came. A lookup by the primary key
alone, or by parent_block_id alone, leaves the planner no other index to choose.

The rules, the errors and the locks are those of 0023, and two races it let through are
closed (attacker review: a child left under a parent in another trace in 294 of 300
tries). trace_id is no key column since 0023, so moving a block to another trace took no
lock that a new child's check (FOR KEY SHARE of the parent) conflicts with:

- a block moved to another trace is locked FOR UPDATE by its check, so that a move after
  a child's check waits for the child's transaction, then finds the child;
- a child's check reads its parent again after locking it: when the lock waited for a
  transaction that moved the parent, it still returned the parent as it was before.
"""

import importlib

from django.db import migrations

_0023 = importlib.import_module("traces.migrations.0023_block_keys_as_triggers")
_function, _refuse = _0023._function, _0023._refuse


def _replace(sql: str) -> str:
    return sql.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def _block_still(*columns: str) -> str:
    """Whether the block's row still has the values checked (see 0023): found by its id
    alone, its columns compared here."""
    differs = " OR ".join(f"hit.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
    return f"""
        SELECT {", ".join(f"b.{c}" for c in columns)} INTO hit
            FROM traces_block b WHERE b.id = NEW.id;
        IF NOT FOUND OR {differs} THEN RETURN NULL; END IF;"""


def _with_record(sql: str) -> str:
    """The function with a `hit` record declared."""
    return sql.replace("AS $$\n    BEGIN", "AS $$\n    DECLARE hit record;\n    BEGIN", 1)


PARENT_CHECK = _with_record(
    _function(
        "traces_block_parent_check",
        f"""{_block_still("trace_id", "parent_block_id")}
        PERFORM 1 FROM traces_block p WHERE p.id = NEW.parent_block_id FOR KEY SHARE OF p;
        -- Read again, after the lock: the lock returns the row as this statement's start
        -- saw it, even when it waited for a transaction that moved the parent (a change
        -- of no key column); a statement that starts now sees where the parent is.
        SELECT p.trace_id INTO hit FROM traces_block p WHERE p.id = NEW.parent_block_id;
        IF NOT FOUND OR hit.trace_id IS DISTINCT FROM NEW.trace_id THEN {
            _refuse(
                "block_parent_same_trace",
                "parent must be in the same trace",
                'Key (trace_id, parent_block_id)=(%s, %s) is not present in table "traces_block".',
                "NEW.trace_id",
                "NEW.parent_block_id",
            )
        }; END IF;""",
    )
)
CHILDREN_CHECK = _with_record(
    _function(
        "traces_block_children_check",
        f"""
        IF TG_OP = 'UPDATE' THEN
            -- Moved to another trace: trace_id is no key column (0023), so the move
            -- took no lock that a new child's check (FOR KEY SHARE) waits for, nor
            -- waited for one; each check saw the other's write as not yet there.
            PERFORM 1 FROM traces_block b WHERE b.id = NEW.id FOR UPDATE OF b;
        END IF;
        -- The same block is there again (written back in this transaction).
        SELECT b.trace_id INTO hit FROM traces_block b WHERE b.id = OLD.id;
        IF FOUND AND hit.trace_id = OLD.trace_id THEN RETURN NULL; END IF;
        -- A child elsewhere than in the block's trace is none of this rule's business.
        FOR hit IN SELECT c.trace_id FROM traces_block c WHERE c.parent_block_id = OLD.id
        LOOP
            IF hit.trace_id = OLD.trace_id THEN {
            _refuse(
                "block_parent_same_trace",
                "a block with children must stay in its trace",
                'Key (trace_id, id)=(%s, %s) is still referenced from table "traces_block".',
                "OLD.trace_id",
                "OLD.id",
            )
        }; END IF;
        END LOOP;""",
    )
)
TRACE_CHECK = _with_record(
    _function(
        "traces_block_trace_check",
        f"""{_block_still("trace_id")}
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
)

PG_UP = [_replace(sql) for sql in (PARENT_CHECK, CHILDREN_CHECK, TRACE_CHECK)]
PG_DOWN = [_replace(sql) for sql in (_0023.PARENT_CHECK, _0023.CHILDREN_CHECK, _0023.TRACE_CHECK)]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for sql in statements:
            schema_editor.execute(sql, None)  # None: its %s are format()'s

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0023_block_keys_as_triggers")]

    operations = [migrations.RunPython(_run(PG_UP), _run(PG_DOWN))]
