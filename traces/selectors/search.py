"""Full-text search over block content (PostgreSQL's GIN index, a scan on SQLite) and over
labels and comments, and search of dataset names.

Search text holding NUL (U+0000) matches nothing: no name holds one, and stored content
keeps it escaped (JSON text), so nothing could match it; PostgreSQL would refuse it.
"""

from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import BooleanField, Exists, F, Func, Min, OuterRef, Q, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Greatest, Length, Lower, StrIndex, Substr

from traces import kinds
from traces.models import Block, BlockSearch, Dataset, SearchPending, Trace
from traces.selectors.annotations import annotations_matching

NUL = "\x00"


# The longest words of the search (its lexemes, as the query has them: lower case) as
# LIKE patterns, escaped. Every lexeme of a payload's text vector is a piece of the
# payload, so a block whose payload lacks one (in any case) cannot match: LIKE says so
# about 8 times faster than to_tsvector reads it (100 MB of real runs: 1.3 s against
# 10.6 s). It is a filter before the exact condition, so it may look at less than the
# words: their first PREFILTER_CHARS characters (a word's prefix is in the text where
# the word is), of the PREFILTER_WORDS longest words (the rarest), in the text search
# reads (SEARCH_TEXT_CHARS), lowered once. A search of 167 short words scanned each block
# 167 times (16 s over 400 pending traces), a 500-character word took 7 s over ten
# blocks of 1.9 MB, each pattern lowered the whole payload again.
PREFILTER_WORDS = 8
PREFILTER_CHARS = 64
_PG_PATTERNS = (
    rf"ARRAY(SELECT '%%' || replace(replace(replace(left(word, {PREFILTER_CHARS}), '\', "
    r"'\\'), '%%', '\%%'), '_', '\_') || '%%' FROM unnest(tsvector_to_array(to_tsvector("
    "'simple'::regconfig, {text}))) AS word "
    f"ORDER BY length(word) DESC, word LIMIT {PREFILTER_WORDS})"
)


# The characters of a block's stored text that search reads on PostgreSQL. A text vector
# holds at most 1 MB and to_tsvector raises past it, while a message may be 2 MB: one such
# block stopped the worker for everyone and made a search fail. 100,000 characters (at
# most 400 KB of UTF-8) make a vector well under 1 MB: each word costs its own bytes plus
# at most 6 (entry and position). SQLite's scan reads the whole text.
SEARCH_TEXT_CHARS = 100_000


def pg_document_sql(payload_sql: str) -> str:
    """The text vector search reads of a payload: the same for the worker's stored
    document and for a pending trace read directly, so both sides find the same blocks.

    The payload is JSON text, where a line break is written `\\n`: read as it is, the word
    after each line break took the `n` (`line\\nbreak` made `line` and `nbreak`, and a
    search of `break` missed it); likewise tabs and carriage returns. They are read as the
    spaces they are: first each escaped backslash (`\\\\`, a separator to the parser
    anyway), so that a backslash of the text before an `n` (`C:\\\\new`) leaves the word
    whole, then `\\n`, `\\r` and `\\t` (migration 0022 queued every trace to be indexed
    again)."""
    text = f"left({payload_sql}, {SEARCH_TEXT_CHARS})"
    for escape in ("\\\\", "\\n", "\\r", "\\t"):
        text = f"replace({text}, '{escape}', ' ')"
    return f"to_tsvector('simple'::regconfig, {text})"


class PgTextMatch(Func):
    """A payload's text vector, computed on the fly, against the words searched: what
    search reads of a trace the worker has not indexed yet (SearchPending). The payload
    column as Django compiles it, so that it keeps working when the query is nested and
    its table renamed. The words' LIKE first (_PG_PATTERNS), the exact condition after."""

    output_field = BooleanField()

    def as_sql(self, compiler, connection, **extra):
        payload_sql, payload_params = compiler.compile(self.source_expressions[0])
        text_sql, text_params = compiler.compile(self.source_expressions[1])
        sql = (
            f"(lower(left({payload_sql}, {SEARCH_TEXT_CHARS})) "
            f"LIKE ALL ({_PG_PATTERNS.format(text=text_sql)}) "
            f"AND {pg_document_sql(payload_sql)} @@ {_pg_query(text_sql)})"
        )
        return sql, [*payload_params, *text_params, *payload_params, *text_params]


