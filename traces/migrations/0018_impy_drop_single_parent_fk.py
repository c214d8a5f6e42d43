"""PostgreSQL: drop the single-column foreign key of `traces_block.parent_block_id`.

The composite key `block_parent_same_trace` (trace_id, parent_block_id) -> (trace_id,
id) of migration 0002 already refuses a parent that is missing or in another trace, and
a delete of a parent that still has children; the single-column key checked the same
parent a second time, row by row at the commit of every import (~9% of the server's
CPU of a large one). The index on parent_block_id stays: a delete of blocks finds the
children of each deleted row through it (the composite key's check), never by a scan.

SQLite keeps its key: there the composite rule is triggers on insert and update only,
and the key is what refuses a delete of a parent that still has children. Django's
state still describes the key (it is the same model on both databases); an AlterField
of `Block.parent` must mind that PostgreSQL has no such constraint any more.
"""

from django.db import migrations

_FIND = """
    SELECT c.conname FROM pg_constraint c
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
    WHERE c.conrelid = 'traces_block'::regclass AND c.contype = 'f'
      AND c.confrelid = 'traces_block'::regclass AND cardinality(c.conkey) = 1
      AND a.attname = 'parent_block_id'
"""


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_FIND)
        names = [row[0] for row in cursor.fetchall()]
    for name in names:
        schema_editor.execute(f'ALTER TABLE traces_block DROP CONSTRAINT "{name}"')


def add_back(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "ALTER TABLE traces_block ADD CONSTRAINT traces_block_parent_block_id_fk_traces_block_id "
        "FOREIGN KEY (parent_block_id) REFERENCES traces_block (id) DEFERRABLE INITIALLY DEFERRED"
    )


class Migration(migrations.Migration):
    dependencies = [("traces", "0017_invfix_key_parent")]

    operations = [migrations.RunPython(drop, add_back)]
