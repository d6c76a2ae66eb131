"""Training throughput of a BERT-base-shaped SPECTER model: the project's settings vs sentence-transformers defaults.

Measures triplets/s, tokens/s and model FLOP utilisation (MFU: achieved / peak bf16 FLOP/s of the GPU)
for a randomly initialised BERT with SciBERT's shape (12 layers, hidden 768, vocabulary 31,090; no
download) at sequence lengths 256 and 512. Both settings run through the real sentence-transformers
trainer with TripletLoss in the same process:

* ``st-defaults``: what a plain ``SentenceTransformerTrainer`` does: fp32, batch 8, mean pooling.
* ``project``: ``specter_utils.training`` (gpu preset): bf16 on a GPU that has it, batch 32, [CLS] pooling;
  ``--compile`` adds a torch.compile variant.

Every text is exactly ``seq_len`` tokens (random words), so there is no padding to flatter either side.
Model FLOPs per token (PaLM appendix B): ``6 * N + 12 * layers * hidden * seq_len``, N = non-embedding
parameters; three texts per triplet. The goal on one H100 is >= 40% of peak bf16 FLOP/s.

    python bench/bench_training.py                      # GPU: full model, 256 and 512
    python bench/bench_training.py --small --steps 3    # CPU: 2 layers, a few steps

``--nproc N`` instead measures data parallelism: the project trainer under ``torchrun`` with 1 and with
N processes (gloo on CPU, one GPU each elsewhere), the same per-process batch (so N processes take N
times the triplets per step), for the triplet loss and for ``mnrl`` with its embeddings gathered across
processes. On CPU the cores are shared out (cores / N threads per process), so the ratio shows what the
collectives cost, not a speed-up::

    python bench/bench_training.py --nproc 2 --small --seq-lens 128 --steps 6
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertModel, TrainerCallback  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from train_flops import flops_per_token  # noqa: E402

from specter_utils.models import resolve_model  # noqa: E402
from specter_utils.spec import train_config  # noqa: E402

SCIBERT_VOCAB = 31090
# Dense bf16 peak FLOP/s (vendor datasheets, no sparsity).
PEAK_BF16 = {"H100 PCIe": 756e12, "H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12}


def peak_bf16(device_name: str) -> float | None:
    for key in sorted(PEAK_BF16, key=len, reverse=True):  # "H100 PCIe" before "H100"
        if all(part in device_name for part in key.split()):
            return PEAK_BF16[key]
    return None


class StepTimer(TrainerCallback):
    """Wall-clock time of each optimiser step (synchronising the GPU at each step end)."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        if not self.ends:
            self.ends.append(time.perf_counter())

    def on_step_end(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.ends.append(time.perf_counter())


def make_base_model(out: Path, layers: int) -> tuple[Path, dict[str, int]]:
    """A random BERT of SciBERT's shape (``layers`` layers) with MiniLM's tokenizer (its ids fit the vocab)."""
    config = BertConfig(
        vocab_size=SCIBERT_VOCAB,
        hidden_size=768,
        num_hidden_layers=layers,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
    )
    model = BertModel(config)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(resolve_model("minilm")).save_pretrained(out)
    embedding = sum(p.numel() for n, p in model.named_parameters() if n.startswith("embeddings."))
    total = sum(p.numel() for p in model.parameters())
    return out, {"params": total, "non_embedding_params": total - embedding, "layers": layers, "hidden": 768}


def synthetic_triplets(tokenizer, n: int, seq_len: int, seed: int = 0):
    """``n`` triplets of random-word texts, each at least ``seq_len`` tokens (truncated to exactly that)."""
    from datasets import Dataset

    rng = random.Random(seed)
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and len(w) > 2]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(seq_len))

    return Dataset.from_dict({k: [text() for _ in range(n)] for k in ("anchor", "positive", "negative")})