class PgDocumentMatch(Func):
    """A stored text vector (BlockSearch.document, the GIN index) against the words."""

    output_field = BooleanField()

    def as_sql(self, compiler, connection, **extra):
        document_sql, document_params = compiler.compile(self.source_expressions[0])
        text_sql, text_params = compiler.compile(self.source_expressions[1])
        return f"{document_sql} @@ {_pg_query(text_sql)}", [*document_params, *text_params]


class PgBlockMatch(Func):
    """One block's match, whichever side of the worker its trace is: its payload read
    directly while its trace is pending, else its stored vector. For a trace's own blocks
    (the page's in-trace find): per block, a probe of two primary keys."""

    output_field = BooleanField()

    def as_sql(self, compiler, connection, **extra):
        compiled = [compiler.compile(expression) for expression in self.source_expressions]
        (id_sql, id_params), (trace_sql, trace_params) = compiled[:2]
        (payload_sql, payload_params), (text_sql, text_params) = compiled[2:]
        query = _pg_query(text_sql)
        sql = (
            f"CASE WHEN EXISTS (SELECT 1 FROM {SearchPending._meta.db_table} pending "
            f"WHERE pending.trace_id = {trace_sql}) "
            f"THEN {pg_document_sql(payload_sql)} @@ {query} "
            f"ELSE EXISTS (SELECT 1 FROM {BlockSearch._meta.db_table} indexed "
            f"WHERE indexed.block_id = {id_sql} AND indexed.document @@ {query}) END"
        )
        return sql, [*trace_params, *payload_params, *text_params, *id_params, *text_params]


def _pg_query(text_sql: str) -> str:
    return f"plainto_tsquery('simple'::regconfig, {text_sql})"


# A search qualifier: `is:error` keeps the tool results marked as errors (Block.is_error),
# alone (every trace with a tool error) or with words (its errors that hold them).
ERROR_QUALIFIER = "is:error"


def search_qualified(text: str) -> tuple[str, bool]:
    """The text of a search without its qualifier, and whether it asks for tool errors."""
    words = text.split()
    if not any(word.lower() == ERROR_QUALIFIER for word in words):
        return text, False
    return " ".join(word for word in words if word.lower() != ERROR_QUALIFIER), True


def _searched_blocks(*, errors_only: bool) -> QuerySet[Block]:
    """The blocks of the kinds search reads (traces/kinds.py: `searched`; the search
    worker indexes only these); only tool errors when `errors_only`."""
    blocks = Block.objects.filter(is_error=True) if errors_only else Block.objects.all()
    searched = kinds.searched_sub_types()
    if len(searched) < len(kinds.KINDS):  # every kind searched: no condition to plan
        blocks = blocks.filter(sub_type__in=searched)
    return blocks


def blocks_matching(*, text: str, errors_only: bool = False) -> QuerySet[Block]:
    """The blocks whose payload text holds `text`, among the kinds search reads; only
    tool errors when `errors_only`. On PostgreSQL a condition per block: filter it to a
    trace's blocks (across traces, `_pg_hits` lets the GIN index find them)."""
    blocks = _searched_blocks(errors_only=errors_only)
    if connection.vendor == "postgresql":
        return blocks.filter(PgBlockMatch(F("pk"), F("trace_id"), F("payload"), Value(text)))
    return blocks.filter(payload__icontains=text)


