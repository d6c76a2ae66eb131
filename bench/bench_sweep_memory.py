"""Resident memory of notebook 07's sweep, row after row, with each row's memory released and without (the baseline).

Notebook 07 trains and embeds one model per (variant, seed) row in one kernel. This runs ``--rows`` rows of a preset
through the notebook's own entry point (``workflow.ablations.run_ablations``: mine + audit, train, embed, evaluate;
the reference recipe at seeds 0, 1, ..., each retrained on ``--triplets`` triplets) twice, each in a fresh process:
once as the package runs it (``memory.release_memory`` after every row: the rows' reference cycles collected and
the heap trimmed) and once with that step switched off, as before it existed. A thread samples the process's
resident memory every 0.1 s; the figures are each row's peak and the memory left when it ends, and the ratio of the
last row's to the first's (flat: 1.00).

    python bench/bench_sweep_memory.py --preset demo --rows 4

Notebook 01's benchmark is built first in ``--run-dir`` (default: a temporary folder). Results go to
``bench/measured/sweep_memory_<preset>.json`` and a Markdown table beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402
from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.executed import machine_info, machine_label  # noqa: E402
from specter_utils.runs import RunPaths  # noqa: E402
from specter_utils.spec import RunSpec, load_spec  # noqa: E402

MODES = ("baseline", "released")  # without release_memory after each row (as before), and as the package runs it
MIB = 2**20


class PeakSampler:
    """This process's resident memory sampled every ``interval`` s; :meth:`take` returns the peak since the last."""

    def __init__(self, interval: float = 0.1) -> None:
        self.process, self.interval, self.peak = psutil.Process(), interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def take(self) -> tuple[float, float]:
        """(peak since the last call, resident now), in MiB; the peak starts again from now."""
        now = self.process.memory_info().rss
        peak, self.peak = max(self.peak, now), now
        return peak / MIB, now / MIB

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def bench_spec(preset: str, rows: int, triplets: int, val_triplets: int) -> RunSpec:
    """``preset`` with ``rows`` rows of the reference recipe (seeds 0 ..), each retrained on ``triplets``."""
    return load_spec(
        preset,
        {
            "ablations.seeds": list(range(rows)),
            "ablations.variants": [],
            "ablations.max_triplets": triplets,  # a budget of its own: every reference seed is retrained
            "training.max_val_triplets": val_triplets,
        },
    )


