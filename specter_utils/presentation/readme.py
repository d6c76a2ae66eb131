"""The generated blocks of README.md and docs/results.md: every number in them is read from ``reports/<preset>/``.

A block sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; ``specter-utils report --readme``
rewrites each block in place from the reports, and ``--check`` fails when a file differs from what the reports give
(``tests/test_readme.py`` runs the check on the committed files). Blocks:

- ``results``: Table 1 of every report (trained, base and baseline rows, and the ranker rows that are not
  embeddings, BM25 and the text-free in-degree and year, with "—" where they have no value; CLS macro-F1 of the
  ``mag`` slot, cite and co-cite MAP, and the other SCIDOCS columns a run has), captioned with its benchmark:
  corpus, split, queries per task and the evaluation length;
- ``figure2``: notebook 06's full-space measures of base and trained (k-NN topic agreement, silhouette, paired
  over papers), then its DBSCAN homogeneity and completeness over projection seeds and eps beside the paper's,
  and a sentence per report read by the verdict rule;
- ``times``: each preset's measured wall time per notebook, the total, the largest peak memory, the commit and the
  machine;
- ``ablations``: each report's ``ablations.md`` (notebook 07's table), captioned with its benchmark;
- ``levers``: each committed recipe-lever table, ``experiments/measured/recipe_levers_*.md`` beside ``reports/``
  (written by ``experiments/recipe_levers.py --table``, which names its benchmark in its first line).
- ``small_corpus``: the small-corpus study's tables, ``experiments/measured/small_corpus_*.md``, written the same way
  by ``experiments/small_corpus.sh``.
- ``commands``: each whole-command benchmark, ``bench/measured/commands_*.md`` (``bench/bench_commands.py``), and
  int8's calibration sizes, ``bench/measured/int8_calibration_*.md`` (``bench/bench_int8_calibration.py``).
- ``train_dtype``: bf16 against fp32 training: throughput, ``bench/measured/train_dtype_*.md``
  (``bench/bench_train_dtype.py``), and MAP over seeds, ``experiments/measured/train_dtype_*.md``
  (``experiments/train_dtype.sh``).
- ``train_cpu``: the cpu profile's training against the CPU's peak FLOP/s, ``bench/measured/train_cpu_*.md``
  (``bench/bench_train_cpu.py``).
- ``structure``: what rows that read no text score on a preset's ranking tasks, random and matched negatives,
  ``experiments/measured/structure_controls_*.md`` (``experiments/structure_controls.py``).
- ``embedding``: the in-process embedding benchmark, ``bench/measured/embedding_*.md`` (``bench/bench_embedding.py
  --out``).

A report holds ``pipeline.json``, ``spec.yaml`` and ``metrics/<notebook>.json`` (each notebook's own
``metrics.json``); every number is read from them (``presentation.report_folder``). ``presentation.blocks`` and
``presentation.figure_blocks`` render the blocks; this module writes them into the files, checks them, and checks a
committed report against its preset today.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.io import atomic_write
from specter_utils.presentation.blocks import (
    ablations_block,
    controls_block,
    formats_block,
    levers_block,
    measured_block,
    stages_block,
    table1_block,
    times_block,
)
from specter_utils.presentation.figure_blocks import figure2_block, overview_block
from specter_utils.presentation.report_folder import Report, load_reports
from specter_utils.spec import DEFAULTS, flatten, load_spec

BLOCK = re.compile(r"<!-- generated:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /generated:(?P=name) -->", re.DOTALL)


# ---------------------------------------------------------------- a committed report against its preset today
def preset_drift(report: Report, params_dir: str | Path) -> list[str]:
    """Where the specification a report ran with differs from what its preset (with the report's overrides) gives
    today: one ``key: VALUE in the report, VALUE today`` per setting. A setting added since the report is drift only
    when today's value differs from its default (a new field at its default changes nothing). Empty for a report
    without a recorded specification or whose preset is not in ``params_dir``."""
    if not report.spec or not (Path(params_dir) / f"{report.preset}.yaml").is_file():
        return []
    recorded = flatten({k: v for k, v in report.spec.items() if k != "preset"})
    today = load_spec(report.preset, report.pipeline.get("overrides") or {}, params_dir)
    drift = []
    for key, value in today.items():
        before = recorded.get(key, DEFAULTS.get(key))
        if before != value:
            drift.append(f"{key}: {before!r} in the report, {value!r} today")
    return drift


# ---------------------------------------------------------------- blocks in a file
def render_blocks(reports_root: str | Path, target: str | Path) -> dict[str, str]:
    """Every block's text for the file ``target`` (links relative to it), from the reports under ``reports_root``."""
    reports_root = Path(reports_root)
    reports = load_reports(reports_root) if reports_root.is_dir() else []
    base = os.path.relpath(reports_root, Path(target).parent)
    link_of = {r.preset: f"{base}/{r.folder.name}".replace(os.sep, "/") for r in reports}
    compact = Path(target).name == "README.md"  # the README shows the headline rows, docs/results.md every row
    sections = [table1_block(r, link_of[r.preset], compact) for r in reports]
    root_link = os.path.relpath(reports_root.parent, Path(target).parent).replace(os.sep, "/")
    ablations = [ablations_block(r, link_of[r.preset], reports_root.parent, root_link) for r in reports]
    return {
        "results": "\n\n".join(s for s in sections if s) or "No report holds a results table yet.",
        "figure2": figure2_block(reports, link_of, compact),
        "overview": overview_block(reports, reports_root.parent, target),
        "times": times_block(reports, link_of, compact),
        "ablations": "\n\n".join(s for s in ablations if s) or "No report holds an ablations table yet.",
        "stages": stages_block(reports, link_of),
        "levers": levers_block(reports_root.parent / "experiments" / "measured", target),
        "small_corpus": levers_block(
            reports_root.parent / "experiments" / "measured",
            target,
            "small_corpus_",
            "No small-corpus table is committed yet (bash experiments/small_corpus.sh).",
        ),
        "commands": measured_block(
            [
                *sorted((reports_root.parent / "bench" / "measured").glob("commands_*.md"), key=_papers_in_name),
                *sorted((reports_root.parent / "bench" / "measured").glob("int8_calibration_*.md")),
            ],
            target,
            "No whole-command benchmark is committed yet (python bench/bench_commands.py).",
        ),
        "train_dtype": measured_block(
            [
                *sorted((reports_root.parent / "bench" / "measured").glob("train_dtype_*.md")),
                *sorted((reports_root.parent / "experiments" / "measured").glob("train_dtype_*.md")),
            ],
            target,
            "No bf16-against-fp32 training table is committed yet (bench/bench_train_dtype.py, experiments/train_dtype.sh).",
        ),
        "train_cpu": measured_block(
            sorted((reports_root.parent / "bench" / "measured").glob("train_cpu_*.md")),
            target,
            "No CPU training benchmark is committed yet (python bench/bench_train_cpu.py RUN_DIR).",
        ),
        "transfer": measured_block(
            sorted((reports_root.parent / "experiments" / "measured").glob("general_transfer_*.md")),
            target,
            "No transfer table is committed yet (python experiments/general_transfer.py).",
        ),
        "structure": measured_block(
            sorted((reports_root.parent / "experiments" / "measured").glob("structure_controls_*.md")),
            target,
            "No structure-control table is committed yet (python experiments/structure_controls.py).",
        ),
        "controls": controls_block(reports, link_of),
        "formats": formats_block(reports, link_of),
        "embedding": measured_block(
            sorted((reports_root.parent / "bench" / "measured").glob("embedding_*.md")),
            target,
            "No in-process embedding benchmark is committed yet (python bench/bench_embedding.py --out FILE).",
        ),
    }


def _papers_in_name(path: Path) -> tuple[int, str]:
    """``commands_hepth_1000.md`` before ``commands_hepth_20000.md``."""
    tail = path.stem.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else 0, path.name)


