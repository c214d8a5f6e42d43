"""What a successful upload says on the page it lands on (the dataset's): how many traces
and blocks it wrote, which file gave which, and each duplicate it left out with why.

The upload view renders it (templates/explorer/upload.html's `summary` partial) into one
Django message, so that the dataset page shows it whether the upload came from htmx
(HX-Redirect) or from the plain form (a redirect). Bounded: an upload of thousands of
files or duplicates lists the first few and counts the rest, so that the message stays
small (it travels in the session).
"""

from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from traces.services.imports import SKIPPED_IN_UPLOAD, ImportResult

FILES_SHOWN = 20
SKIPPED_SHOWN = 10
NAME_CHARS = 80  # of a skipped trace's name (the whole name is in its title)
REASONS = {
    SKIPPED_IN_UPLOAD: "repeats a trace earlier in this upload",
}
IN_DATASET_REASON = "the dataset already has it"


@dataclass(frozen=True)
class SkippedRow:
    file: str
    where: str  # "line 3", "trace 0" (as the importer counts them, like its problems)
    name: str
    short_name: str
    reason: str
    # The labels and comments the line brought, not given to the trace the dataset has.
    annotations: int = 0


def _where(found: dict[str, Any]) -> str:
    return ", ".join(f"{key} {found[key]}" for key in ("line", "trace") if key in found)


def _short(name: str) -> str:
    name = " ".join(name.split())
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1].rstrip() + "…"


def upload_summary_context(result: ImportResult) -> dict[str, Any]:
    skipped = [
        SkippedRow(
            file=found.get("file", ""),
            where=_where(found),
            name=found.get("name") or "",
            short_name=_short(found.get("name") or ""),
            reason=REASONS.get(found.get("reason", ""), IN_DATASET_REASON),
            annotations=found.get("annotations", 0),
        )
        for found in result.skipped[:SKIPPED_SHOWN]
    ]
    in_upload = sum(1 for found in result.skipped if found.get("reason") == SKIPPED_IN_UPLOAD)
    return {
        "result": result,
        "dataset": result.dataset,
        "files": result.files[:FILES_SHOWN],
        "more_files": max(0, len(result.files) - FILES_SHOWN),
        "skipped": skipped,
        "skipped_total": len(result.skipped),
        "more_skipped": max(0, len(result.skipped) - SKIPPED_SHOWN),
        "skipped_in_upload": in_upload,
        "skipped_in_dataset": len(result.skipped) - in_upload,
        "metadata_disagreed": sorted(
            {kept["key"] for kept in result.metadata_kept if kept["reason"] == SKIPPED_IN_UPLOAD}
        )[:SKIPPED_SHOWN],
        "metadata_in_dataset": [
            kept["key"] for kept in result.metadata_kept if kept["reason"] != SKIPPED_IN_UPLOAD
        ][:SKIPPED_SHOWN],
    }


def upload_summary_html(result: ImportResult) -> SafeString:
    """The summary, every value escaped by the template."""
    return render_to_string("explorer/upload.html#summary", upload_summary_context(result))
