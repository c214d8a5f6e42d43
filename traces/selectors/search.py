"""Full-text search over block content: PostgreSQL's GIN index, a scan on SQLite."""

from django.db import connection
from django.db.models import QuerySet

from traces.models import Block, Trace

# The expression must be the index's, word for word, for PostgreSQL to use it.
PG_MATCH = (
    "to_tsvector('simple'::regconfig, traces_block.payload)"
    " @@ plainto_tsquery('simple'::regconfig, %s)"
)


def blocks_matching(*, text: str) -> QuerySet[Block]:
    if connection.vendor == "postgresql":
        return Block.objects.extra(where=[PG_MATCH], params=[text])
    return Block.objects.filter(payload__icontains=text)


def traces_matching(*, traces: QuerySet[Trace], text: str) -> QuerySet[Trace]:
    """The traces among `traces` with a block whose content matches `text`."""
    text = text.strip()
    if not text:
        return traces
    hits = blocks_matching(text=text).filter(trace__in=traces.values("id")).values("trace_id")
    return traces.filter(id__in=hits)
