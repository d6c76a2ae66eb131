"""Comparative words in the hand-written prose of README.md, docs/*.md and the notebooks' markdown cells.

A comparative word (higher, lower, larger, smaller, beats, better, worse, above, below, remains, outperforms,
exceeds) outside a generated block (``<!-- generated:NAME -->`` ... ``<!-- /generated:NAME -->``, written by the
verdict rule from the reports) is a verdict on a result unless its sentence shows one of four things:

1. **Mention, not use.** The word sits in inline code or in double quotes: a label the verdict rule prints, or a
   flag, is named, not applied.
2. **A place on the page.** "above" or "below" right after a noun of the page (the table above, the command below)
   or right before punctuation (as measured above, ...): it points at text, not at a result.
3. **A setting or a definition.** The word qualifies a setting (a larger batch, a smaller budget, a higher learning
   rate), names a bound or a size threshold (a lower bound, above 200,000 papers), sits in a condition ("when its
   MAP is above the base's": a rule, not a result), or defines the verdict rule's vocabulary ("higher or lower only
   where ...", "lower is better"). The vocabulary is ``SETTING``, ``CONDITION`` and ``DEFINITION`` below, kept short
   on purpose: a new phrase is added there, with its kind, not per line.
4. **A stated test.** The sentence names its numbers and the test behind the word: a 95% interval written
   ``[low, high]``, an adjusted p value, an interval said to lie above or below 0, or a figure against a stated
   limit ("0.9952, above the 0.99 limit"); or it names its numbers and says that their comparison is not tested
   (the reader gets the figures and no verdict).

Anything else fails with file:line, so a verdict is either generated or written as the numbers alone ("+6.98
[+4.92, +9.13] against +5.62 [+3.95, +7.35], intervals overlap").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from specter_utils.paths import REPO_ROOT

WORD = re.compile(
    r"\b(higher|lower|larger|smaller|beats?|better|worse|above|below|remains?|outperforms?|exceeds?)\b", re.IGNORECASE
)
# 2. a noun of the page before "above"/"below", or punctuation after it
PAGE = re.compile(
    r"\b(tables?|figures?|commands?|rows?|blocks?|rules?|lists?|sections?|runs?|experiments?|settings?|text|notes?|"
    r"folders?|one|ones|steps?|cells?|links?|files?|measurements?|sentences?|times?|ratios?|levers?|charts?|"
    r"embeddings|layers?|floors?|it|here|see|as)"
    r"\s+(above|below)\b|\b(above|below)\s*(?=[.,;:)]|$)",
    re.IGNORECASE,
)
# 3. settings and definitions: the word qualifies what a run is set to, or defines a direction or the rule's words
SETTING = re.compile(
    r"\b(higher|lower|larger|smaller)\s+(learning rates?|batch(es)?|budgets?|models?|benchmarks?|bounds?|lengths?|"
    r"margins?|temperatures?|C|k|nprobe|efSearch|corpus|corpora)\b"
    r"|\bbatches\s+(far\s+)?larger\b"
    r"|\b(above|below)\s+\d[\d,.]*\s*(M\b|k\b|\s+(papers|vectors|records)\b)",
    re.IGNORECASE,
)
# 3. a condition: the word inside "when ...", "if ...", "unless ..." states a rule, not a result
CONDITION = re.compile(r"\b(when|if|unless)\b[^.;:]{0,80}", re.IGNORECASE)
DEFINITION = re.compile(
    r"\bhigher or lower\b|\b(higher|lower) is better\b|\bremains? to be\b|\b(larger|smaller) seed sd\b",
    re.IGNORECASE,
)
# 4. a stated test: an interval, an adjusted p value, an interval placed against 0, a figure against a limit, or
# numbers whose comparison the sentence says is not tested
TEST = re.compile(
    r"\[[-+]?\d[\d.]*,\s*[-+]?\d[\d.]*\]|\badj(usted|\.)?\s+p\b|\bp\s*[<=]\s*0?\.\d"
    r"|\binterval[^.;]{0,60}?\b(above|below)\s+0\b|\b(above|below)\s+the\s+[\d.]+\s+(limit|threshold)\b"
    r"|^(?=.*\d)(?=.*\bnot\s+tested\b)",
    re.IGNORECASE,
)
MENTION = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”")
GENERATED = re.compile(r"<!-- generated:(\S+) -->.*?<!-- /generated:\1 -->", re.DOTALL)
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\[`\"-])|\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\||#))")


def _blank(match: re.Match) -> str:
    """Keep a removed span's newlines so that line numbers still count from the file's start."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose(text: str) -> str:
    """``text`` with generated blocks, fenced code and comments blanked out, line numbers kept."""
    for pattern in (GENERATED, FENCE, COMMENT):
        text = pattern.sub(_blank, text)
    return text


