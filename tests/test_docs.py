"""The README and docs/: links resolve inside the repository, the README's two
commands are the ones CI runs, and its tour names only commands the app has."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

INSTALL_AND_RUN = (
    "pip install . && windowfit fit sample_transcripts/en_coding_session.jsonl --budget 100000 -o fitted.jsonl"
)
INSTALL_AND_TEST = "pip install -e '.[test]' && pytest"
TOUR = ("report", "fit", "check", "replay", "audit", "fetch", "store")

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(path: Path, *, keep_code: bool = False) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with inline code spans blanked out
    unless ``keep_code`` (headings keep theirs: they are part of the anchor)."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line if keep_code else CODE_SPAN.sub("", line)))
    return lines


def links(path: Path) -> list[tuple[int, str]]:
    return [(number, m.group(1)) for number, line in prose_lines(path) for m in LINK.finditer(line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text without markup, lower case,
    punctuation removed, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN")  # any script
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path, keep_code=True):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_slug_follows_github() -> None:
    assert slug("`windowfit report FILE... [--budget N]`") == "windowfit-report-file---budget-n"
    assert slug("Exit codes") == "exit-codes"
    assert slug("The `safe` estimator's counter") == "the-safe-estimators-counter"
    assert slug("Токены по письму") == "токены-по-письму"


def test_link_pattern_finds_links_and_images_but_not_code() -> None:
    page = "[a](docs/x.md) and ![img](docs/p.png) and `[b](nowhere.md)`"
    assert [m.group(1) for m in LINK.finditer(CODE_SPAN.sub("", page))] == ["docs/x.md", "docs/p.png"]


def test_there_are_pages_to_check() -> None:
    assert README.exists()
    assert {p.name for p in DOCS} >= {"commands.md", "contract.md", "extending.md", "formats.md", "library.md"}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_points_to_a_file_in_the_repository(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if SCHEME.match(target):
            continue  # a web address: not a file of ours
        where = f"{page_id(page)}:{number}: {target}"
        path_part, _, anchor = target.partition("#")
        if "shared/" in path_part or path_part.startswith("/"):
            broken.append(f"{where} leaves the repository")
            continue
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{where} leaves the repository")
        elif not resolved.exists():
            broken.append(f"{where} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{where}: no heading with anchor #{anchor} in {page_id(resolved)}")
    assert broken == []


def test_readme_starts_with_the_two_commands() -> None:
    blocks = re.findall(r"^```\w*\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
    assert [b.strip() for b in blocks[:2]] == [INSTALL_AND_RUN, INSTALL_AND_TEST]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert INSTALL_AND_TEST in lines


def tour_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"^\$ windowfit ([a-z][a-z-]*)", text, re.M)


def test_readme_tour_shows_every_command_it_names() -> None:
    assert sorted(set(tour_commands())) == sorted(TOUR)


def test_every_command_in_the_readme_tour_exists_in_the_app() -> None:
    from windowfit.cli.app import app

    names = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if c.callback}
    assert set(tour_commands()) <= names
