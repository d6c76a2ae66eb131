"""The cpu profile's training against the CPU's peak: triplets/s, share of peak FLOP/s, padding and the step split.

On a run folder's mined triplets (notebooks 01 and 02) and the offline MiniLM, each setting runs the project's own
trainer (``train_specter`` with the cpu profile and its recipe: mnrl-citation, batch 64, 64 wordpieces, AdamW) for
``--warmup`` + ``--steps`` optimiser steps in a fresh process; the settings take turns, ``--rounds`` times, so a
background load falls on all of them alike. Per timed step it records the wall time and its split:

* tokenize: the trainer's data collator (the tokenizer, padding each column to its longest text);
* forward: the loss call (the model's forward passes, pooling, the in-batch scores);
* backward: the rest of the trainer's ``training_step`` (autograd);
* optimiser: from there to the step's end (gradient clipping, AdamW, the schedule, zeroing the gradients);
* other: what is left (the sampler, the dataset rows, the trainer's bookkeeping).

FLOPs (bench/train_flops.py): model FLOPs count each text's real tokens at ``6 N + 12 L H n`` (``n`` its own
length, padding excluded); executed FLOPs count every position the model was given, padded (the loss merges the
positive and negative columns into one forward, padded to the wider of the two). The share of peak is model FLOP/s
over ``cores x clock x FLOP/cycle`` of the precision, the clock from /proc/cpuinfo (or lscpu's max MHz).
bf16 autocast runs only where the CPU has avx512_bf16 or amx_bf16.

    specter-utils run --preset hepth --run hepth-trainbench --notebooks 01 02
    python bench/bench_train_cpu.py results/hepth-trainbench --steps 8 --rounds 2

Results go to ``bench/measured/train_cpu_<corpus>.json`` (one record per CPU kind, a new run on the same kind
replaces its record) and a Markdown table beside it, which ``specter-utils report --readme`` copies into
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measured_files import provenance, write_measured  # noqa: E402
from train_flops import batch_flops, grouped_padding, padding_share, parse_cpuinfo, peak_flops  # noqa: E402

from specter_utils.errors import DataError  # noqa: E402
from specter_utils.executed import machine_info, machine_label, native_bf16_cpu  # noqa: E402
from specter_utils.runs import RunPaths, corpus_label  # noqa: E402

PROFILE_TRIPLETS = 24_000  # the cpu profile's training budget, projected from triplets/s
PHASES = ("tokenize", "forward", "backward", "optimiser", "other")
# setting name -> (dtype, torch threads, torch.compile); "threads" 0 means every core
SETTINGS = {
    "fp32": ("fp32", 0, False),
    "fp32-1-thread": ("fp32", 1, False),
    "fp32-compile": ("fp32", 0, True),
    "bf16": ("bf16", 0, False),
}


# ---------------------------------------------------------------- one setting, in its own process
class StepRecorder:
    """Times each optimiser step of the trainer and its phases; counts the tokens the collator and model saw."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.phase = dict.fromkeys(PHASES[:-1], 0.0)
        self.tokens = {"tokenized_real": 0, "tokenized_positions": 0, "executed": []}
        self.last_end: float | None = None
        self.last_cpu = 0.0
        self.step_done: float | None = None

    def timed(self, name: str, function):
        """``function`` wrapped so that its wall time adds to phase ``name``."""
        recorder = self

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                recorder.phase[name] += time.perf_counter() - started
                if name == "backward":  # training_step: its forward part is counted once, under forward
                    recorder.step_done = time.perf_counter()

        return wrapper

    def count_inputs(self, inputs: dict[str, Any]) -> None:
        """Real tokens and positions of the tokenized columns of a batch (``<column>_attention_mask``)."""
        for key, value in inputs.items():
            if key.endswith("attention_mask"):
                self.tokens["tokenized_real"] += int(value.sum())
                self.tokens["tokenized_positions"] += value.numel()

    def count_forward(self, _module, args, kwargs=None) -> None:
        """A forward pre-hook on the model: each text's real length and the width it was padded to."""
        features = args[0] if args else (kwargs or {}).get("input")
        mask = features["attention_mask"]
        self.tokens["executed"].append((mask.sum(dim=1).tolist(), int(mask.shape[1])))

    def end_step(self) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        if self.last_end is not None:
            split = dict(self.phase)
            split["backward"] -= split["forward"]  # training_step includes compute_loss
            split["optimiser"] = now - (self.step_done or now)
            wall = now - self.last_end
            split["other"] = max(0.0, wall - sum(split.values()))
            cpu_s = cpu - self.last_cpu  # every thread of this process: the cores it got
            self.steps.append({"wall_s": wall, "cpu_s": cpu_s, "split_s": split, **self.tokens})
        self.phase = dict.fromkeys(PHASES[:-1], 0.0)
        self.tokens = {"tokenized_real": 0, "tokenized_positions": 0, "executed": []}
        self.last_end, self.last_cpu = now, cpu


