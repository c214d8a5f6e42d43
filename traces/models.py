"""The store: organizations, datasets, traces and their immutable blocks."""

import uuid
from functools import reduce
from operator import or_

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now

from traces import ids, kinds
from traces.jsontext import JSONTextField

# The choices follow the table of block kinds (traces/kinds.py): block_type follows
# from sub_type (DESIGN.md).
SubType = models.TextChoices("SubType", [(s, s) for s in kinds.SUB_TYPES])
BlockType = models.TextChoices("BlockType", [(lane, lane) for lane in kinds.LANES])


def _type_matches_sub_type() -> Q:
    return reduce(or_, (Q(sub_type=k.sub_type, block_type=k.lane) for k in kinds.KINDS))


def _parent_presence() -> Q:
    roots = [k.sub_type for k in kinds.KINDS if k.parent is None]
    rooted = {"sub_type": roots[0]} if len(roots) == 1 else {"sub_type__in": roots}
    return Q(**rooted, parent__isnull=True) | (~Q(**rooted) & Q(parent__isnull=False))


class RandomUUID(models.Func):
    """A new random UUID made by the database: the default of a trace's `uuid` for the
    raw bulk inserts (imports, benchmarks) that do not name the column. SQLite keeps a
    UUID as its 32 hex digits."""

    output_field = models.UUIDField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return "gen_random_uuid()", []

    def as_sqlite(self, compiler, connection, **extra_context):
        return "(lower(hex(randomblob(16))))", []


# Decision, numbers: a reward counts only as a finite number within ±REWARD_LIMIT, so
# that every aggregate of the pages stays finite whatever is stored (PostgreSQL's AVG
# keeps a running sum of squares: one reward of 1e200 overflows it). The bound leaves
# room for any score a benchmark reports; validation refuses a number beyond it at every
# way in, and the database refuses it in the reward column.
REWARD_LIMIT = 1e12
# The same bound for a usage figure (cost in dollars, duration in seconds).
USAGE_LIMIT = REWARD_LIMIT


class Organization(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"
        VIEWER = "viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organization"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class Dataset(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=ids.dataset_id, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="datasets"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    metadata = JSONTextField(default=dict, blank=True)
    is_public = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The id Invariant Explorer's clients know it by (/api/v1, traces/invariant); /v1 and
    # the pages keep `id`.
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="dataset_name_unique")
        ]
        indexes = [models.Index(fields=["organization", "-updated_at"])]

    def __str__(self) -> str:
        return self.name


# What the trace list sorts by as "tokens": NULL unless both counts are known.
TOTAL_TOKENS = F("input_tokens") + F("output_tokens")


def sort_index(*columns: str) -> models.Index:
    """The index that sorts a dataset's traces by `columns` then index, walked forwards or
    backwards. A nullable column sorts with its NULLs last both ways: its descending
    index, NULLS LAST, is made by migration 0016 in each database's own words (SQLite
    takes no NULLS LAST in an index)."""
    return models.Index("dataset", *columns, "index", name=f"trace_sort_{columns[0]}")


