"""How much a preset's ranking tasks reward what is not text: the rows that read no text (in-degree, year), BM25
and a seeded random ranking, on cite and co-cite under random negatives (the SCIDOCS protocol) and under
popularity-matched negatives, for the random split and the date split.

Each split is the preset's own benchmark (notebook 01's `build_benchmark`, the preset's settings, `data.split_by`
random or date), built into a temporary folder; no model is embedded. The JSON and its table go to
``experiments/measured/structure_controls_<preset>.{json,md}``.

    python experiments/structure_controls.py --preset hepth          # about a minute a split on 2 cores
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.errors import DataError  # noqa: E402
from specter_utils.evaluation.rankers import rank_task, ranker_data, ranking_qrels, score_rankers  # noqa: E402
from specter_utils.executed import machine_label  # noqa: E402
from specter_utils.spec import load_spec  # noqa: E402
from specter_utils.tasks import BY_NAME  # noqa: E402
from specter_utils.workflow.prepare import build_benchmark_dir, load_corpus_for_run  # noqa: E402

TASKS = ("cite", "cite-matched", "cocite", "cocite-matched")
RANKERS = ("in-degree", "year", "bm25")


def random_row(scidocs: Path, split: str, seed: int = 0) -> dict[str, float]:
    """MAP of a seeded uniform random ranking of each query's candidates."""
    rng = random.Random(seed)
    out = {}
    for task, qrels in ranking_qrels(scidocs, split, TASKS).items():
        result = rank_task(qrels, lambda _query, docs: {d: rng.random() for d in docs}, f"random {task}")
        out[task] = round(result.metrics["map"], 2)
    return out


def measure(preset: str, split_by: str, split: str) -> dict:
    """Every row's MAP on the four tasks of one benchmark, with the benchmark's counts."""
    spec = load_spec(preset, {"data.split_by": split_by})
    corpus = load_corpus_for_run(spec.data)
    with tempfile.TemporaryDirectory(prefix="structure-") as tmp:
        summary = build_benchmark_dir(corpus, Path(tmp) / "benchmark", spec.data)
        scidocs = Path(tmp) / "benchmark" / "scidocs"
        data = ranker_data(scidocs)
        scored = score_rankers(scidocs, RANKERS, split=split, tasks=TASKS, data=data)
        rows = {"random": random_row(scidocs, split)}
        skipped = {}
        for name, result in scored.items():
            values = {t: round(result[BY_NAME[t].key]["map"], 2) for t in TASKS if BY_NAME[t].key in result}
            if values:
                rows[name] = values
            else:
                skipped[name] = (result.get("skipped") or {}).get("ranker", "no value")
        queries = {t: len(q) for t, q in ranking_qrels(scidocs, split, TASKS).items()}
    return {
        "split_by": split_by,
        "split": split,
        "queries": queries,
        "rows": rows,
        "skipped": skipped,
        "cutoff": _cutoff(summary),
    }


def _cutoff(summary: dict) -> int | None:
    return ((summary.get("split") or {}) if isinstance(summary, dict) else {}).get("cutoff_year")


def table(record: dict) -> str:
    lines = [
        f"Ranking rows that read no text (and BM25, and a seeded random ranking) on the `{record['preset']}` "
        f"preset's benchmark, {record['split']} split, MAP x 100. Random negatives: the SCIDOCS protocol; matched: "
        "the same queries and positives, negatives matched to the positives on year and training in-degree.",
        "",
        f"Machine: {machine_label(record['machine'])}; {record['date']}, commit {record['commit']}. "
        f"Command: `{record['argv']}`",
        "",
        "| split | queries (cite / co-cite) | row | cite | cite, matched | co-cite | co-cite, matched |",
        "|---|---|---|---|---|---|---|",
    ]
    for part in record["benchmarks"]:
        what = part["split_by"] + (f" (cutoff {part['cutoff']})" if part.get("cutoff") else "")
        counts = f"{part['queries'].get('cite', 0)} / {part['queries'].get('cocite', 0)}"
        for name, values in part["rows"].items():
            cells = [f"{values[t]:.2f}" if t in values else "" for t in TASKS]
            lines.append(f"| {what} | {counts} | {name} | " + " | ".join(cells) + " |")
    notes = [
        f"- {p['split_by']} split: {name} skipped: {why}"
        for p in record["benchmarks"]
        for name, why in p["skipped"].items()
    ]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="hepth", help="a preset in params/ (default hepth)")
    parser.add_argument("--split", default="test", choices=("test", "val"), help="the queries scored (default test)")
    parser.add_argument("--out", type=Path, help="default experiments/measured/structure_controls_<preset>.json")
    args = parser.parse_args()
    out = args.out or REPO / "experiments" / "measured" / f"structure_controls_{args.preset}.json"
    parts = []
    for split_by in ("random", "date"):
        try:
            parts.append(measure(args.preset, split_by, args.split))
        except DataError as exc:  # a corpus without publication years has no date split
            print(f"{split_by} split: {exc}", file=sys.stderr)
    record = {
        "preset": args.preset,
        "split": args.split,
        **provenance("python experiments/structure_controls.py", sys.argv[1:]),
        "benchmarks": parts,
    }
    write_measured(out, record, table(record))
    print(table(record))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
