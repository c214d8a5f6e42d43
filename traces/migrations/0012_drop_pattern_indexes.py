"""PostgreSQL: drop the `varchar_pattern_ops` copies Django made of the blocks' `id` and
`parent_block_id` indexes. They serve only `LIKE 'prefix%'`, which no query of the
product runs (ids are looked up by equality, which the primary key and the plain parent
index serve), and every import paid for them: two more B-trees written per block."""

from django.db import migrations

COLUMNS = ("id", "parent_block_id")


def _names(schema_editor):
    return [
        (column, schema_editor._create_index_name("traces_block", [column], suffix="_like"))
        for column in COLUMNS
    ]


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for _, name in _names(schema_editor):
            schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for column, name in _names(schema_editor):
            schema_editor.execute(
                f'CREATE INDEX IF NOT EXISTS "{name}" ON "traces_block" '
                f'("{column}" varchar_pattern_ops)'
            )


class Migration(migrations.Migration):
    dependencies = [("traces", "0011_formats_content_hash")]

    operations = [migrations.RunPython(drop, create)]
