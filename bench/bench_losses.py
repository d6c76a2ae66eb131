"""Training throughput of each loss on this machine: triplets/s at one length, in one process.

Every setting trains the real model (default ``minilm``) on the same real triplets through
``specter_utils.training.train.train_specter`` for a few optimiser steps; the first step (warm-up) is
not timed. The ratio column is against the paper recipe (triplet loss, [CLS], batch 8 x 4
accumulation, the old cpu preset) measured in the same process.

    python bench/bench_losses.py --triplets runs/r11/triplets --metadata runs/r11/bench/train/metadata.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import TrainerCallback  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from specter_utils.spec import train_config
from specter_utils.training.train import train_specter  # noqa: E402

# name -> (recipe, TrainConfig overrides); the first is the baseline of the ratio column
SETTINGS = {
    "paper (triplet, cls, 8x4)": ("paper", {"batch_size": 8}),
    "paper (triplet, cls, 32x1)": ("paper", {"batch_size": 32}),
    "mnrl, batch 64": ("citation-mnrl", {"loss": "mnrl"}),
    "mnrl-citation, batch 64": ("citation-mnrl", {}),
    "gist (guide: frozen base), batch 64": ("citation-mnrl", {"loss": "gist"}),
    "cached mnrl, batch 64, mini-batch 16": ("citation-mnrl", {"loss": "mnrl", "cached_mini_batch": 16}),
}


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.ends: list[float] = []
        self.start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        if not self.start:
            self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())


def measure(name: str, recipe: str, overrides: dict, triplets: Path, metadata: str, steps: int, length: int) -> dict:
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as out:
        config = train_config(
            "cpu",
            recipe,
            triplets=str(triplets),
            metadata=metadata,
            out=out,
            max_seq_length=length,
            max_triplets=0,
            max_steps=steps + 1,
            save_steps=10_000,
            progress_bar=False,
            **overrides,
        )
        train_specter(config, callbacks=[timer])
    per_step = config.batch_size * config.accumulation_steps()
    seconds = timer.ends[-1] - timer.ends[0]  # steps 2..N+1: the first step is warm-up
    return {
        "setting": name,
        "loss": config.loss,
        "pooling": config.pooling,
        "triplets_per_step": per_step,
        "timed_steps": steps,
        "seconds": round(seconds, 2),
        "triplets_per_s": round(steps * per_step / seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triplets", type=Path, required=True, help="mining output dir (train.jsonl)")
    parser.add_argument("--metadata", required=True, help="the training dir's metadata.json")
    parser.add_argument("--length", type=int, default=128, help="wordpieces (default 128)")
    parser.add_argument("--steps", type=int, default=3, help="timed optimiser steps per setting (default 3)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        only_train = Path(tmp) / "triplets"  # no val.jsonl: no validation pass inside the timing
        only_train.mkdir()
        shutil.copy(args.triplets / "train.jsonl", only_train / "train.jsonl")
        rows = [
            measure(name, recipe, overrides, only_train, args.metadata, args.steps, args.length)
            for name, (recipe, overrides) in SETTINGS.items()
        ]
    baseline = rows[0]["triplets_per_s"]
    print(f"\n{torch.get_num_threads()} threads, {args.length} wordpieces, {args.steps} timed steps per setting")
    print("| setting | triplets/step | triplets/s | vs paper recipe |\n|---|---|---|---|")
    for row in rows:
        row["ratio_to_paper"] = round(row["triplets_per_s"] / baseline, 2)
        print(f"| {row['setting']} | {row['triplets_per_step']} | {row['triplets_per_s']} | {row['ratio_to_paper']}x |")
    if args.out:
        args.out.write_text(
            json.dumps({"threads": torch.get_num_threads(), "length": args.length, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
