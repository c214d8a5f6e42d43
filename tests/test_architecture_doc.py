"""docs/architecture.md stays true: every file or folder it names exists, every name it
says a file holds is in that file, and README links it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text(encoding="utf-8")

# `a/b.py`, `templates/explorer/<page>.html`... : code spans that look like paths.
PATHS = sorted(
    {
        span
        for span in re.findall(r"`([^`\s]+)`", TEXT)
        if "/" in span and not span.startswith(("/", "{")) and "<" not in span
    }
)
# "`NAME` in `path`" and "`NAME` (`path`)": a name the page says a file holds.
CLAIMS = sorted(
    set(re.findall(r"`(\w+)`(?: in | \()`([\w/]+\.(?:py|html))`", TEXT))
)


def test_the_page_names_paths_and_claims():
    assert len(PATHS) > 40 and len(CLAIMS) > 5


@pytest.mark.parametrize("path", PATHS)
def test_every_path_it_names_exists(path: str):
    assert (ROOT / path.rstrip("/")).exists(), path


@pytest.mark.parametrize("name, path", CLAIMS, ids=[f"{n}@{p}" for n, p in CLAIMS])
def test_every_name_it_places_is_in_that_file(name: str, path: str):
    assert re.search(rf"\b{name}\b", (ROOT / path).read_text(encoding="utf-8")), (name, path)


def test_readme_links_it():
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")