def run_setting(name: str, base: Path, seq_len: int, batch: int, steps: int, warmup: int, shape: dict, **kw) -> dict:
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import TripletDistanceMetric, TripletLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from specter_utils.training.train import resolve_precision, training_arguments
    from specter_utils.training.train import specter_model as build_model

    out = Path(tempfile.mkdtemp(prefix=f"bench_{name}_"))
    if kw.get("project"):
        config = train_config(
            "gpu",
            triplets="-",
            metadata="-",
            out=str(out),
            base_model=str(base),
            max_length=seq_len,
            batch_size=batch,
            effective_batch_size=batch,
            max_steps=warmup + steps,
            save_steps=10**9,
            logging_steps=10**9,
            progress_bar=False,
            torch_compile=kw.get("compile", False),
            dataloader_num_workers=0 if not torch.cuda.is_available() else 2,
        )
        precision = resolve_precision(config.dtype)
        model = build_model(str(base), "cls", seq_len)
        args = training_arguments(config, out, precision, has_val=False)
        args.save_strategy = "no"
        loss = TripletLoss(model, TripletDistanceMetric.EUCLIDEAN, triplet_margin=1.0)
    else:  # sentence-transformers defaults: a Transformer + (mean) Pooling model, default arguments
        precision = "fp32"
        transformer = Transformer(str(base), max_seq_length=seq_len)
        model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension())])
        args = SentenceTransformerTrainingArguments(
            output_dir=str(out),
            per_device_train_batch_size=batch,
            max_steps=warmup + steps,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            logging_steps=10**9,
        )
        loss = TripletLoss(model)
    data = synthetic_triplets(model.tokenizer, batch * (warmup + steps), seq_len)
    timer = StepTimer()
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss, callbacks=[timer])
    trainer.train()
    measured = timer.ends[warmup:]
    seconds = measured[-1] - measured[0]
    n_steps = len(measured) - 1
    triplets_s = n_steps * batch / seconds
    tokens_s = triplets_s * 3 * seq_len
    achieved = tokens_s * flops_per_token(shape["non_embedding_params"], shape["layers"], shape["hidden"], seq_len)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    peak = peak_bf16(device) if torch.cuda.is_available() else None
    row = {
        "setting": name,
        "seq_len": seq_len,
        "batch": batch,
        "precision": precision,
        "steps_timed": n_steps,
        "seconds": round(seconds, 3),
        "triplets_per_s": round(triplets_s, 3),
        "tokens_per_s": round(tokens_s, 1),
        "model_tflops_per_s": round(achieved / 1e12, 4),
        "mfu_vs_bf16_peak": round(achieved / peak, 4) if peak else None,
        "epoch_684k_hours": round(684_000 / triplets_s / 3600, 2),
    }
    del trainer, model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return row


def padding_report(triplets_dir: Path, metadata: Path, seq_len: int, batch: int, tokenizer_path: str) -> dict:
    """Share of padded positions per batch on real triplets: random batches vs length-grouped batches.

    Compute is proportional to padded positions (the three columns of a batch are padded together),
    so ``1 - padded_grouped / padded_random`` is the saving length grouping can give on any device.
    """
    from datasets import Dataset

    from specter_utils.training.data import load_training_data
    from specter_utils.training.sampler import EpochSeededBatchSampler

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    data = load_training_data(triplets_dir, metadata, tokenizer.sep_token)
    columns = (data.train.anchor, data.train.positive, data.train.negative)
    lengths = [
        [len(ids) for ids in tokenizer(list(column), truncation=True, max_length=seq_len)["input_ids"]]
        for column in columns
    ]
    longest = [max(row) for row in zip(*lengths, strict=True)]
    dataset = Dataset.from_dict({"anchor": columns[0], "positive": columns[1], "negative": columns[2]})
    report = {"triplets": len(longest), "seq_len": seq_len, "batch": batch}
    for grouped in (False, True):
        sampler = EpochSeededBatchSampler(dataset, batch, drop_last=False, seed=0, group_by_length=grouped)
        real = padded = 0
        for rows in sampler:
            width = max(longest[i] for i in rows)
            real += sum(lengths[c][i] for c in range(3) for i in rows)
            padded += 3 * len(rows) * width
        report["grouped" if grouped else "random"] = {"positions": padded, "padding_share": round(1 - real / padded, 4)}
    report["compute_saved_by_grouping"] = round(1 - report["grouped"]["positions"] / report["random"]["positions"], 4)
    return report


