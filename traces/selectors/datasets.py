from traces.errors import NotFound
from traces.models import Dataset, Organization


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
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in dataset.name) or "dataset"
    return f"{safe}.{fmt}.jsonl"
