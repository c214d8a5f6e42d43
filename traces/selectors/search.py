"""Full-text search over block content (PostgreSQL's GIN index, a scan on SQLite) and over
labels and comments, and search of dataset names.

Search text holding NUL (U+0000) matches nothing: no name holds one, and stored content
keeps it escaped (JSON text), so nothing could match it; PostgreSQL would refuse it.
"""

from django.db import connection
from django.db.models import BooleanField, Exists, F, Func, OuterRef, Q, QuerySet, Value
from django.db.models.expressions import RawSQL

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


def _unquoted(text: str) -> str:
    """The text inside the quotes a reader typed as in a web search ("nonstop"): the
    payload is JSON text, in which a quote would only match an escaped one."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].strip()
    return text


def traces_matching(*, traces: QuerySet[Trace], text: str) -> QuerySet[Trace]:
    """The traces among `traces` with a block whose content matches `text`."""
    text = _unquoted(text.strip())
    if not text:
        return traces
    if NUL in text:
        return traces.none()
    hits = blocks_matching(text=text).values("trace_id")
    if connection.vendor != "postgresql":
        in_blocks = Q(pk__in=hits)
    else:
        # The index's hits first, then their traces. Given the hits as a subquery it may
        # pull up (EXISTS or IN), the planner walked every trace of the dataset and
        # recomputed the text vector of each of its blocks: the GIN index unused,
        # O(dataset) per search. OFFSET 0 keeps the hits a subquery of its own, which only
        # the index answers.
        sql, params = hits.query.sql_with_params()
        in_blocks = Q(pk__in=RawSQL(f"SELECT trace_id FROM ({sql} OFFSET 0) hits", params))
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