def _pg_hits(*, traces: QuerySet[Trace], text: str, errors_only: bool) -> tuple[str, list]:
    """SQL of a WITH clause whose `hits` are the (trace_id, block_id) of the blocks matching
    `text` (PostgreSQL), for a search among `traces`: the GIN index's hits among the
    indexed traces (of any dataset: the caller keeps its own), and the pending traces
    among `traces` read directly; the caller adds its SELECT from `hits`. A trace is on
    one side or the other, never both (an indexed trace queued again may hold stale
    vectors), so results are the same before and after the worker.

    The pending traces among `traces` are a query of their own (`waiting`), run once.
    Given as a subquery, under statistics taken before a large import (a search right
    after it, before autovacuum's ANALYZE), the planner ran it again for each block that
    matched: more than 18 minutes for 4,222 traces queued; 21 s as a query of its own
    under the same statistics, 1 s once they are fresh (trace_import refreshes them)."""
    pending = SearchPending.objects.filter(trace_id=OuterRef("trace_id"))
    indexed = BlockSearch.objects.filter(PgDocumentMatch(F("document"), Value(text)))
    indexed = indexed.filter(~Exists(pending))
    if errors_only:
        indexed = indexed.filter(block__is_error=True)
    waiting = SearchPending.objects.filter(trace__in=traces.values("pk")).values("trace_id")
    try:
        waiting_sql, waiting_params = waiting.query.sql_with_params()
    except EmptyResultSet:  # `traces` can match none (its own filter says so)
        waiting_sql, waiting_params = "SELECT NULL::varchar AS trace_id WHERE false", ()
    direct = _searched_blocks(errors_only=errors_only).filter(
        trace_id__in=RawSQL("SELECT trace_id FROM waiting", [])
    )
    direct = direct.filter(PgTextMatch(F("payload"), Value(text)))
    both = indexed.values_list("trace_id", "block_id").union(
        direct.values_list("trace_id", "id"), all=True
    )
    both_sql, both_params = both.query.sql_with_params()
    return (
        f"WITH waiting AS MATERIALIZED ({waiting_sql}), hits AS MATERIALIZED ({both_sql})",
        [*waiting_params, *both_params],
    )


def _unquoted(text: str) -> str:
    """The text inside the quotes a reader typed as in a web search ("nonstop"): the
    payload is JSON text, in which a quote would only match an escaped one."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].strip()
    return text


def traces_matching(*, traces: QuerySet[Trace], text: str) -> QuerySet[Trace]:
    """The traces among `traces` with a block whose content matches `text` (`is:error`
    in it: with a tool error, holding the rest of the text if any)."""
    text, errors_only = search_qualified(text.strip())
    text = _unquoted(text.strip())
    if errors_only:
        traces = traces.filter(tool_errors__gt=0)
    if not text:
        return traces
    if NUL in text:
        return traces.none()
    if connection.vendor != "postgresql":
        in_blocks = Q(pk__in=blocks_matching(text=text, errors_only=errors_only).values("trace_id"))
    else:
        # The index's hits first, then their traces. Given the hits as a subquery it may
        # pull up (EXISTS or IN), the planner walked every trace of the dataset and
        # recomputed the text vector of each of its blocks: the GIN index unused,
        # O(dataset) per search. A MATERIALIZED CTE keeps the hits a query of their own,
        # which only the index (and the pending traces' blocks) answers, run once: as a
        # plain subquery (OFFSET 0), the inner side of a nested loop under a low estimate
        # of the dataset's traces, it ran again for each trace, and the pending traces'
        # scan with it (130 s for 4,222 traces pending).
        with_hits, params = _pg_hits(traces=traces, text=text, errors_only=errors_only)
        in_blocks = Q(pk__in=RawSQL(f"{with_hits} SELECT trace_id FROM hits", params))
    # Labels and comments match too. They are few and short: the condition grows only
    # when one matches at all, so that a search that matches none keeps the plan above.
    notes = annotations_matching(text=text)
    if not errors_only and notes.exists():
        return traces.filter(in_blocks | Exists(notes.filter(trace_id=OuterRef("pk"))))
    return traces.filter(in_blocks)


# A hit's snippet: this many characters of the block's stored text, from a little before
# the first word searched (the database cuts it: a huge block costs no transfer).
SNIPPET_BEFORE = 50
SNIPPET_CHARS = 220


@dataclass(frozen=True)
class SearchHit:
    """Where a trace matches a search: its first matching block, and a piece of that
    block's stored content (JSON text) around the first word searched."""

    block_id: str
    sub_type: str
    piece: str
    cut_before: bool  # the piece starts after the block's beginning
    cut_after: bool  # and ends before its end

    @classmethod
    def of(cls, block_id: str, sub_type: str, piece: str, start: int, size: int) -> "SearchHit":
        """From a block's id and sub type and its SNIPPET_COLUMNS (`with_snippet`)."""
        cut_after = start - 1 + SNIPPET_CHARS < size
        return cls(block_id, sub_type, piece or "", start > 1, cut_after)