class Trace(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=ids.trace_id, editable=False)
    # No index of their own: the composite indexes below start with these columns.
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="traces", db_index=False
    )
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="traces", null=True, blank=True,
        db_index=False,
    )  # fmt: skip
    index = models.IntegerField(default=0)
    name = models.CharField(max_length=500, blank=True, default="")
    metadata = JSONTextField(default=dict, blank=True)
    extra = JSONTextField(default=dict, blank=True)
    # Derived from extra.reward, else metadata.reward: kept as a column so that
    # accuracy, histograms and filters are plain SQL.
    reward = models.FloatField(null=True, blank=True)
    block_count = models.IntegerField(default=0)
    # Blocks per sub type, and orphans under "ORPHAN" (traces/order.py), kept by every
    # write so that the trace page never counts the trace's blocks.
    block_counts = JSONTextField(default=dict, db_default={}, blank=True)
    # How many of its TOOL_RESULT blocks are tool errors (Block.is_error).
    tool_errors = models.IntegerField(default=0, db_default=0)
    # SHA-256 of what an import stored (name, metadata, every block): importing the same
    # trace into the same dataset again is skipped (pass@k must never count copies).
    # Empty for a trace made through the API.
    content_hash = models.CharField(max_length=64, blank=True, default="", db_default="")
    # Usage figures, where the format of an import carries them (null otherwise): tokens
    # the model read and wrote, what the run cost in US dollars, how long it took. The
    # importer keeps the format's own figures in metadata as written; these columns take
    # them only when they are plain numbers (tokens whole and not negative, cost and
    # duration finite, not negative and within USAGE_LIMIT).
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    # The task and trial its metadata names (traces/trials.py), for the trace list's
    # columns and sorts: "" and NULL when it names none.
    task = models.CharField(max_length=200, blank=True, default="", db_default="")
    trial = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The id Invariant Explorer's clients know it by (/api/v1); /v1 and the pages keep `id`.
    uuid = models.UUIDField(
        default=uuid.uuid4, db_default=RandomUUID(), unique=True, editable=False
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(cost_usd__isnull=True) | Q(cost_usd__gte=0, cost_usd__lte=USAGE_LIMIT),
                name="trace_cost_in_range",
            ),
            models.CheckConstraint(
                condition=Q(duration_seconds__isnull=True)
                | Q(duration_seconds__gte=0, duration_seconds__lte=USAGE_LIMIT),
                name="trace_duration_in_range",
            ),
            models.CheckConstraint(
                condition=Q(input_tokens__isnull=True) | Q(input_tokens__gte=0),
                name="trace_input_tokens_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(output_tokens__isnull=True) | Q(output_tokens__gte=0),
                name="trace_output_tokens_not_negative",
            ),
            models.UniqueConstraint(
                fields=["dataset", "index"],
                condition=Q(dataset__isnull=False),
                name="trace_index_unique_in_dataset",
            ),
            models.CheckConstraint(
                condition=Q(reward__isnull=True)
                | Q(reward__gte=-REWARD_LIMIT, reward__lte=REWARD_LIMIT),
                name="trace_reward_in_range",
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "index"]),
            models.Index(fields=["organization", "created_at"]),
            models.Index(fields=["dataset", "content_hash"], name="trace_dataset_content_hash"),
            # The trace list's sorts (traces/selectors/trace_filters.py TRACE_SORTS): each
            # walks an index from the dataset's first row, so a page costs the rows it shows.
            sort_index("reward"),
            sort_index("block_count"),
            sort_index("tool_errors"),
            sort_index("name"),
            sort_index("task", "trial"),
            sort_index("trial"),
            sort_index("cost_usd"),
            sort_index("duration_seconds"),
            models.Index("dataset", TOTAL_TOKENS, "index", name="trace_sort_tokens"),
        ]

    def __str__(self) -> str:
        return self.name or self.id


class Block(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=ids.block_id, editable=False)
    # No index of its own: block_number starts with trace_id.
    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="blocks", db_index=False
    )
    block_type = models.CharField(max_length=8, choices=BlockType.choices)
    sub_type = models.CharField(max_length=12, choices=SubType.choices)
    # On PostgreSQL only the deferred triggers block_parent_same_trace_* (migrations
    # 0002, 0018 and 0023) hold this column: the single-column key is dropped there.
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="children",
        db_column="parent_block_id",
    )
    payload = JSONTextField()
    metadata = JSONTextField(default=dict, blank=True)
    raw = JSONTextField(null=True, blank=True)
    extra = JSONTextField(default=dict, blank=True)
    # Copies of payload.call_id / payload.seq, so that the database itself
    # enforces the duplicate rules. A result without `seq` has NULL here: several of
    # them under one call are legal (spec/004), so the constraint skips NULLs.
    call_id = models.CharField(max_length=256, null=True, blank=True)
    result_seq = models.BigIntegerField(null=True, blank=True)
    # A TOOL_RESULT the format marks as a tool error (Inspect's `error`, tau2's `error:
    # true`, a tool message flagged as error). A database default, so that bulk writes
    # that do not name the column store False.
    is_error = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Its place in the stitched order (traces/order.py), set when it is written: a page
    # reads any part of a trace with one range query on block_stitched_order.
    turn = models.IntegerField(null=True, blank=True)  # NULL: an orphan
    act = models.IntegerField(default=0, db_default=0)
    step = models.SmallIntegerField(default=0, db_default=0)
    # The how-manieth block of its trace it is (1, 2, ... in the order written): "go to
    # block n" and the block's number on the page.
    number = models.IntegerField(null=True, blank=True)
    # What the trace page drew of it that does not depend on the reader (its head, body
    # preview, badges), prefixed by the renderer's version: explorer/trace_page.py fills
    # it when the page first shows the block and reads it after. NULL: not drawn yet. A
    # write that changes the payload or metadata sets it back to NULL.
    rendered = models.TextField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["trace", "call_id"],
                condition=Q(sub_type="TOOL_CALL"),
                name="block_unique_call_id",
                violation_error_code="DUPLICATE_CALL_ID",
            ),
            models.UniqueConstraint(
                fields=["trace", "call_id", "result_seq"],
                condition=Q(sub_type="TOOL_RESULT", result_seq__isnull=False),
                name="block_unique_result_seq",
                violation_error_code="DUPLICATE_RESULT_SEQ",
            ),
            models.CheckConstraint(
                condition=_type_matches_sub_type(), name="block_type_matches_sub_type"
            ),
            models.CheckConstraint(condition=_parent_presence(), name="block_parent_presence"),
        ]
        indexes = [
            models.Index(
                fields=["trace", "turn", "act", "step", "result_seq", "created_at", "id"],
                name="block_stitched_order",
            ),
            models.Index(fields=["trace", "number"], name="block_number"),
            # A trace's tool errors: few, so only they are indexed.
            models.Index(
                fields=["trace", "created_at", "id"],
                condition=Q(is_error=True),
                name="block_tool_errors",
            ),
        ]

    def __str__(self) -> str:
        return self.id