def run_child(mode: str, args: argparse.Namespace) -> None:
    """One mode's sweep in this process; its rows go to ``args.result`` as JSON."""
    from specter_utils.workflow import ablations, sweep

    if mode == "baseline":
        sweep.release_memory = lambda: {}  # the sweep as it was: nothing released between rows
    spec = bench_spec(args.preset, args.rows, args.triplets, args.val_triplets)
    paths = RunPaths.of(args.run_dir)
    shutil.rmtree(paths.notebook_dir("07_ablations"), ignore_errors=True)  # every row made afresh, none reused
    sampler = PeakSampler()
    sampler.take()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()

    def measure(row: Any, _result: dict[str, Any], _reused: bool) -> None:
        nonlocal started
        peak, after = sampler.take()
        rows.append(
            {
                "seed": row.seed,
                "peak_rss_mb": round(peak),
                "rss_after_mb": round(after),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        print(f"[{mode}] row {len(rows)}: peak {peak:.0f} MiB, after {after:.0f} MiB", file=sys.stderr, flush=True)
        started = time.perf_counter()

    ablations.run_ablations(spec, paths, progress=None, on_row=measure)
    sampler.stop()
    Path(args.result).write_text(json.dumps(rows), encoding="utf-8")


def prepare_child(args: argparse.Namespace) -> None:
    """Notebook 01's benchmark in ``args.run_dir`` (what every row reads), unless it is there."""
    from specter_utils.layout import METADATA_FILE
    from specter_utils.workflow.prepare import prepare

    paths = RunPaths.of(args.run_dir)
    if not (paths.train_data_dir / METADATA_FILE).exists():
        prepare(bench_spec(args.preset, args.rows, args.triplets, args.val_triplets), paths.benchmark_dir)


def spawn(child: str, args: argparse.Namespace, result: Path | None = None) -> None:
    """This script again in a fresh process as ``--child CHILD``; its training logs go to ``args.log``."""
    command = [sys.executable, __file__, "--child", child, "--preset", args.preset, "--rows", str(args.rows)]
    command += ["--triplets", str(args.triplets), "--val-triplets", str(args.val_triplets)]
    command += ["--run-dir", str(args.run_dir)] + (["--result", str(result)] if result else [])
    with open(args.log, "a", encoding="utf-8") as log:
        done = subprocess.run(command, stdout=log, stderr=None, env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode:
        tail = "".join(args.log.read_text(encoding="utf-8", errors="replace").splitlines(True)[-20:])
        raise SystemExit(f"{tail}\nthe {child} run failed (exit {done.returncode}); its log: {args.log}")


def ratio(rows: list[dict[str, Any]], key: str) -> float:
    return round(rows[-1][key] / rows[0][key], 3)


def report(args: argparse.Namespace, spec: RunSpec, runs: dict[str, list[dict[str, Any]]]) -> tuple[dict, str]:
    """The record and its Markdown table."""
    machine = machine_info()
    record = {
        "benchmark": f"notebook 07's sweep on the {args.preset} preset: {args.rows} rows (reference recipe, seeds "
        f"0-{args.rows - 1}), each mine + train on {args.triplets} triplets ({args.val_triplets} validation) of "
        f"{spec['training.base_model']} + embed at {spec['embedding.max_length']} wordpieces + evaluate, one process",
        **provenance("python bench/bench_sweep_memory.py", sys.argv[1:], machine),
        "rows": runs,
        "last_over_first_peak": {mode: ratio(rows, "peak_rss_mb") for mode, rows in runs.items()},
        "last_over_first_after": {mode: ratio(rows, "rss_after_mb") for mode, rows in runs.items()},
        "released_over_baseline_last_peak": round(
            runs["released"][-1]["peak_rss_mb"] / runs["baseline"][-1]["peak_rss_mb"], 3
        ),
    }
    lines = [
        f"Benchmark: {record['benchmark']}. Machine: {machine_label(machine)}; {record['date']}, commit "
        f"{record['commit']}. Command: `{record['argv']}`",
        "",
        "| row | baseline peak MiB | baseline after MiB | released peak MiB | released after MiB |",
        "|---|---|---|---|---|",
    ]
    for number, (old, new) in enumerate(zip(runs["baseline"], runs["released"], strict=True), 1):
        lines.append(
            f"| {number} | {old['peak_rss_mb']} | {old['rss_after_mb']} | {new['peak_rss_mb']} | {new['rss_after_mb']} |"
        )
    peak, after = record["last_over_first_peak"], record["last_over_first_after"]
    lines += [
        "",
        f"Last row / first row, peak: baseline **{peak['baseline']:.2f}x**, released **{peak['released']:.2f}x**; "
        f"memory left after the row: baseline {after['baseline']:.2f}x, released {after['released']:.2f}x. "
        f"Last row's peak, released / baseline: **{record['released_over_baseline_last_peak']:.2f}x**.",
    ]
    return record, "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="demo", help="the run specification (default demo)")
    parser.add_argument("--rows", type=int, default=3, help="sweep rows per mode (default 3)")
    parser.add_argument("--triplets", type=int, default=64, help="training triplets per row (default 64)")
    parser.add_argument("--val-triplets", type=int, default=16, help="validation triplets per row (default 16)")
    parser.add_argument("--run-dir", type=Path, help="run folder for notebook 01's benchmark (default: temporary)")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/measured/sweep_memory_<preset>.json)")
    parser.add_argument("--log", type=Path, help="the rows' training logs (default: RUN_DIR/bench.log)")
    parser.add_argument("--child", choices=("prepare", *MODES), help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rows < 2:
        parser.error("--rows must be at least 2 (the figure is the last row against the first)")
    if args.child == "prepare":
        prepare_child(args)
        return 0
    if args.child:
        run_child(args.child, args)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-sweep-memory-") as tmp:
        args.run_dir = args.run_dir or Path(tmp) / "run"
        args.log = args.log or Path(tmp) / "bench.log"
        print(f"{args.preset}: {args.rows} rows per mode; {machine_label(machine_info())}; logs {args.log}", flush=True)
        spawn("prepare", args)
        runs = {}
        for mode in MODES:
            result = Path(tmp) / f"{mode}.json"
            spawn(mode, args, result)
            runs[mode] = json.loads(result.read_text(encoding="utf-8"))
    spec = bench_spec(args.preset, args.rows, args.triplets, args.val_triplets)
    record, markdown = report(args, spec, runs)
    write_measured(args.out or REPO / "bench" / "measured" / f"sweep_memory_{args.preset}.json", record, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