def sentences(text: str) -> Iterator[tuple[int, str]]:
    """(line number of its first character, sentence) for each sentence of ``text``'s prose."""
    text = prose(text)
    start = 0
    for end in [m.start() for m in SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            yield text.count("\n", 0, start + lead) + 1, " ".join(piece.split())
        start = end


def verdicts(sentence: str) -> list[str]:
    """The comparative words of ``sentence`` that none of the module docstring's four reasons allows."""
    used = MENTION.sub(" ", sentence)
    if TEST.search(used):
        return []
    allowed = [m.span() for pattern in (PAGE, SETTING, CONDITION, DEFINITION) for m in pattern.finditer(used)]
    return [m.group(0) for m in WORD.finditer(used) if not any(low <= m.start() < high for low, high in allowed)]


def documents() -> Iterator[tuple[str, str]]:
    """(name, text) of README.md, each docs/*.md and each notebook's markdown cells (named notebook#cell)."""
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        yield str(path.relative_to(REPO_ROOT)), path.read_text(encoding="utf-8")
    for path in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                yield f"{path.relative_to(REPO_ROOT)}#cell{number}", "".join(cell["source"])


def offending(text: str, name: str) -> list[str]:
    """``name:line: word: sentence`` for every verdict word of ``text`` that no reason allows."""
    return [
        f"{name}:{line}: {word}: {sentence[:140]}" for line, sentence in sentences(text) for word in verdicts(sentence)
    ]


def test_no_verdict_word_outside_generated_blocks_without_its_rule():
    hits = [hit for name, text in documents() for hit in offending(text, name)]
    assert not hits, "\n".join(hits)


def test_a_verdict_on_a_result_fails_and_names_its_line():
    text = "# Results\n\nSome setup.\nOn hep-th the trained model scores higher than its base.\n"
    assert offending(text, "docs/x.md") == [
        "docs/x.md:4: higher: On hep-th the trained model scores higher than its base."
    ]
    assert verdicts("The gain remains under matched negatives (65%).") == ["remains"]
    assert verdicts("TF-IDF is above every baseline.") == ["above"]


def test_the_four_reasons_allow_what_they_say_and_no_more():
    assert not verdicts('A difference reads "higher" when the rule says so.')
    assert not verdicts("The table above holds every row.")
    assert not verdicts("A larger batch takes more memory per step.")
    assert not verdicts("A difference is called higher or lower only where its adj. p is under 0.05.")
    assert not verdicts("Trained is higher on cite (+2.22 [+1.72, +2.74]).")
    assert not verdicts("Each matched-negative interval lies above 0.")
    assert not verdicts("Its interval over the test queries lies above 0 on cite.")
    assert not verdicts("TF-IDF has 56.72 against 78.97, the larger; the rows are not tested against each other.")
    assert verdicts("TF-IDF falls far below the trained model; the rows are not tested.") == ["below"]
    assert verdicts("The trained model is higher than the table above.") == ["higher"]


def test_generated_blocks_code_and_comments_are_not_prose():
    text = "a\n<!-- generated:x -->\nhigher\n<!-- /generated:x -->\n```\nlower\n```\nb is larger\n"
    assert [(line, s) for line, s in sentences(text)] == [(1, "a"), (8, "b is larger")]


def test_every_scanned_document_exists():
    names = [name for name, _ in documents()]
    assert "README.md" in names and "docs/results.md" in names
    assert any(name.startswith("notebooks/") for name in names)
    assert all((REPO_ROOT / name.split("#")[0]).is_file() for name in names)
    assert Path(REPO_ROOT / "docs").is_dir()
