"""Icons are SVG files in static/, never emoji: no template, script or style sheet of the
product holds a pictograph (Unicode category So: emoji, dingbats, geometric shapes...)."""

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = sorted(
    [*ROOT.joinpath("templates").rglob("*.html")]
    + [*ROOT.joinpath("static", "js").rglob("*.js")]
    + [*ROOT.joinpath("static", "css").rglob("*.css")]
)


def pictographs(text: str) -> list[tuple[int, str, str]]:
    """(line, character, its Unicode name) of every symbol of category So, or an emoji
    presentation selector, in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for char in line:
            if unicodedata.category(char) == "So" or char == "\ufe0f":
                found.append((number, char, unicodedata.name(char, hex(ord(char)))))
    return found


def test_pictographs_finds_emoji_and_symbols_but_not_typography():
    text = "ok — “quoted” · 1–2 ≥ ← …\nthumb 👍 plus ➕ mark ◆ star ★\ufe0f"
    assert [char for _, char, _ in pictographs(text)] == ["👍", "➕", "◆", "★", "\ufe0f"]
    assert {line for line, _, _ in pictographs(text)} == {2}


def test_the_checked_files_include_every_page_template_and_script():
    names = {path.relative_to(ROOT).as_posix() for path in CHECKED}
    assert {"templates/base.html", "templates/explorer/trace.html", "static/js/trace.js"} <= names


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_template_or_script_holds_a_pictograph(path: Path):
    assert pictographs(path.read_text(encoding="utf-8")) == []


def test_every_icon_a_template_names_is_an_svg_file_in_static():
    named = set()
    for path in CHECKED:
        named |= set(re.findall(r"""icons/[\w.-]+""", path.read_text(encoding="utf-8")))
    assert {"icons/thumb-up.svg", "icons/thumb-down.svg", "icons/brand-mark.svg"} <= named
    for icon in named:
        assert icon.endswith(".svg") and ROOT.joinpath("static", icon).is_file(), icon