def dp_worker(args: argparse.Namespace) -> None:
    """One process of a ``torchrun`` launch: time the project trainer; rank 0 writes the row to ``args.dp_worker``."""
    from specter_utils.training.distributed import world_size
    from specter_utils.training.losses import build_loss
    from specter_utils.training.train import specter_model, trainer_class, training_arguments

    world = world_size()
    seq_len, batch = args.seq_lens[0], args.batch
    out = Path(tempfile.mkdtemp(prefix="bench_dp_"))
    config = train_config(
        triplets="-",
        metadata="-",
        out=str(out),
        base_model=str(args.base),
        loss=args.loss,
        max_length=seq_len,
        batch_size=batch,
        effective_batch_size=batch * world,
        max_steps=args.warmup + args.steps,
        save_steps=10**9,
        logging_steps=10**9,
        eval_steps=10**9,
        progress_bar=False,
        dataloader_num_workers=0,
    )
    model = specter_model(str(args.base), "cls", seq_len)
    loss = build_loss(config, model, [], gather_across_devices=world > 1)
    training = training_arguments(config, out, "bf16" if torch.cuda.is_available() else "fp32", has_val=False)
    training.save_strategy = "no"
    data = synthetic_triplets(model.tokenizer, batch * world * (args.warmup + args.steps), seq_len)
    timer = StepTimer()
    trainer = trainer_class(config)(model=model, args=training, train_dataset=data, loss=loss, callbacks=[timer])
    trainer.train()
    measured = timer.ends[args.warmup :]
    seconds = measured[-1] - measured[0]
    triplets_s = (len(measured) - 1) * batch * world / seconds
    if int(os.environ.get("RANK", "0")) == 0:
        row = {
            "loss": args.loss,
            "processes": world,
            "threads_per_process": torch.get_num_threads(),
            "seq_len": seq_len,
            "batch_per_process": batch,
            "global_batch": batch * world,
            "steps_timed": len(measured) - 1,
            "seconds": round(seconds, 3),
            "triplets_per_s": round(triplets_s, 3),
        }
        Path(args.dp_worker).write_text(json.dumps(row))


