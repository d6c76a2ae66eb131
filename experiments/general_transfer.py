"""The general model's transfer: trained on hep-th and arXiv-2023 together, scored on a corpus it never saw.

1. ``specter-utils run --preset general --run general --notebooks 01 02``: hep-th's benchmark and the mixed training
   triplets (hep-th's own beside a 10,000-paper neighbourhood of arXiv-2023).
2. One model per seed (``--seeds``, default 0 1 2), trained as notebook 03 trains (the preset's recipe, its
   validation verdict on hep-th's validation queries), into ``RESULTS/general/transfer/seed<N>/``; a seed whose
   model is there is not trained again.
3. ``specter-utils run --preset citeseer --run transfer-citeseer --notebooks 01``: CiteSeer's benchmark.
4. The base model and every seed embedded at CiteSeer's evaluation length and scored on its ``--split`` (default
   test: no choice is made on this table), each task tested against the base over seeds and queries, Holm over
   the table: ``experiments/measured/general_transfer_citeseer.{json,md}``.

    python experiments/general_transfer.py results          # resumable; about an hour a seed on 2 CPU cores
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from specter_utils.layout import METADATA_FILE, PIPELINE_FILE
from specter_utils.runs import RunPaths
from specter_utils.studies.levers import recorded_spec
from specter_utils.studies.transfer import transfer_rows, write_transfer
from specter_utils.workflow.train import train

MEASURED = Path(__file__).parent / "measured"


def ensure_run(results: Path, preset: str, run: str, notebooks: list[str]) -> Path:
    """``results/run`` built by ``specter-utils run`` (skipped when its pipeline.json is there)."""
    if not (results / run / PIPELINE_FILE).is_file():
        command = [sys.executable, "-m", "specter_utils", "run", "--preset", preset, "--run", run]
        subprocess.run([*command, "--notebooks", *notebooks, "--results-dir", str(results)], check=True)
    return results / run


def trained_seed(source: Path, seed: int) -> Path:
    """The model of ``seed`` trained on ``source``'s triplets as its notebook 03 would, kept once finished."""
    out = source / "transfer" / f"seed{seed}"
    model = out / "model"
    if (out / "done").is_file():
        return model
    spec = recorded_spec(source, {"seed": seed})
    paths = RunPaths.of(source)
    train(spec, paths.triplets_dir, paths.train_data_dir / METADATA_FILE, out, paths.built_scidocs_dir)
    (out / "done").write_text(f"seed {seed}\n")
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results", help="results folder of the runs (default results)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds of the general model")
    parser.add_argument("--split", choices=["val", "test"], default="test", help="CiteSeer's split scored")
    args = parser.parse_args(argv)
    results = Path(args.results)
    source = ensure_run(results, "general", "general", ["01", "02"])
    models = [trained_seed(source, seed) for seed in args.seeds]
    target = ensure_run(results, "citeseer", "transfer-citeseer", ["01"])
    result = transfer_rows(target, {"general": models}, source / "transfer" / f"citeseer-{args.split}", args.split)
    out = MEASURED / f"general_transfer_citeseer{'' if args.split == 'test' else '_' + args.split}.json"
    write_transfer(result, out)
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
