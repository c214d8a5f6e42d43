"""Full-text search over block content (PostgreSQL's GIN index, a scan on SQLite) and over
labels and comments, and search of dataset names.

Search text holding NUL (U+0000) matches nothing: no name holds one, and stored content
keeps it escaped (JSON text), so nothing could match it; PostgreSQL would refuse it.
"""

from django.db import connection
from django.db.models import BooleanField, Exists, F, Func, OuterRef, QuerySet, Value

from traces import kinds
from traces.models import Block, Dataset, Trace
from traces.selectors.annotations import annotations_matching

NUL = "\x00"


class PgTextMatch(Func):
    """The condition of the block_payload_fts index (migration 0004), word for word so
    that PostgreSQL uses the index, with the payload column as Django compiles it so that
    it keeps working when the query is nested and its table renamed."""

    output_field = BooleanField()

    def as_sql(self, compiler, connection, **extra):
        payload_sql, payload_params = compiler.compile(self.source_expressions[0])
        text_sql, text_params = compiler.compile(self.source_expressions[1])
        sql = (
            f"to_tsvector('simple'::regconfig, {payload_sql}) "
            f"@@ plainto_tsquery('simple'::regconfig, {text_sql})"
        )
        return sql, [*payload_params, *text_params]


def blocks_matching(*, text: str) -> QuerySet[Block]:
    """The blocks whose payload text holds `text`, among the kinds search reads
    (traces/kinds.py: `searched`)."""
    blocks = Block.objects.all()
    searched = kinds.searched_sub_types()
    if len(searched) < len(kinds.KINDS):  # every kind searched: no condition to plan
        blocks = blocks.filter(sub_type__in=searched)
    if connection.vendor == "postgresql":
        return blocks.filter(PgTextMatch(F("payload"), Value(text)))
    return blocks.filter(payload__icontains=text)


def traces_matching(*, traces: QuerySet[Trace], text: str) -> QuerySet[Trace]:
    """The traces among `traces` with a block whose content matches `text`."""
    text = text.strip()
    if not text:
        return traces
    if NUL in text:
        return traces.none()
    # A correlated EXISTS: the planner joins the index's hits to the traces, instead of
    # hashing every trace id of the dataset first.
    in_blocks = Exists(blocks_matching(text=text).filter(trace_id=OuterRef("pk")))
    # Labels and comments match too. They are few and short: the condition grows only
    # when one matches at all, so that a search that matches none keeps the plan above.
    notes = annotations_matching(text=text)
    if notes.exists():
        return traces.filter(in_blocks | Exists(notes.filter(trace_id=OuterRef("pk"))))
    return traces.filter(in_blocks)


def datasets_matching(*, datasets: QuerySet[Dataset], text: str) -> QuerySet[Dataset]:
    """The datasets among `datasets` whose name holds `text`, in any case."""
    if not text:
        return datasets
    if NUL in text:
        return datasets.none()
    return datasets.filter(name__icontains=text)
