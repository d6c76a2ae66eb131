"""Training throughput in fp32 and in bf16 autocast (``train --dtype auto`` on a CPU with native bf16), in turn.

On a run folder's mined triplets (notebooks 01 and 02), the run's own training settings at the recipe-lever study's
reference budget, cut to ``--triplets`` triplets: fp32, bf16, fp32, bf16, ... (``--pairs`` pairs, seeds 0, 1, ...
shared by both members of a pair), each a whole ``train`` stage. The figure is the training loop's own triplets per
second (the trainer's ``train_samples_per_second``), and the ratio bf16 / fp32 is taken pair by pair. The MAP of
the two precisions is ``experiments/train_dtype.sh``'s.

    specter-utils run --preset hepth --run hepth-dtype --notebooks 01 02
    python bench/bench_train_dtype.py results/hepth-dtype --triplets 640 --pairs 2

Results go to ``bench/measured/train_dtype_<corpus>.json`` and a Markdown table beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.executed import machine_info, machine_label  # noqa: E402
from specter_utils.layout import METADATA_FILE  # noqa: E402
from specter_utils.runs import RunPaths, corpus_label  # noqa: E402
from specter_utils.studies.levers import run_spec  # noqa: E402
from specter_utils.workflow.train import train  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run folder with notebooks 01 and 02")
    parser.add_argument("--triplets", type=int, default=640, help="training triplets per run (default 640)")
    parser.add_argument("--pairs", type=int, default=2, help="(fp32, bf16) pairs (default 2)")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/measured/train_dtype_<corpus>.json)")
    args = parser.parse_args()
    paths = RunPaths.of(args.run_dir)
    corpus = corpus_label(paths.run_dir)
    out = args.out or REPO / "bench" / "measured" / f"train_dtype_{corpus}.json"
    machine = machine_info()
    print(f"{corpus}: {args.triplets} triplets per run; {machine_label(machine)}", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-train-dtype-") as tmp:
        for pair in range(args.pairs):
            for dtype in ("fp32", "bf16"):
                overrides = {"training.max_triplets": args.triplets, "training.dtype": dtype}
                spec = run_spec(paths.run_dir, overrides).with_overrides({"seed": pair})
                started = time.perf_counter()
                trained = train(spec, paths.triplets_dir, paths.train_data_dir / METADATA_FILE, Path(tmp) / dtype)
                results = trained["summary"]["results"]
                runs.append(
                    {
                        "pair": pair,
                        "dtype": dtype,
                        "precision": trained["summary"]["derived"]["precision"],
                        "triplets_per_second": round(results["train_triplets_per_second"], 3),
                        "train_runtime_s": round(results["train_runtime_s"], 1),
                        "stage_s": round(time.perf_counter() - started, 1),
                        "steps": results["global_step"],
                        "train_loss_mean": results.get("train_loss_mean_this_process"),
                    }
                )
                print(f"  pair {pair + 1} {dtype}: {runs[-1]['triplets_per_second']:.2f} triplets/s", flush=True)
    ratios = [
        next(r for r in runs if r["pair"] == p and r["dtype"] == "bf16")["triplets_per_second"]
        / next(r for r in runs if r["pair"] == p and r["dtype"] == "fp32")["triplets_per_second"]
        for p in range(args.pairs)
    ]
    spec = run_spec(paths.run_dir, {})
    record = {
        "benchmark": f"{corpus} mined triplets, {args.triplets} per run, {spec['training.base_model']}, "
        f"loss {spec['training.loss']}, batch {spec['training.batch_size']}, {spec['training.max_length']} wordpieces",
        **provenance("python bench/bench_train_dtype.py RUN_DIR", sys.argv[2:], machine),
        "runs": runs,
        "bf16_over_fp32": [round(r, 3) for r in ratios],
        "bf16_over_fp32_median": round(statistics.median(ratios), 3),
    }
    lines = [
        f"Benchmark: {record['benchmark']}. Machine: {machine_label(machine)}; {record['date']}, "
        f"commit {record['commit']}. Command: `{record['argv']}`",
        "",
        "| pair | fp32 triplets/s | bf16 triplets/s | bf16 / fp32 |",
        "|---|---|---|---|",
    ]
    for p, ratio in enumerate(ratios):
        fp32, bf16 = (next(r for r in runs if r["pair"] == p and r["dtype"] == d) for d in ("fp32", "bf16"))
        lines.append(
            f"| {p + 1} | {fp32['triplets_per_second']:.2f} | {bf16['triplets_per_second']:.2f} | {ratio:.2f}x |"
        )
    lines += ["", f"bf16 / fp32, median over pairs: **{record['bf16_over_fp32_median']:.2f}x**."]
    write_measured(out, record, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
