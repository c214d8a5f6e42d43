import unicodedata
from dataclasses import dataclass
from urllib.parse import quote

from django.db.models import QuerySet

from traces.errors import NotFound
from traces.models import Dataset, Organization, Trace
from traces.selectors.search import datasets_matching
from traces.selectors.stats import dataset_accuracy, datasets_with_stats, with_first_user_message


def dataset_get_by_name(*, organization: Organization, name: str) -> Dataset:
    try:
        return Dataset.objects.get(organization=organization, name=name)
    except Dataset.DoesNotExist:
        raise NotFound(
            f"no dataset named {name!r} in organization {organization.slug!r}",
            {"dataset": name},
        ) from None


def organization_get(*, slug: str) -> Organization:
    try:
        return Organization.objects.get(slug=slug)
    except Organization.DoesNotExist:
        raise NotFound(f"no organization {slug!r}", {"org": slug}) from None


def dataset_export_filename(*, dataset: Dataset, fmt: str) -> str:
    """The export's file name: the dataset's name, letters and digits of any script kept,
    anything else (spaces, quotes, slashes, control and bidi characters) as `_`."""
    return _safe_filename(dataset.name, f".{fmt}.jsonl")


def _safe_filename(name: str, suffix: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "dataset"
    return f"{safe}{suffix}"


def _ascii_name(filename: str, suffix: str) -> str:
    """The file name for clients that know only `filename=`: accents dropped, any other
    non-ASCII character as `_`; "dataset" when nothing of the name is left."""
    decomposed = unicodedata.normalize("NFKD", filename)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    ascii_name = "".join(c if c.isascii() else "_" for c in plain)
    stem = ascii_name.removesuffix(suffix)
    return ascii_name if stem.strip("_.") else f"dataset{suffix}"


def dataset_export_disposition(*, dataset: Dataset, fmt: str) -> str:
    """The export's Content-Disposition (RFC 6266)."""
    return dataset_attachment_disposition(dataset=dataset, suffix=f".{fmt}.jsonl")


def dataset_attachment_disposition(*, dataset: Dataset, suffix: str) -> str:
    """A download of the dataset as a file named after it and ending in `suffix`, for
    Content-Disposition (RFC 6266): an ASCII `filename` every client reads, and where the
    name is not ASCII, `filename*` in UTF-8 (RFC 5987), which browsers prefer."""
    filename = _safe_filename(dataset.name, suffix)
    fallback = _ascii_name(filename, suffix)
    header = f'attachment; filename="{fallback}"'
    if fallback != filename:
        header += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return header


@dataclass(frozen=True)
class DatasetListing:
    """The datasets list: its rows, each with the statistics of `datasets_with_stats` and
    its `accuracy`; whether more datasets matched than it shows; and whether any dataset
    is readable at all (to tell "no match" from "no dataset")."""

    rows: list[Dataset]
    truncated: bool
    any_readable: bool


def datasets_listed(*, datasets: QuerySet[Dataset], text: str, limit: int) -> DatasetListing:
    """The `limit` most recently updated of `datasets` whose name matches `text`."""
    found = list(
        datasets_with_stats(datasets=datasets_matching(datasets=datasets, text=text))[: limit + 1]
    )
    rows = found[:limit]
    for dataset in rows:
        dataset.accuracy = dataset_accuracy(dataset)
    return DatasetListing(
        rows=rows,
        truncated=len(found) > limit,
        any_readable=bool(rows) or (bool(text) and datasets.exists()),
    )


def datasets_by_organization(*, datasets: QuerySet[Dataset]) -> list[tuple[str, list[Dataset]]]:
    """`datasets` grouped by their organization's slug, both in order (slug, name)."""
    groups: dict[str, list[Dataset]] = {}
    for dataset in datasets.select_related("organization").order_by("organization__slug", "name"):
        groups.setdefault(dataset.organization.slug, []).append(dataset)
    return list(groups.items())


def dataset_traces(*, dataset: Dataset) -> QuerySet[Trace]:
    return Trace.objects.filter(dataset=dataset)


def dataset_trace_rows(*, traces: QuerySet[Trace]) -> QuerySet[Trace]:
    """`traces` as a dataset's trace list shows them: without their metadata and extra
    (which may be large), with the payload of their first user message."""
    return with_first_user_message(traces.defer("metadata", "extra"))


def datasets_to_choose(*, datasets: QuerySet[Dataset], limit: int) -> list[Dataset]:
    """The datasets a picker offers (by organization, then name), with their organization."""
    ordered = Dataset.objects.filter(pk__in=datasets.values("pk")).select_related("organization")
    return list(ordered.order_by("organization__slug", "name")[:limit])