# A trace's blocks in the order they were written: by `number`, which every writer
# keeps (block_number's order; an index on created_at and id as well cost an import of
# 100 MB 0.3 s on each database); a block written around them (the ORM, the admin) has
# none and comes after them, by time.
WRITTEN_ORDER = (F("number").asc(nulls_last=True), "created_at", "id")


class Image(models.Model):
    """An inline image of one organization, stored once there by the SHA-256 of its bytes
    (DESIGN.md, images). It is read only through a trace linked to it (TraceImage): the
    import writes the link when it stores the trace with the image, and the image goes
    when the last trace linked to it does."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="images", db_index=False
    )
    sha256 = models.CharField(max_length=64)
    mime_type = models.CharField(max_length=100)
    data = models.BinaryField()
    size = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "sha256"], name="image_unique_in_org")
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.mime_type}, {self.size} B)"


class TraceImage(models.Model):
    """The trace was stored with the image: the one way to read the image."""

    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="image_links", db_index=False
    )
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="trace_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace", "image"], name="trace_image_unique")
        ]


class ApiKey(models.Model):
    """A bearer key of one organization. Only its SHA-256 is stored: keys are long and
    random, so a fast hash is as safe as a slow one and keeps every request cheap."""

    id = models.CharField(primary_key=True, max_length=32, default=ids.api_key_id, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=200, blank=True, default="")
    # A key acts with this role in its organization (traces.policy), as a member would.
    role = models.CharField(
        max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER
    )
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The key that made this one (Explorer's keys/create called with a key), revoked with
    # it: else a key could mint keys that outlive its revocation.
    minted_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="minted"
    )

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"


class Label(models.Model):
    """A word of a dataset's own vocabulary of failure labels ("wrong tool", "gave up"),
    which its annotations tag traces and blocks with."""

    id = models.CharField(primary_key=True, max_length=32, default=ids.label_id, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="label_name_unique")
        ]

    def __str__(self) -> str:
        return self.name


class Annotation(models.Model):
    """The one model of what a reader says about a trace or one of its blocks: a label of
    the dataset's vocabulary, a free comment, or both. A reward stays in `extra`
    (DESIGN.md), the spec's place for it."""

    id = models.CharField(
        primary_key=True, max_length=32, default=ids.annotation_id, editable=False
    )
    # No index of its own: annotation_trace starts with trace_id.
    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="annotations", db_index=False
    )
    block = models.ForeignKey(
        Block, on_delete=models.CASCADE, related_name="annotations", null=True, blank=True
    )
    label = models.ForeignKey(
        Label, on_delete=models.CASCADE, related_name="annotations", null=True, blank=True
    )
    comment = models.TextField(blank=True, default="")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Invariant Explorer's anchor (traces/addresses.py: `messages[i]`, `...content:L3`,
    # `...content:4-9`, `...:bbox-x1,y1,x2,y2`), kept byte for byte as a client sent it:
    # an address may point nowhere, and is then shown on the trace, not refused. NULL: none.
    address = models.TextField(null=True, blank=True)
    # Explorer's free JSON of an annotation (`source`, `status`, `severity`...); NULL: none.
    extra_metadata = JSONTextField(null=True, blank=True)
    # The id Invariant Explorer's clients know it by (/api/v1); /v1 keeps `id`.
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)

    class Meta:
        constraints = [
            # An Explorer note anchored by its address may have empty text (a highlight).
            models.CheckConstraint(
                condition=Q(label__isnull=False) | ~Q(comment="") | Q(address__isnull=False),
                name="annotation_label_or_comment",
            ),
        ]
        indexes = [models.Index(fields=["trace", "created_at"], name="annotation_trace")]

    def __str__(self) -> str:
        return self.id


