"""Figures in the hand-written prose of README.md and docs/*.md name the committed file that holds them.

A figure with a unit (s, min, h, ms, KB, MB, MiB, GB, GiB, a ratio written ``1.26x``, a percentage) outside a
generated block is read from somewhere: its paragraph links that file or names its path (``bench/...``,
``experiments/measured/...``, a report's notebook or ``metrics/`` file), and the path exists. A table counts with
the paragraph just above it, its caption, and a paragraph of findings with the earlier paragraphs of its section
(a measurement opens with its command). A figure copied from a generated block of the same page is sourced by
the block, which names its file. Two kinds of figure are not measurements and are not asked for a file: the
level of an interval ("95% interval", "95% paired-bootstrap") and a figure the paragraph attributes to the paper.

docs/results.md goes further, since it says so of itself: every number of two or more digits in its prose is in a
generated block of the page (rounded as shown) or in a file named in the paragraph or earlier in its section.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from specter_utils.paths import REPO_ROOT

UNIT = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:s|min|h|ms|KB|MB|MiB|GB|GiB|%)|x)(?![\w/])")
NOT_MEASURED = re.compile(r"\b95\s?%\s+(paired|interval|CI|confidence|bootstrap)", re.IGNORECASE)
PAPER = re.compile(r"\bthe paper\b|\bpaper's\b", re.IGNORECASE)
GENERATED = re.compile(r"<!-- generated:(\S+) -->(.*?)<!-- /generated:\1 -->", re.DOTALL)
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
LINK = re.compile(r"\]\(([^)#\s]+)")
CODE = re.compile(r"`([^`]*)`")
NUMBER = re.compile(r"(?<![\w.\-/])[-+]?\d[\d,]*(?:\.\d+)?(?![\w/])")


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """(line, paragraph) of ``text``'s prose: generated blocks, fenced code and comments blanked out, each table
    joined to the paragraph above it."""
    for pattern in (GENERATED, FENCE, COMMENT):
        text = pattern.sub(_blank, text)
    pieces, position = [], 0
    for piece in re.split(r"\n\s*\n", text):
        start = text.index(piece, position)
        position = start + len(piece)
        if piece.strip():
            line = text.count("\n", 0, start + len(piece) - len(piece.lstrip())) + 1
            if piece.lstrip().startswith("|") and pieces:
                pieces[-1] = (pieces[-1][0], pieces[-1][1] + "\n\n" + piece)
            else:
                pieces.append((line, piece))
    yield from pieces


def named_files(paragraph: str, folder: Path) -> list[Path]:
    """The committed files and folders a paragraph links or names by path."""
    paths = [folder / target for target in LINK.findall(paragraph)]
    for span in CODE.findall(paragraph):
        for word in span.split():
            if "/" in word:
                word = word.strip("'\",;:()")
                paths += [REPO_ROOT / word, folder / word]
    return [path for path in paths if path.exists()]


def in_scope(text: str, folder: Path) -> Iterator[tuple[int, str, list[Path]]]:
    """(line, paragraph, files) for each paragraph: the committed files it or an earlier paragraph of its section
    names (a measurement opens with its command; its table and findings follow)."""
    files: list[Path] = []
    for line, paragraph in paragraphs(text):
        if paragraph.lstrip().startswith("#"):
            files = []
        files = files + named_files(paragraph, folder)
        yield line, paragraph, files


def unsourced_figures(text: str, folder: Path) -> list[tuple[int, list[str]]]:
    """(line, figures) for each paragraph that gives a measured figure with no committed file in scope; a figure
    copied from a generated block of the page is sourced there."""
    blocks = " ".join(block.group(2) for block in GENERATED.finditer(text))
    found = []
    for line, paragraph, files in in_scope(text, folder):
        prose = CODE.sub(" ", NOT_MEASURED.sub(" ", paragraph))
        figures = [figure for figure in UNIT.findall(prose) if figure not in blocks]
        if figures and not PAPER.search(prose) and not files:
            found.append((line, figures))
    return found


DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_figure_with_a_unit_names_the_file_that_holds_it(path):
    hits = unsourced_figures(path.read_text(encoding="utf-8"), path.parent)
    assert not hits, "\n".join(f"{path.relative_to(REPO_ROOT)}:{line}: {figures}" for line, figures in hits)


def test_a_figure_without_its_file_fails():
    text = (
        "Intro.\n\nEmbedding took 84.6 s and 2.2 GB.\n\nThe same, from `bench/bench_index.py`: 84.6 s.\n\nThen 2 s.\n"
    )
    assert unsourced_figures(text, REPO_ROOT / "docs") == [(3, ["84.6 s", "2.2 GB"])]
    assert unsourced_figures(text + "\n## Next\n\nIt took 3 s.\n", REPO_ROOT) == [
        (3, ["84.6 s", "2.2 GB"]),
        (11, ["3 s"]),
    ]
    assert unsourced_figures("It ran 1.26x local.\n", REPO_ROOT) == [(1, ["1.26x"])]
    assert not unsourced_figures("Each 95% interval covers the queries.\n", REPO_ROOT)
    table = "From [`pipeline.json`](reports/demo/pipeline.json):\n\n| a | b |\n|---|---|\n| 1 | 3 s |\n"
    assert not unsourced_figures(table, REPO_ROOT)
    block = "<!-- generated:t -->\nFrom `x`: 91%\n<!-- /generated:t -->\n\nThe share is 91%, then 92%.\n"
    assert unsourced_figures(block, REPO_ROOT) == [(5, ["92%"])]


def _number(token: str) -> float:
    return float(token.replace(",", "").lstrip("+"))


def untraced_numbers(text: str, folder: Path) -> list[tuple[int, list[str]]]:
    """(line, numbers) for each paragraph of ``text`` with a number of two or more digits that is neither in a
    generated block of ``text`` (at the precision shown) nor in a file in the paragraph's scope."""
    shown = [m.group(0) for block in GENERATED.finditer(text) for m in NUMBER.finditer(block.group(2))]
    found = []
    for line, paragraph, in_view in in_scope(text, folder):
        files = [path for path in in_view if path.is_file()]
        held = shown + [m.group(0) for path in files for m in NUMBER.finditer(path.read_text(errors="ignore"))]
        missing = []
        for token in NUMBER.findall(CODE.sub(" ", paragraph)):
            if len(re.sub(r"\D", "", token)) < 2:
                continue
            decimals = len(token.split(".")[1]) if "." in token else 0
            value = _number(token)
            if not any(abs(round(abs(_number(other)), decimals) - abs(value)) < 1e-9 for other in held):
                missing.append(token)
        if missing:
            found.append((line, missing))
    return found


def test_every_number_in_the_results_prose_is_in_a_block_or_a_named_file():
    path = REPO_ROOT / "docs" / "results.md"
    hits = untraced_numbers(path.read_text(encoding="utf-8"), path.parent)
    assert not hits, "\n".join(f"docs/results.md:{line}: {numbers}" for line, numbers in hits)


def test_a_number_typed_by_hand_is_untraced():
    text = "<!-- generated:t -->\n| x | 12.345 |\n<!-- /generated:t -->\n\nIt scores 12.35, then 13.1.\n"
    assert untraced_numbers(text, REPO_ROOT) == [(5, ["13.1"])]