def search_words(text: str) -> list[str]:
    """The words a search looks for, as a snippet highlights them: a quoted phrase is
    one; a qualifier is none."""
    text = search_qualified(text.strip())[0].strip()
    unquoted = _unquoted(text)
    if not unquoted or NUL in unquoted:
        return []
    return [unquoted] if unquoted != text else unquoted.split()


def _first_hits(*, trace_ids: list[str], text: str, errors_only: bool) -> dict[str, str]:
    """The first block (by id, which is creation order) of each of these traces whose
    content matches `text` (a tool error, when `errors_only`; any, when no text)."""
    if not text:  # is:error alone: the few tool errors have an index of their own
        hits = Block.objects.filter(trace_id__in=trace_ids, is_error=True)
        return dict(
            hits.values("trace_id").annotate(first=Min("id")).values_list("trace_id", "first")
        )
    if connection.vendor != "postgresql":
        rows = (
            blocks_matching(text=text, errors_only=errors_only)
            .filter(trace_id__in=trace_ids)
            .values("trace_id")
            .annotate(first=Min("id"))
            .values_list("trace_id", "first")
        )
        return dict(rows)
    # As traces_matching does: the GIN index's hits first, then these traces'.
    among = Trace.objects.filter(pk__in=trace_ids)
    with_hits, params = _pg_hits(traces=among, text=text, errors_only=errors_only)
    with connection.cursor() as cursor:
        cursor.execute(
            f"{with_hits} SELECT trace_id, min(block_id) FROM hits "
            "WHERE trace_id = ANY(%s) GROUP BY trace_id",
            [*params, list(trace_ids)],
        )
        return dict(cursor.fetchall())


def search_hits(*, trace_ids: list[str], text: str) -> dict[str, SearchHit]:
    """For each of these traces (a page of a list), where it matches the search `text`:
    bounded work per trace (one block, a piece of it cut by the database). A trace that
    matches only by a label or comment has none."""
    words = search_words(text)
    rest, errors_only = search_qualified(text.strip())
    if not trace_ids or not (words or errors_only) or NUL in text:
        return {}
    first = _first_hits(trace_ids=trace_ids, text=_unquoted(rest.strip()), errors_only=errors_only)
    if not first:
        return {}
    rows = with_snippet(Block.objects.filter(pk__in=first.values()), words).values_list(
        "trace_id", "id", "sub_type", *SNIPPET_COLUMNS
    )
    return {trace_id: SearchHit.of(*hit) for trace_id, *hit in rows}


SNIPPET_COLUMNS = ("piece", "start", "size")


def with_snippet(blocks: QuerySet[Block], words: list[str]) -> QuerySet[Block]:
    """`blocks` with SNIPPET_COLUMNS: a piece of each one's stored text from a little
    before the first of `words` (cut by the database: a huge block costs no transfer),
    where it starts and the text's size."""
    at = StrIndex(Lower("payload"), Value(words[0].lower())) if words else Value(0)
    return (
        blocks.annotate(at=at)
        .annotate(start=Greatest(F("at") - SNIPPET_BEFORE, 1), size=Length("payload"))
        .annotate(piece=Substr("payload", F("start"), SNIPPET_CHARS))
    )


def datasets_matching(*, datasets: QuerySet[Dataset], text: str) -> QuerySet[Dataset]:
    """The datasets among `datasets` whose name holds `text`, in any case."""
    if not text:
        return datasets
    if NUL in text:
        return datasets.none()
    return datasets.filter(name__icontains=text)


def traces_being_indexed(*, trace_ids: list[str]) -> set[str]:
    """Which of these traces (a page of a list) the search worker has not indexed yet:
    search reads their payloads directly meanwhile. None on SQLite, which scans."""
    if connection.vendor != "postgresql" or not trace_ids:
        return set()
    rows = SearchPending.objects.filter(trace_id__in=trace_ids)
    return set(rows.values_list("trace_id", flat=True))


def traces_being_indexed_count(*, traces: QuerySet[Trace]) -> int:
    """How many of `traces` (a dataset's) wait for the search worker: the queue's rows
    (few: the worker keeps up), each checked against its trace, O(queue) not O(dataset)."""
    if connection.vendor != "postgresql":
        return 0
    return SearchPending.objects.filter(trace__in=traces.values("pk")).count()