class OtelSpan(models.Model):
    """One OpenTelemetry span received at /otlp/v1/traces (traces/otel/), kept as decoded,
    so that the trace's blocks can be derived again from all its spans when a later batch
    brings more (spans arrive in any order). The unique (trace, span_id) makes a re-sent
    span (an exporter's retry) a no-op, however many requests race."""

    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="otel_spans", db_index=False
    )
    otel_trace_id = models.CharField(max_length=32)  # hex, as OTLP/JSON writes it
    span_id = models.CharField(max_length=16)
    start_ns = models.BigIntegerField()
    span = JSONTextField()  # traces.otel.decode's dict of it
    size = models.IntegerField(default=0)  # bytes of `span` as JSON: a trace's are capped
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace", "span_id"], name="otel_span_unique")
        ]
        indexes = [
            models.Index(fields=["otel_trace_id"], name="otel_span_trace_id"),
        ]

    def __str__(self) -> str:
        return f"{self.otel_trace_id}/{self.span_id}"


class TraceEvent(models.Model):
    """One event of a trace as an Invariant Explorer client pushed or uploaded it (after the
    contract's image and argument rewriting), at its place in the trace: /api/v1 answers a
    trace's `messages` from these, never rebuilt from blocks, which lose what the lanes do
    not show. Its blocks (written through traces/ingest like any chat import) are the
    `block_count` blocks numbered from `first_block` (Block.number): an append may put an
    event between two others, and so moves positions, never block numbers."""

    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    position = models.IntegerField()
    event = JSONTextField()
    # The event's `timestamp` as an instant (UTC) for the append's merge; NULL: none.
    timestamp = models.DateTimeField(null=True, blank=True)
    first_block = models.IntegerField(null=True, blank=True)
    block_count = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace", "position"], name="trace_event_position")
        ]

    def __str__(self) -> str:
        return f"{self.trace_id}[{self.position}]"


class TextVectorField(models.TextField):
    """PostgreSQL's `tsvector` (a text column on SQLite, where nothing writes it)."""

    def db_type(self, connection):
        return "tsvector" if connection.vendor == "postgresql" else super().db_type(connection)


class BlockSearch(models.Model):
    """The full-text index of block content on PostgreSQL (migration 0019): a block's
    stored text vector, written by the search worker (traces/services/search_index.py)
    after the import, not on the import's path. Only the sub types search reads
    (traces/kinds.py). SQLite scans the payloads and leaves this table empty.

    The keys are plain columns here (no Django constraint, nothing for Django's cascade to
    collect): the migration adds foreign keys ON DELETE CASCADE on PostgreSQL, so that any
    delete of a block or trace, set-based or not, takes its rows with it."""

    block = models.OneToOneField(
        Block, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False,
        related_name="+",
    )  # fmt: skip
    trace_id = models.CharField(max_length=32)  # the worker replaces a trace's rows at once
    document = TextVectorField()

    class Meta:
        db_table = "traces_block_search"
        indexes = [models.Index(fields=["trace_id"], name="block_search_trace")]


class SearchPending(models.Model):
    """A trace whose blocks were written (inserted, or payload changed) since the search
    worker last indexed it: triggers on traces_block queue it (migration 0019), the worker
    takes it off. Search reads a pending trace's payloads directly meanwhile, so that its
    results never depend on the worker's progress."""

    trace = models.OneToOneField(
        Trace, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False,
        related_name="+",
    )  # fmt: skip
    queued_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "traces_search_pending"
