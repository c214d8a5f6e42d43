"""What a format adapter yields: traces to import and dataset metadata."""

import math
from collections.abc import Iterable, Iterator
from dataclasses import astuple, dataclass, field, fields
from typing import Any, BinaryIO, Protocol

from traces import jsontext
from traces.models import USAGE_LIMIT

# ijson reads this much at a time. yajl scans a string again from its start each time a
# read ends inside it: reads of 1 MB keep that near linear for the strings a trace may
# hold (reads of 64 KB made a 40 MB string take minutes).
PARSE_BUFFER = 1 << 20


TOKENS_LIMIT = (1 << 63) - 1  # a BigInteger column


def _tokens(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= TOKENS_LIMIT else None


def _amount(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0 <= value <= USAGE_LIMIT else None


@dataclass(frozen=True)
class Usage:
    """A trace's usage figures (the Trace columns of the same names), where its format
    carries them. The format's own figures stay in the trace's metadata as written; a
    figure here is None where the format has none or has something other than a plain
    number (a negative count, NaN, a string), so a strange figure never refuses a run."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    duration_seconds: float | None = None

    @classmethod
    def of(
        cls,
        *,
        input_tokens: Any = None,
        output_tokens: Any = None,
        cost_usd: Any = None,
        duration_seconds: Any = None,
    ) -> "Usage":
        """The figures a format gave, each kept only when it is a plain number."""
        return cls(
            _tokens(input_tokens), _tokens(output_tokens), _amount(cost_usd),
            _amount(duration_seconds),
        )  # fmt: skip

    def row(self) -> tuple[Any, ...]:
        """The values in the order of USAGE_COLUMNS."""
        return astuple(self)


USAGE_COLUMNS = tuple(f.name for f in fields(Usage))


@dataclass
class TraceDraft:
    """One trace as a format adapter read it, before validation.

    Exactly one of `events` (chat format, spec/000) or `blocks` (spec/004) is set.
    `events` may be an iterator that reads them from the file as they are converted
    (a long JSON Lines line, traces/ingest/streamed.py): then it is read once.
    `location` says where it came from, for problem reports ({"trace": 3} or
    {"line": 12}).
    """

    location: dict[str, Any]
    events: Iterable[Any] | None = None
    blocks: list[Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    # What the adapter knows of the bytes it read the trace from, so that the importer
    # can skip a walk of every value: how deeply the JSON document nests (every value of
    # the draft nests at most that deep), and whether an inline image may be in it.
    depth: int | None = None
    images_possible: bool = True
    # A run that ended before its first turn (a crash the benchmark recorded) is kept as a
    # trace without blocks, with its error and reward, where the format says so.
    keep_empty: bool = False
    usage: Usage = field(default_factory=Usage)
    # The trace's own `extra` (client annotations: a reward set by a reader), where the
    # file carries it (a trace object, as this product's exports write it).
    extra: dict[str, Any] = field(default_factory=dict)
    # A trace without a name in its content (an old SWE-agent .traj) is named by its file,
    # the file's name without its extension, where the format writes one run per file
    # named after the run.
    name_from_file: bool = False
    # Where runs of one task by several models or trials would share the name: the
    # importer adds " (2)", " (3)"... to a name the dataset or the upload has already.
    unique_name: bool = False
    # The labels and comments the line carries (traces/ingest/notes.py).
    notes: list[Any] = field(default_factory=list)


@dataclass
class DatasetMetadata:
    """Metadata for the dataset the file is imported into (e.g. a JSONL first line)."""

    metadata: dict[str, Any]


class FormatProblem(Exception):
    """The file cannot be read at all, or one part of it is broken."""

    def __init__(
        self, message: str, location: dict[str, Any] | None = None, rule: str = "format"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.location = location or {}
        self.rule = rule

    @classmethod
    def not_an_object(cls, key: str, value: Any, location: dict[str, Any]) -> "FormatProblem":
        """`key` holds something other than a JSON object: refused, never read as {}."""
        return cls(
            f"`{key}` must be a JSON object, not {jsontext.type_name(value)}",
            {**location, "field": key},
            rule="json_object",
        )


@dataclass(frozen=True)
class Sniff:
    """What detection may look at: the first bytes, and for a JSON object file its top keys."""

    head: bytes
    first_char: str
    top_keys: frozenset[str]
    # For a JSON array: the keys of its first item, when that is an object.
    item_keys: frozenset[str] = frozenset()
    # More than one top-level JSON value: JSON Lines.
    multiple: bool = False
    # A zip archive (Inspect's .eval): the names of its members; None for a JSON file.
    zip_names: frozenset[str] | None = None


Item = TraceDraft | DatasetMetadata | FormatProblem


class Adapter:
    """What every format adapter has, given where its one instance (`FORMAT`) is made:
    its name, and one line on how a file of it is recognised (Format)."""

    def __init__(self, *, name: str, recognised_by: str) -> None:
        self.name = name
        self.recognised_by = recognised_by


class Format(Protocol):
    """One input format. `read` yields drafts; a broken part is yielded (not raised) as a
    FormatProblem so that reading goes on and every problem is reported."""

    name: str
    # One line on how a file of this format is recognised, for the refusal of a file that
    # is none of them.
    recognised_by: str

    def detect(self, sniff: Sniff) -> bool: ...

    def read(self, stream: BinaryIO) -> Iterator[Item]: ...


# Every format, filled by traces/ingest/registry.py (which imports the adapters, so an
# adapter reads the list here instead of importing the registry).
KNOWN: list[Format] = []


def known_formats() -> str:
    """Each known format with how it is recognised, one a line."""
    return "\n".join(f"- {fmt.name}: {fmt.recognised_by}" for fmt in KNOWN)
