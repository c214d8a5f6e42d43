import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from traces.errors import ImportFailed, TraceStoreError
from traces.problems import problem_line
from traces.services.imports import SKIPPED_IN_UPLOAD, trace_import
from traces.services.organizations import organization_get_or_create


def _opened_one_at_a_time(paths: list[Path]) -> Iterator[tuple[str, BinaryIO]]:
    """Each file open only while it is read: thousands of files never hold thousands of
    file descriptors."""
    for path in paths:
        with path.open("rb") as handle:
            yield str(path), handle


def progress_of(bar: tqdm) -> Callable[[int], None]:
    """The import's progress on `bar`; once every byte is read, it says that the write
    (one transaction, a few seconds for hundreds of MB) is under way."""

    def advance(read: int) -> None:
        bar.update(read)
        if bar.total and bar.n >= bar.total:
            bar.set_description_str("read; writing")

    return advance


DEFAULT_ORG = "default"


class Command(BaseCommand):
    help = "Import trace files (any supported format) into a dataset, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--dataset", required=True, help="dataset name (created if needed)")
        parser.add_argument(
            "--org",
            default=None,
            help=f"organization slug (created if new); without it, {DEFAULT_ORG!r}",
        )
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--allow-duplicates",
            action="store_true",
            help="import traces the dataset already has (same content) again",
        )

    def handle(self, *args, paths, dataset, org, no_progress, allow_duplicates, **options):
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        total = sum(p.stat().st_size for p in paths)
        show = not no_progress and sys.stderr.isatty()
        # No monitor thread (tqdm starts one for every bar, even one not shown): the
        # import's part readers write their rows with SQLite only when forked from a
        # process without another thread (traces/forked.py `alone`; attacker review).
        tqdm.monitor_interval = 0
        bar = tqdm(total=total, unit="B", unit_scale=True, disable=not show, file=sys.stderr)
        if org is None:
            org = DEFAULT_ORG
            self.stdout.write(
                f"No --org given: importing into organization {org!r} "
                f"(give --org <slug> to choose one)."
            )
        try:
            organization = organization_get_or_create(slug=org)
            result = trace_import(
                organization=organization,
                dataset_name=dataset,
                files=_opened_one_at_a_time(paths),
                progress=progress_of(bar),
                allow_duplicates=allow_duplicates,
            )
        except ImportFailed as exc:
            bar.close()
            for found in exc.problems:
                self.stderr.write(problem_line(found))
            raise CommandError(exc.message) from None
        except TraceStoreError as exc:
            raise CommandError(exc.message) from None
        finally:
            bar.close()
        self.stdout.write(
            f"Imported {result.traces} traces, {result.blocks} blocks, {result.images} images "
            f"into dataset {result.dataset.name!r} ({result.dataset.pk}) "
            f"of organization {organization.slug!r} "
            f"in {result.seconds:.2f} s"
        )
        if result.skipped:
            self.stdout.write(
                f"Skipped {len(result.skipped)} duplicate trace"
                f"{'' if len(result.skipped) == 1 else 's'}, the dataset's or repeated "
                "in these files (--allow-duplicates imports them again):"
            )
            for found in result.skipped:
                where = ", ".join(f"{k} {found[k]}" for k in ("line", "trace") if k in found)
                why = "repeated" if found.get("reason") == SKIPPED_IN_UPLOAD else "in the dataset"
                name = found["name"] or "(no name)"
                self.stdout.write(f"  {found['file']}, {where}: {name} ({why})")
        if result.metadata_kept:
            self.stdout.write("Dataset metadata not written (each trace keeps its file's):")
            for kept in result.metadata_kept:
                why = (
                    "the files disagree"
                    if kept["reason"] == SKIPPED_IN_UPLOAD
                    else "the dataset's value kept"
                )
                self.stdout.write(f"  {kept['key']!r} from {kept['file']}: {why}")
