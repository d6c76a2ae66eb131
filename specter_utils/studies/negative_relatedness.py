"""How related each mined paper of a run's training triplets is to its query: positives, hard and easy negatives.

For every triplet of a run's mined training triplets, each of the two papers (positive, negative) is checked
against the query, in the training graph and the corpus records:

- co-cited: some paper of the training graph cites both (what the co-cite task counts as relevant);
- shares an author with the query, and is in the same venue (where both have one).

A hard negative is a paper cited by one of the query's citations but not by the query. If many of them are
co-cited with the query or share its authors, a "hard negative" is often a true neighbour, which would explain why
dropping hard negatives does not hurt on such a corpus. The corpus and training graph are the run's own (its
``pipeline.json`` names the preset and overrides). ``experiments/negative_relatedness.py`` is the command line.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from specter_utils.data.specter_format import DIRECT_CITATION, read_graph
from specter_utils.errors import DataError
from specter_utils.io import read_json
from specter_utils.layout import DATA_FILE, PIPELINE_FILE, TRIPLETS_TRAIN_FILE
from specter_utils.runs import RunPaths
from specter_utils.spec import load_spec
from specter_utils.triplets.sampler import cocitation_graph
from specter_utils.workflow.prepare import load_corpus_for_run

ROLES = ("positive", "hard negative", "easy negative")


def relatedness(
    triplets: Iterable[Mapping[str, str]],
    cocited: Mapping[str, Mapping[str, int]],
    authors: Mapping[str, set[str]],
    venues: Mapping[str, str],
) -> dict[str, dict[str, float | int | None]]:
    """Per role: how many pairs (query, paper), and the share co-cited, sharing an author, in the same venue (the
    last two over the pairs where both papers have authors / a venue; None where none has)."""
    counts: dict[str, dict[str, int]] = {role: defaultdict(int) for role in ROLES}
    for t in triplets:
        query = t["query"]
        negative = "hard negative" if t.get("kind") == "hard" else "easy negative"
        for role, paper in (("positive", t["pos"]), (negative, t["neg"])):
            c = counts[role]
            c["pairs"] += 1
            c["co_cited"] += cocited.get(query, {}).get(paper) == DIRECT_CITATION
            if authors.get(query) and authors.get(paper):
                c["both_with_authors"] += 1
                c["shares_author"] += bool(authors[query] & authors[paper])
            if venues.get(query) and venues.get(paper):
                c["both_with_venue"] += 1
                c["same_venue"] += venues[query] == venues[paper]
    out: dict[str, dict[str, float | int | None]] = {}
    for role, c in counts.items():
        pairs, with_authors, with_venue = c["pairs"], c["both_with_authors"], c["both_with_venue"]
        out[role] = {
            "pairs": pairs,
            "co_cited": c["co_cited"] / pairs if pairs else None,
            "pairs_both_with_authors": with_authors,
            "shares_author": c["shares_author"] / with_authors if with_authors else None,
            "pairs_both_with_venue": with_venue,
            "same_venue": c["same_venue"] / with_venue if with_venue else None,
        }
    return out


def _share(value: float | None, of: int | None = None) -> str:
    """A share as a percentage, with the number of pairs it is over; n/a where there were none."""
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" + ("" if of is None else f" ({of:,})")


def markdown(result: Mapping[str, dict], source: str, triplets_file: str) -> str:
    """The table of ``relatedness`` with what it was measured on."""
    lines = [
        f"# How related the mined papers are to their query ({source})",
        "",
        f"Triplets: `{triplets_file}` (every mined training triplet; training takes its budget from these). "
        "Co-cited: some paper of the training graph cites both. Written by `experiments/negative_relatedness.py`.",
        "",
        "Author and venue shares are over the pairs where both papers have one (their count in brackets); "
        "n/a: the corpus has none.",
        "",
        "| paper of the triplet | pairs | co-cited with the query | shares an author | same venue |",
        "|---|---|---|---|---|",
    ]
    for role in ROLES:
        r = result[role]
        lines.append(
            f"| {role} | {r['pairs']:,} | {_share(r['co_cited'])} | "
            f"{_share(r['shares_author'], r['pairs_both_with_authors'])} | "
            f"{_share(r['same_venue'], r['pairs_both_with_venue'])} |"
        )
    return "\n".join(lines) + "\n"


def measure(run_dir: Path, triplets_file: Path | None = None) -> tuple[dict[str, dict], str, str]:
    """``relatedness`` of a run folder's mined triplets, with the source and triplet file it read."""
    paths = RunPaths(run_dir.resolve())  # relative to the working directory, as given on the command line
    record_file = run_dir / PIPELINE_FILE
    if not record_file.is_file():
        raise DataError(f"not a run folder (no {PIPELINE_FILE}): run notebooks 01 and 02 first", record_file)
    record = read_json(record_file)
    spec = load_spec(record["preset"], record.get("overrides") or {})
    triplets_file = triplets_file or run_dir / "02_mine_triplets" / "triplets" / TRIPLETS_TRAIN_FILE
    triplets = []
    with open(triplets_file, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                triplet = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                raise DataError("not a JSON line", triplets_file, number) from None
            if triplet is not None and not {"query", "pos", "neg"} <= set(triplet):
                raise DataError("a triplet needs query, pos and neg", triplets_file, number)
            if triplet is not None:
                triplets.append(triplet)
    corpus = load_corpus_for_run(dataclasses.replace(spec.data, label_field=""))
    authors = {pid: {a.lower() for a in p.authors} for pid, p in corpus.papers.items()}
    venues = {pid: p.venue for pid, p in corpus.papers.items() if p.venue}
    result = relatedness(triplets, cocitation_graph(read_graph(paths.train_data_dir / DATA_FILE)), authors, venues)
    return result, f"preset `{record['preset']}`, the training graph of `{run_dir}`", str(triplets_file)