def replace_blocks(text: str, blocks: Mapping[str, str], path: str | Path = "<text>") -> str:
    """``text`` with the body of every generated block replaced; an unknown block name is a DataError."""

    def body(match: re.Match) -> str:
        name = match.group("name")
        if name not in blocks:
            line = text.count("\n", 0, match.start()) + 1
            raise DataError(f"unknown generated block {name!r} (known: {', '.join(blocks)})", path, line)
        return f"<!-- generated:{name} -->\n{blocks[name].strip()}\n<!-- /generated:{name} -->"

    return BLOCK.sub(body, text)


def stale_blocks(path: str | Path, blocks: Mapping[str, str]) -> list[str]:
    """The names of the blocks of ``path`` whose text differs from ``blocks``."""
    text = Path(path).read_text(encoding="utf-8")
    fresh = {m.group("name"): m.group(0) for m in BLOCK.finditer(replace_blocks(text, blocks, path))}
    return [m.group("name") for m in BLOCK.finditer(text) if m.group(0) != fresh[m.group("name")]]


def update_file(path: str | Path, reports_root: str | Path) -> list[str]:
    """Rewrite the generated blocks of ``path`` from the reports (atomically); returns the names of those changed."""
    path = Path(path)
    if not path.exists():
        raise DataError("no such file", path)
    blocks = render_blocks(reports_root, path)
    text = path.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise DataError("no generated block (<!-- generated:NAME --> ... <!-- /generated:NAME -->)", path)
    changed = stale_blocks(path, blocks)
    if changed:
        with atomic_write(path) as handle:
            handle.write(replace_blocks(text, blocks, path))
    return changed


def check_file(path: str | Path, reports_root: str | Path) -> list[str]:
    """The names of the blocks of ``path`` that differ from what the reports give (empty: up to date)."""
    path = Path(path)
    if not path.exists():
        raise DataError("no such file", path)
    return stale_blocks(path, render_blocks(reports_root, path))