def run_setting(run_dir: Path, setting: str, steps: int, warmup: int, out: Path) -> None:
    """Train ``warmup + steps`` optimiser steps with the cpu profile and write the timed steps to ``out``."""
    import torch
    from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator
    from transformers import TrainerCallback

    from specter_utils.layout import METADATA_FILE
    from specter_utils.spec import train_config
    from specter_utils.training import train as training

    dtype, threads, compile_model = SETTINGS[setting]
    if threads:
        torch.set_num_threads(threads)
    paths = RunPaths.of(run_dir)
    recorder = StepRecorder()

    class Hooks(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            model.register_forward_pre_hook(recorder.count_forward, with_kwargs=True)

        def on_step_begin(self, args, state, control, **kwargs):
            if recorder.last_end is None:
                recorder.end_step()  # the first step's start

        def on_step_end(self, args, state, control, **kwargs):
            recorder.end_step()

    trainer_cls = training.SentenceTransformerTrainer
    originals = {
        (SentenceTransformerDataCollator, "__call__"): SentenceTransformerDataCollator.__call__,
        (trainer_cls, "compute_loss"): trainer_cls.compute_loss,
        (trainer_cls, "training_step"): trainer_cls.training_step,
    }
    compute_loss = recorder.timed("forward", trainer_cls.compute_loss)

    def counted_loss(self, model, inputs, *args, **kwargs):
        recorder.count_inputs(inputs)
        return compute_loss(self, model, inputs, *args, **kwargs)

    SentenceTransformerDataCollator.__call__ = recorder.timed("tokenize", SentenceTransformerDataCollator.__call__)
    trainer_cls.compute_loss = counted_loss
    trainer_cls.training_step = recorder.timed("backward", trainer_cls.training_step)
    with tempfile.TemporaryDirectory(prefix="bench-train-cpu-") as tmp:
        triplets = Path(tmp) / "triplets"  # train.jsonl only: no validation passes inside the timed run
        triplets.mkdir()
        (triplets / "train.jsonl").symlink_to((paths.triplets_dir / "train.jsonl").resolve())
        config = train_config(
            "cpu",
            triplets=str(triplets),
            metadata=str(paths.train_data_dir / METADATA_FILE),
            out=str(Path(tmp) / "run"),
            max_steps=warmup + steps,
            max_triplets=0,  # every mined triplet: enough rows for the steps whatever the no-duplicates sampler skips
            save_steps=10**9,
            eval_steps=10**9,
            logging_steps=10**9,
            progress_bar=False,
            dtype=dtype,
            torch_compile=compile_model,
        )
        started = time.perf_counter()
        try:
            training.train_specter(config, callbacks=[Hooks()])
        finally:
            for (owner, name), function in originals.items():
                setattr(owner, name, function)
        total = time.perf_counter() - started
    record = {
        "setting": setting,
        "dtype": dtype,
        "threads": torch.get_num_threads(),
        "compile": compile_model,
        "batch": config.batch_size,
        "max_length": config.max_length,
        "loss": config.loss,
        "base_model": config.base_model,
        "process_s": round(total, 1),
        "steps": recorder.steps[warmup:],
        "warmup_steps": recorder.steps[:warmup],
    }
    out.write_text(json.dumps(record))


def run_worker(command: list[str], timeout: int) -> str | None:
    """Run one setting's process (and whatever it starts, such as compile workers) to its end: None when it
    succeeded, "timeout" when it ran past ``timeout`` seconds (killed), else the tail of its error output."""
    # a cache of its own: a compiled kernel left half-written by an earlier, killed run cannot break this one
    env = {**os.environ, "PYTHONPATH": str(REPO), "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="inductor-")}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "timeout"
    finally:
        shutil.rmtree(env["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
    return None if process.returncode == 0 else stderr[-2000:]


# ---------------------------------------------------------------- figures from the timed steps
def model_shape() -> dict[str, int]:
    """MiniLM's layers, width and non-embedding parameters (the encoder's: the pooler is not trained)."""
    from transformers import AutoModel

    from specter_utils.models import resolve_model

    model = AutoModel.from_pretrained(resolve_model("minilm"))
    encoder = sum(p.numel() for name, p in model.named_parameters() if name.startswith("encoder."))
    return {"layers": model.config.num_hidden_layers, "hidden": model.config.hidden_size, "non_embedding": encoder}


def summarise(record: dict[str, Any], shape: dict[str, int]) -> dict[str, Any]:
    """Triplets/s, tokens/s, FLOP/s, padding shares and the mean step split of one run's timed steps."""
    steps = record["steps"]
    wall = sum(s["wall_s"] for s in steps)
    cpu = sum(s["cpu_s"] for s in steps)
    triplets = record["batch"] * len(steps)
    model = executed = real = positions = 0
    for step in steps:
        for lengths, width in step["executed"]:
            m, e = batch_flops(lengths, width, shape["non_embedding"], shape["layers"], shape["hidden"])
            model, executed = model + m, executed + e
            real, positions = real + sum(lengths), positions + len(lengths) * width
    tokenized_real = sum(s["tokenized_real"] for s in steps)
    tokenized_positions = sum(s["tokenized_positions"] for s in steps)
    split = {phase: sum(s["split_s"][phase] for s in steps) / wall for phase in PHASES}
    return {
        "setting": record["setting"],
        "dtype": record["dtype"],
        "threads": record["threads"],
        "batch": record["batch"],
        "max_length": record["max_length"],
        "steps": len(steps),
        "seconds": round(wall, 2),
        "triplets_per_s": round(triplets / wall, 3),
        "real_tokens_per_s": round(real / wall, 1),
        "model_gflop_per_s": round(model / wall / 1e9, 2),
        "cores_got": round(cpu / wall, 2),
        "model_gflop_per_cpu_s": round(model / cpu / 1e9, 2),
        "executed_gflop_per_s": round(executed / wall / 1e9, 2),
        "padding_share_tokenized": round(padding_share(tokenized_real, tokenized_positions), 4),
        "padding_share_executed": round(padding_share(real, positions), 4),
        "split": {phase: round(share, 4) for phase, share in split.items()},
        "profile_minutes": round(PROFILE_TRIPLETS / (triplets / wall) / 60, 1),
    }


def length_grouping(run_dir: Path, batch: int, max_length: int, rows: int) -> dict[str, Any]:
    """Tokenized padding share of ``rows`` training triplets in random batches and in length-grouped ones (each
    window of 50 batches sorted by the row's longest text, as training.sampler's ``group_by_length``)."""
    import torch
    from transformers import AutoTokenizer

    from specter_utils.layout import METADATA_FILE
    from specter_utils.models import resolve_model
    from specter_utils.training.data import load_training_data

    paths = RunPaths.of(run_dir)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("minilm"))
    data = load_training_data(paths.triplets_dir, paths.train_data_dir / METADATA_FILE, tokenizer.sep_token, rows)
    columns = [
        [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
        for texts in (data.train.anchor, data.train.positive, data.train.negative)
    ]
    order = torch.randperm(len(columns[0]), generator=torch.Generator().manual_seed(0)).tolist()
    result = {"triplets": len(order), "batch": batch}
    for name, window in (("random", batch), ("grouped", 50 * batch)):
        real, positions = grouped_padding(columns, batch, order, window)
        result[name] = {"positions": positions, "padding_share": round(padding_share(real, positions), 4)}
    result["positions_saved"] = round(1 - result["grouped"]["positions"] / result["random"]["positions"], 4)
    return result


# ---------------------------------------------------------------- the table
def cpu_kind() -> dict[str, Any]:
    """Cores, model, flags and clock of this CPU, with each precision's peak and its formula."""
    max_mhz = None
    if shutil.which("lscpu"):
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "CPU max MHz" and value.strip():
                max_mhz = float(value)
    cpu = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"), max_mhz)
    cores = os.cpu_count() or 1
    peaks = {}
    for dtype in ("fp32", "bf16"):
        peak = peak_flops(cpu, cores, dtype)
        peaks[dtype] = None if peak is None else {"gflop_per_s": round(peak.flops / 1e9, 1), "formula": peak.formula}
        if peak is not None:
            peaks[dtype]["unit"] = peak.why
    clock = "lscpu CPU max MHz" if max_mhz else "/proc/cpuinfo cpu MHz"
    return {"cores": cores, "model": cpu.model, "mhz": cpu.mhz, "clock_source": clock, "peaks": peaks}


def markdown(records: dict[str, dict[str, Any]]) -> str:
    """One section per CPU kind: its peak, the settings' table, the split of a step and length grouping."""
    out = []
    for label, rec in records.items():
        kind = rec["cpu_kind"]
        peaks = "; ".join(
            f"{dtype}: {p['formula']} ({p['unit']})" if p else f"{dtype}: no native unit, not run"
            for dtype, p in kind["peaks"].items()
        )
        out += [
            f"**{label}** (clock from {kind['clock_source']}). Peak: {peaks}. {rec['benchmark']}. "
            f"Load average (1 min) {rec['load'][0]:.2f} before, {rec['load'][-1]:.2f} after; `uptime` at the start: "
            f"`{rec['uptime']}`. {rec['date']}, commit {rec['commit']}. Command: `{rec['argv']}`",
            "",
            "| setting | threads | runs | triplets/s | real tokens/s | model GFLOP/s | share of peak | cores got "
            "| share of peak per CPU-second | executed GFLOP/s | padding (tokenized) | padding (executed) "
            "| 24,000 triplets | x fp32 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rec["settings"]:
            share = f"{100 * row['share_of_peak']:.1f}%" if row["share_of_peak"] is not None else "n/a"
            busy = row["share_of_core_peak_per_cpu_s"]
            busy = f"{100 * busy:.1f}%" if busy is not None else "n/a"
            out.append(
                f"| {row['setting']} | {row['threads']} | {row['rounds']} | {row['triplets_per_s']:.2f} | {row['real_tokens_per_s']:.0f} "
                f"| {row['model_gflop_per_s']:.1f} | {share} | {row['cores_got']:.2f} | {busy} "
                f"| {row['executed_gflop_per_s']:.1f} "
                f"| {100 * row['padding_share_tokenized']:.1f}% | {100 * row['padding_share_executed']:.1f}% "
                f"| {row['profile_minutes']:.1f} min | {row['x_fp32']:.2f}x |"
            )
        out += ["", "Split of a step (share of its wall time, median over a setting's runs):", ""]
        out += ["| setting | " + " | ".join(PHASES) + " |", "|---|" + "---|" * len(PHASES)]
        for row in rec["settings"]:
            out.append(f"| {row['setting']} | " + " | ".join(f"{100 * row['split'][p]:.1f}%" for p in PHASES) + " |")
        for setting, why in rec.get("left_out", {}).items():
            out += ["", f"{setting}: {why}."]
        group = rec["length_grouping"]
        out += [
            "",
            f"Length grouping (computed, not trained: mnrl-citation's no-duplicates sampler does not group): "
            f"{group['triplets']:,} triplets in batches of {group['batch']}, padding share "
            f"{100 * group['random']['padding_share']:.1f}% in random batches, "
            f"{100 * group['grouped']['padding_share']:.1f}% sorted within windows of 50 batches: "
            f"{100 * group['positions_saved']:.1f}% fewer positions.",
            "",
            f"Verdict: {rec['verdict']}",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def verdict(rows: list[dict[str, Any]], kind: dict[str, Any]) -> str:
    """Whether the best setting reached 60% of the peak of its precision, and what the split says stops it."""
    measured = [r for r in rows if r["share_of_peak"] is not None]
    if not measured:
        return "no setting has a known peak."
    best = max(measured, key=lambda r: r["share_of_peak"])
    reached = best["share_of_peak"] >= 0.6
    biggest = max(PHASES, key=lambda p: best["split"][p])
    text = (
        f"best {best['setting']} at {100 * best['share_of_peak']:.1f}% of the {best['dtype']} peak: "
        f"{'meets' if reached else 'misses'} the 60% target."
    )
    if not reached:
        dense = best["split"]["forward"] + best["split"]["backward"]
        busy = best["share_of_core_peak_per_cpu_s"]
        text += (
            f" The process got {best['cores_got']:.2f} of {kind['cores']} cores; per CPU-second it got, the model"
            f" reached {100 * busy:.1f}% of a core's peak"
        )
        if busy >= 0.6:
            text += ": the shared CPU, not the arithmetic, stops it."
        else:
            text += (
                f", so even the cores it got run below the target. Forward + backward take {100 * dense:.0f}% of a"
                f" step ({biggest} the largest phase), padding {100 * best['padding_share_executed']:.1f}% of the"
                " executed positions"
            )
            text += (
                ": what stops it is the speed of the forward and backward kernels, not padding, tokenizing or the"
                " optimiser."
                if dense >= 0.8 and best["padding_share_executed"] < 0.1
                else "."
            )
    if kind["peaks"].get("bf16") is None:
        text += " No bf16 unit (avx512_bf16 / amx_bf16): fp32 is this CPU's best precision."
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run folder with notebooks 01 and 02")
    parser.add_argument("--steps", type=int, default=8, help="timed optimiser steps per run (default 8)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="turns of every setting (default 2)")
    parser.add_argument("--settings", nargs="+", default=["fp32", "fp32-1-thread", "fp32-compile", "bf16"])
    parser.add_argument(
        "--setting-timeout", type=int, default=1800, help="seconds a run may take before its setting is left out"
    )
    parser.add_argument(
        "--compile-rounds", type=int, default=1, help="rounds that run the torch.compile setting (default 1)"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite the Markdown table from the results JSON, measure nothing"
    )
    parser.add_argument("--out", type=Path, help="default bench/measured/train_cpu_<corpus>.json")
    parser.add_argument("--worker", nargs=2, metavar=("SETTING", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        paths = RunPaths.of(args.run_dir)
        if not (paths.triplets_dir / "train.jsonl").is_file():
            raise DataError("no mined triplets (run notebooks 01 and 02 first)", paths.triplets_dir / "train.jsonl")
        unknown = [s for s in args.settings if s not in SETTINGS]
        if unknown:
            raise DataError(f"unknown setting {unknown[0]!r} (expected one of {sorted(SETTINGS)})", "--settings")
    except DataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.worker:
        run_setting(args.run_dir, args.worker[0], args.steps, args.warmup, Path(args.worker[1]))
        return 0
    out = args.out or REPO / "bench" / "measured" / f"train_cpu_{corpus_label(paths.run_dir)}.json"
    if args.render_only:
        if not out.is_file():
            print(f"error: {out}: no results to render (run the benchmark first)", file=sys.stderr)
            return 2
        machines = json.loads(out.read_text())["machines"]
        write_measured(out, {"machines": machines}, markdown(machines))
        return 0
    machine = machine_info()
    kind = cpu_kind()
    settings = [s for s in args.settings if SETTINGS[s][0] != "bf16" or native_bf16_cpu()]
    load, uptime = [os.getloadavg()[0]], subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{machine_label(machine)}; peaks {kind['peaks']}; {uptime}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in settings}
    gave_up: dict[str, str] = {}
    shape = model_shape()
    with tempfile.TemporaryDirectory(prefix="bench-train-cpu-") as tmp:
        for round_ in range(args.rounds):
            order = settings if round_ % 2 == 0 else settings[::-1]  # A B C, C B A: each gets both ends
            for setting in order:
                worker_out = Path(tmp) / f"{setting}-{round_}.json"
                command = [sys.executable, __file__, str(args.run_dir), "--steps", str(args.steps)]
                command += ["--warmup", str(args.warmup + (1 if SETTINGS[setting][2] else 0))]
                command += ["--worker", setting, str(worker_out)]
                if setting in gave_up or (SETTINGS[setting][2] and round_ >= args.compile_rounds):
                    continue
                failed = run_worker(command, args.setting_timeout)
                if failed == "timeout":
                    gave_up[setting] = f"no result within {args.setting_timeout} s (round {round_ + 1}); left out"
                    print(f"{setting}: {gave_up[setting]}", flush=True)
                    continue
                if failed:  # named in the table's section, the rest still measured
                    print(failed, file=sys.stderr)
                    last = failed.strip().splitlines()[-1] if failed.strip() else "no output"
                    gave_up[setting] = f"failed in round {round_ + 1}: {last[:300]}"
                    continue
                row = summarise(json.loads(worker_out.read_text()), shape)
                row["round"], row["load_1min"] = round_, os.getloadavg()[0]
                runs[setting].append(row)
                load.append(row["load_1min"])
                print(json.dumps(row), flush=True)
    rows = []
    baseline = [r["triplets_per_s"] for r in runs["fp32"]] if "fp32" in runs else None
    for setting, measured in runs.items():
        if not measured:
            continue
        middle = sorted(measured, key=lambda r: r["triplets_per_s"])[len(measured) // 2]  # the median run
        peak = kind["peaks"][SETTINGS[setting][0]]
        row = {**middle, "rounds": len(measured), "all_triplets_per_s": [r["triplets_per_s"] for r in measured]}
        row["split"] = {p: round(statistics.median(r["split"][p] for r in measured), 4) for p in PHASES}
        row["share_of_peak"] = round(row["model_gflop_per_s"] / peak["gflop_per_s"], 4) if peak else None
        per_core = peak["gflop_per_s"] / kind["cores"] if peak else None
        row["share_of_core_peak_per_cpu_s"] = round(row["model_gflop_per_cpu_s"] / per_core, 4) if peak else None
        ratios = [m["triplets_per_s"] / b for m, b in zip(measured, baseline, strict=False)] if baseline else [1.0]
        row["x_fp32"] = round(statistics.median(ratios), 3)
        rows.append(row)
    label = machine_label({**machine, "cpu": kind["model"] or machine["cpu"]})
    first = rows[0]
    record = {
        "benchmark": f"{corpus_label(paths.run_dir)} mined triplets, the cpu profile's training ({first['setting']}: "
        f"minilm, mnrl-citation, batch 64, 64 wordpieces); {args.warmup} warm-up + {args.steps} timed optimiser steps "
        f"per run, {args.rounds} rounds taking turns; figures are each setting's median run",
        **provenance("python bench/bench_train_cpu.py RUN_DIR", sys.argv[2:] if argv is None else argv[1:], machine),
        "cpu_kind": kind,
        "model_shape": shape,
        "flops": "model: real tokens x (6 N + 12 L H n), n the text's own length, padding excluded; executed: every "
        "position given to the model x (6 N + 12 L H S), S the padded width",
        "load": load,
        "uptime": uptime,
        "settings": rows,
        "left_out": gave_up,
        "length_grouping": length_grouping(args.run_dir, first["batch"], first["max_length"], 6400),
    }
    record["verdict"] = verdict(rows, kind)
    existing = json.loads(out.read_text()) if out.is_file() else {}
    machines = {**existing.get("machines", {}), label: record}
    write_measured(out, {"machines": machines}, markdown(machines))
    print(markdown({label: record}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