def data_parallel(args: argparse.Namespace) -> int:
    """Triplets/s of 1 and ``args.nproc`` processes under torchrun, and their ratio, for each loss."""
    cores = os.cpu_count() or 1
    layers = 2 if args.small else 12
    torch.manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base, shape = make_base_model(Path(tmp) / "bert", layers)
        device = f"{torch.cuda.device_count()} GPU(s)" if torch.cuda.is_available() else f"CPU, {cores} cores"
        print(f"# device: {device}; model: {shape}; torch {torch.__version__}", flush=True)
        for loss in args.losses:
            for nproc in (1, args.nproc):
                row_file = Path(tmp) / f"row-{loss}-{nproc}.json"
                threads = max(1, cores // nproc)  # the same cores in all, shared out
                env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
                command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node"]
                command += [str(nproc), __file__, "--dp-worker", str(row_file), "--base", str(base), "--loss", loss]
                command += ["--seq-lens", str(args.seq_lens[0]), "--batch", str(args.batch)]
                command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
                done = subprocess.run(command, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    print(done.stderr[-3000:], file=sys.stderr)
                    return 1
                row = json.loads(row_file.read_text())
                rows.append(row)
                print(json.dumps(row), flush=True)
        print("\n| loss | processes | threads each | global batch | triplets/s | x 1 process |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            single = next(r for r in rows if r["loss"] == row["loss"] and r["processes"] == 1)
            ratio = row["triplets_per_s"] / single["triplets_per_s"]
            print(
                f"| {row['loss']} | {row['processes']} | {row['threads_per_process']} | {row['global_batch']} | "
                f"{row['triplets_per_s']:.2f} | {ratio:.2f} |"
            )
        if args.json:
            args.json.write_text(json.dumps({"device": device, "model": shape, "rows": rows}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seq-lens", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--steps", type=int, default=20, help="timed optimiser steps per setting")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (allocator, compile)")
    parser.add_argument("--batch", type=int, default=32, help="per-device triplets per step, project setting")
    parser.add_argument("--st-batch", type=int, default=8, help="sentence-transformers' default batch")
    parser.add_argument("--small", action="store_true", help="CPU: 2 layers instead of 12, batch 2, 1 warm-up step")
    parser.add_argument("--compile", action="store_true", help="also time the project setting with torch.compile")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--nproc", type=int, help="data parallelism: time 1 and NPROC processes under torchrun (per-process --batch)"
    )
    parser.add_argument(
        "--losses", nargs="+", default=["triplet", "mnrl"], help="with --nproc: the losses to time (mnrl gathers)"
    )
    parser.add_argument("--dp-worker", help=argparse.SUPPRESS)  # a torchrun process of --nproc: its row file
    parser.add_argument("--base", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--loss", default="triplet", help=argparse.SUPPRESS)
    parser.add_argument(
        "--padding-from",
        nargs=2,
        type=Path,
        metavar=("TRIPLETS_DIR", "METADATA"),
        help="instead of timing, report padding with and without length grouping on these real triplets",
    )
    args = parser.parse_args(argv)
    if args.dp_worker:
        dp_worker(args)
        return 0
    if args.nproc:
        if args.small:
            args.warmup = 1
        return data_parallel(args)
    if args.padding_from:
        for seq_len in args.seq_lens:
            report = padding_report(*args.padding_from, seq_len, args.batch, resolve_model("minilm"))
            print(json.dumps(report), flush=True)
        return 0
    layers = 2 if args.small else 12
    if args.small:
        args.batch, args.st_batch, args.warmup = 2, 2, 1
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        base, shape = make_base_model(Path(tmp) / "bert", layers)
        device = (
            torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
        )
        print(f"# device: {device}; model: {shape}; torch {torch.__version__}", flush=True)
        rows = []
        for seq_len in args.seq_lens:
            settings = [("st-defaults", args.st_batch, {}), ("project", args.batch, {"project": True})]
            if args.compile:
                settings.append(("project+compile", args.batch, {"project": True, "compile": True}))
            for name, batch, kw in settings:
                row = run_setting(name, base, seq_len, batch, args.steps, args.warmup, shape, **kw)
                rows.append(row)
                print(json.dumps(row), flush=True)
        baseline = {r["seq_len"]: r["triplets_per_s"] for r in rows if r["setting"] == "st-defaults"}
        print(
            "\n| setting | seq len | batch | precision | triplets/s | tokens/s | model TFLOP/s | MFU (bf16 peak) | x st-defaults |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            mfu = f"{100 * r['mfu_vs_bf16_peak']:.1f}%" if r["mfu_vs_bf16_peak"] is not None else "n/a"
            ratio = r["triplets_per_s"] / baseline[r["seq_len"]]
            print(
                f"| {r['setting']} | {r['seq_len']} | {r['batch']} | {r['precision']} | {r['triplets_per_s']:.2f} | "
                f"{r['tokens_per_s']:.0f} | {r['model_tflops_per_s']:.3f} | {mfu} | {ratio:.2f} |"
            )
        if args.json:
            args.json.write_text(json.dumps({"device": device, "model": shape, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
