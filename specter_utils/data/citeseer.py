"""CiteSeer with text (LINQS CiteSeer, Sen et al. 2008; texts from the TAPE repository): a folder of two files.

- ``citeseer_texts.txt`` (or ``.txt.gz``): three lines per paper: the key, the title and abstract run together,
  the label (one of 6 topics: Agents, AI, DB, HCI, IR, ML). A line count that is not a multiple of 3 is an error
  naming the file and the line of the incomplete paper.
- ``citeseer.cites`` (or ``.cites.gz``): ``CITED<TAB>CITING`` per line, **the cited paper first** (the LINQS
  order); the reader turns each line into a ``(citing, cited)`` edge.

**Title and abstract.** The text line is the title and the abstract joined by a space, with no separator
(``Argument in Multi-Agent Systems Multi-agent systems research is concerned...``). Titles here are in title
case and abstracts in sentence case, so :func:`split_title_abstract` ends the title where the title-case run
ends: at the first lowercase word that is not a small word of titles (``of``, ``in``, ``and``, ...), the
abstract starts at the last capitalised word before it (its first word, ``Multi-agent``), or at that lowercase
word when it opens an abstract (``this paper``, ``we``: texts whose abstract lost its first words); a title
does not end in a capitalised ``The``, ``In``, ``If``, which go to the abstract. Measured on the 3,186 papers:
3,051 texts split. A hand check of 100 papers drawn with ``random.Random(2024)`` found 85 split right, 8 with one
to four words on the wrong side (``... on the Internet More than || 50 years ago``), 5 whose title part holds
header text the source kept (authors, a table of contents) and 2 not split. A text with no boundary, or whose
title part would exceed 40 words, is kept whole as the title with an empty abstract and counted
(``text_not_split``, 135 papers): no paper loses its text, and ``-abstract`` still removes the abstract of the
other 96%. Why not the whole text as the title: then every paper would have an empty abstract and the
``-abstract`` ablation, which this corpus is the one to show, would measure nothing.

**Papers cited without text.** The LINQS graph cites 141 keys that have no text in this distribution (15 absent
from LINQS's own content file, 126 without a text in TAPE's); 335 of the 4,732 lines name one. Those keys are
listed in ``bundled/citeseer/keys_without_text.txt``: an edge naming one is counted
(``edge_to_key_without_text``) and dropped. Any other key that is not a paper of the text file is an error
naming the file and line (a typo, or the text file of another corpus); ``unknown="drop"`` counts and drops
those too, for a CiteSeer-format corpus of one's own with papers missing. Self-links are counted
(``self_link_dropped``: 120, the other 4 of the 124 name a key without text) and dropped; a repeated line is an
error. The real files read with 4,277 citations among the 3,186 papers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from specter_utils.data.corpus import Corpus
from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError
from specter_utils.io import iter_text_lines

TEXTS_FILE = "citeseer_texts.txt"
CITES_FILE = "citeseer.cites"
LABEL_FIELD = "topic"
UNKNOWN_POLICIES = ("error", "drop")
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled" / "citeseer"
KEYS_WITHOUT_TEXT_FILE = BUNDLED_DIR / "keys_without_text.txt"
MAX_TITLE_WORDS = 40  # a longer title part is a table of contents or a title-case sentence: keep the text whole

# Lowercase words that may sit inside a title-case title.
_TITLE_SMALL_WORDS = frozenset(
    "a an the and or nor but for of in on at to by with from into onto via vs vs. versus as over under using "
    "towards toward through within without between among upon per its their is are be do does not about against "
    "beyond across after before during than that which when where how what why".split()
)
# Lowercase words that open an abstract whose first word was lost ("... Independence this paper we discuss").
_ABSTRACT_OPENERS = frozenset(("this", "we", "our", "here", "these"))
_SENTENCE_OPENERS = _TITLE_SMALL_WORDS | {"if", "although", "while", "since", "recently"}
_STRIP = "()[]\"',.:;?!"


def find_file(src: Path, name: str) -> Path | None:
    """``src/name`` or ``src/name.gz``, whichever exists."""
    return next((path for path in (src / name, src / f"{name}.gz") if path.is_file()), None)


def is_citeseer_dir(src: Path) -> bool:
    """Whether ``src`` is a folder holding the CiteSeer text and cites files."""
    return src.is_dir() and find_file(src, TEXTS_FILE) is not None and find_file(src, CITES_FILE) is not None


def bundled_dir() -> Path:
    """The CiteSeer copy shipped inside the package (both files gzipped)."""
    return BUNDLED_DIR


@lru_cache(maxsize=1)
def keys_without_text() -> frozenset[str]:
    """The keys the LINQS CiteSeer graph cites that have no text in this distribution (shipped with the package)."""
    return frozenset(line.strip() for _, line in iter_text_lines(KEYS_WITHOUT_TEXT_FILE) if line.strip())


def _is_capitalised(word: str) -> bool:
    word = word.lstrip(_STRIP)
    return bool(word) and (word[0].isupper() or word[0].isdigit())


def split_title_abstract(text: str) -> tuple[str, str] | None:
    """``(title, abstract)`` of a CiteSeer text line, or None where no boundary is found (the module's rule)."""
    words = text.split()
    last_capitalised = None
    i = 0
    for i, word in enumerate(words):
        core = word.strip(_STRIP).lower()
        if _is_capitalised(word):
            last_capitalised = i
        elif not (core in _TITLE_SMALL_WORDS or not core or not word[0].isalpha()):
            break
    else:
        return None
    if words[i].lower() in _ABSTRACT_OPENERS and i > 0:
        start = i - 1 if words[i - 1] in ("In", "in") else i  # "... Horn Theories In this paper, we ..."
    elif last_capitalised:
        start = last_capitalised
    else:
        return None
    while start > 1 and words[start - 1][:1].isupper() and words[start - 1].lower() in _SENTENCE_OPENERS:
        start -= 1  # a title does not end in "The", "If", "In": "... Bipartite Graphs The Web harbors ..."
    title, abstract = " ".join(words[:start]).rstrip(" .:"), " ".join(words[start:])
    return None if not title or len(title.split()) > MAX_TITLE_WORDS else (title, abstract)


def iter_citeseer_texts(path: str | Path) -> Iterator[tuple[int, str, str, str]]:
    """Yield ``(key_line, key, text, label)`` per paper of a texts file, streaming; malformed input: DataError."""
    path = Path(path)
    block: list[tuple[int, str]] = []
    last = 0
    for line_number, line in iter_text_lines(path):
        last = line_number
        block.append((line_number, line))
        if len(block) < 3:
            continue
        (key_line, key), (_, text), (label_line, label) = block
        block = []
        key, label = key.strip(), " ".join(label.split())
        if not key or any(ch.isspace() for ch in key):
            raise DataError(f"paper key is empty or holds spaces: {key[:60]!r} (3 lines per paper)", path, key_line)
        if not label or " " in label:
            raise DataError(
                f"label line is empty or holds spaces: {label[:60]!r} (3 lines per paper: key, text, label)",
                path,
                label_line,
                key,
            )
        yield key_line, sys.intern(key), " ".join(text.split()), sys.intern(label)
    if block:
        raise DataError(
            f"{last} lines is not a multiple of 3: the paper whose key is on line {block[0][0]} has "
            f"{'no text or label line' if len(block) == 1 else 'no label line'} (3 lines per paper: key, text, label)",
            path,
            block[0][0],
        )
    if last == 0:
        raise DataError("empty file: no papers", path)


def read_citeseer_texts(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """``{key: Paper}`` of a texts file; the label goes to ``extras["class_labels"]`` (the ``topic`` label field)."""
    path, report = Path(path), report if report is not None else ReadReport()
    papers: dict[str, Paper] = {}
    lines: dict[str, int] = {}
    for key_line, key, text, label in iter_citeseer_texts(path):
        if key in lines:
            raise DataError(f"duplicate paper key (first seen on line {lines[key]})", path, key_line, key)
        lines[key] = key_line
        if not text:
            raise DataError("empty text line (3 lines per paper: key, text, label)", path, key_line + 1, key)
        split = split_title_abstract(text)
        if split is None:
            report.note("text_not_split", key)
        title, abstract = split or (text, "")
        papers[key] = Paper(paper_id=key, title=title, abstract=abstract, extras={"class_labels": [label]})
    return papers


def read_citeseer_edges(
    path: str | Path, papers: dict[str, Paper], report: ReadReport | None = None, unknown: str = "error"
) -> list[tuple[str, str]]:
    """``(citing, cited)`` edges of a ``CITED<TAB>CITING`` file, streaming; the rule is in the module docstring."""
    if unknown not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")
    path, report = Path(path), report if report is not None else ReadReport()
    without_text = keys_without_text()
    edges: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for line_number, line in iter_text_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise DataError(
                f"expected 'CITED<TAB>CITING' (two keys, one tab), got {len(parts)} field(s): {line[:60]!r}",
                path,
                line_number,
            )
        cited, citing = sys.intern(parts[0].strip()), sys.intern(parts[1].strip())
        if (citing, cited) in seen:
            raise DataError(f"repeats line {seen[citing, cited]}", path, line_number)
        seen[citing, cited] = line_number
        missing = [key for key in (cited, citing) if key not in papers]
        if missing:
            known_gap = all(key in without_text for key in missing)
            if not known_gap and unknown == "error":
                role = "cited (first) key" if missing[0] == cited else "citing (second) key"
                raise DataError(
                    f"the {role} {missing[0]!r} is not a paper of the texts file (nor one of the keys CiteSeer "
                    "cites without text); read with --unknown-papers drop to count and drop such lines",
                    path,
                    line_number,
                )
            report.note("edge_to_key_without_text" if known_gap else "edge_to_unknown_key", missing[0])
            continue
        if citing == cited:
            report.note("self_link_dropped", citing)
            continue
        edges.append((citing, cited))
    if not seen:
        raise DataError("empty file: no citation lines", path)
    return edges


def read_citeseer(src: str | Path | None = None, unknown: str = "error") -> Corpus:
    """Read a CiteSeer folder (default: the copy bundled with the package) into a Corpus labelled by topic."""
    src = Path(src) if src is not None else bundled_dir()
    if not src.exists():
        raise DataError("CiteSeer folder not found", src)
    if not src.is_dir():
        raise DataError(f"expected a folder holding {TEXTS_FILE} and {CITES_FILE} (or .gz)", src)
    texts, cites = find_file(src, TEXTS_FILE), find_file(src, CITES_FILE)
    for name, found in ((TEXTS_FILE, texts), (CITES_FILE, cites)):
        if found is None:
            raise DataError(f"no {name} (or {name}.gz) in the CiteSeer folder", src)
    report = ReadReport(source=str(src))
    papers = read_citeseer_texts(texts, report)
    edges = read_citeseer_edges(cites, papers, report, unknown)
    corpus = Corpus(name="citeseer", papers=papers, edges=edges, report=report, label_field=LABEL_FIELD)
    corpus.info["format"] = "citeseer"
    if src.resolve() == bundled_dir():
        corpus.info["bundled"] = True
    return corpus
