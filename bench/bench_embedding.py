"""Embedding throughput: the project's embedder vs the plain ``transformers`` recipe of the SPECTER README.

The reference recipe (github.com/allenai/specter, "How to use the pretrained model")::

    inputs = tokenizer(title_abs, padding=True, truncation=True, return_tensors="pt", max_length=512)
    result = model(**inputs)
    embeddings = result.last_hidden_state[:, 0, :]

run over batches in input order (no sorting, and no ``torch.no_grad`` as in the README). Ours: the
same model and weights, batches sorted by length, inference mode (optionally bf16 autocast).
Both are timed in the same process, one after the other (``--blocks N`` interleaves them block by
block, so that both see the same load on a shared machine, at the cost of sorting within blocks only); the vectors are compared by cosine similarity.

    python bench/bench_embedding.py                    # 1,000 hep-th abstracts, minilm, [CLS], 512 tokens
    python bench/bench_embedding.py --variants ref,ours,ours-bf16
    python bench/bench_embedding.py --random-bert --device cuda --n 20000 --max-length 256 --variants ours-bf16
    # the CPU backends: OpenVINO fp32 against the recipe and the torch path, the model's own pooling
    python bench/bench_embedding.py --n 600 --max-length 256 --pooling model --variants ref,ours,ov --blocks 3

``ov`` is the OpenVINO backend (``embed --backend openvino``) at f32, ``ov-bf16`` asks OpenVINO for bf16,
``ov-int8`` is ``embed --dtype int8`` (NNCF, calibrated on a seeded sample of 300 of the papers);
conversion, quantization and compilation happen before the clock starts (they are cached after the
first run). A variant name ending in ``-tb`` (``ov-tb``, ``ov-int8-tb``, ``ours-tb``) is the same
encoder batched by ``--token-budget`` padded wordpieces (``embed --token-budget``) instead of ``--batch-size``.

    # the CPU targets: int8 and fp32 against the recipe, 1,000 papers at 256 wordpieces
    python bench/bench_embedding.py --max-length 256 --pooling model --variants ref,ov,ov-int8 --blocks 4
With ``--pooling model``/``mean`` the reference recipe pools by the masked mean, as the model card's
recipe for a sentence-transformers model does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.data.records import Paper  # noqa: E402
from specter_utils.embedding.embed import embed_papers  # noqa: E402
from specter_utils.embedding.encoder import Encoder, load_encoder  # noqa: E402
from specter_utils.executed import cpu_flags, machine_label  # noqa: E402
from specter_utils.paths import hepth_dir  # noqa: E402


def pick_papers(src: Path, n: int) -> list[Paper]:
    """``n`` hep-th papers with an abstract, evenly spaced over the sorted ids (deterministic)."""
    from specter_utils.data.hepth import read_hepth

    corpus = read_hepth(src)
    ids = sorted((pid for pid, p in corpus.papers.items() if p.abstract), key=int)
    step = max(1, len(ids) // n)
    chosen = ids[::step][:n]
    if len(chosen) < n:  # more papers asked for than there are: cycle (for GPU throughput runs)
        chosen = [chosen[i % len(chosen)] for i in range(n)]
        return [
            Paper(f"{pid}#{i}", corpus.papers[pid].title, corpus.papers[pid].abstract) for i, pid in enumerate(chosen)
        ]
    return [corpus.papers[pid] for pid in chosen]


def reference_recipe(encoder: Encoder, papers: list[Paper], batch_size: int) -> np.ndarray:
    """The SPECTER README recipe, batch by batch in input order, on the encoder's own weights.

    [CLS] for a ``cls`` encoder, else the masked mean (cosines ignore the model's final normalisation).
    """
    tokenizer, model = encoder.tokenizer, encoder.model[0].auto_model
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(papers), batch_size):
        batch = papers[start : start + batch_size]
        title_abs = [p.title + tokenizer.sep_token + (p.abstract or "") for p in batch]
        inputs = tokenizer(title_abs, padding=True, truncation=True, return_tensors="pt", max_length=encoder.max_length)
        result = model(**inputs.to(device))
        hidden = result.last_hidden_state
        if encoder.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        out.append(pooled.detach().float().cpu().numpy())
    return np.vstack(out)


def random_bert_dir(tokenizer_source: str, out: Path) -> Path:
    """A BERT-base-shaped model (12 layers, 768 hidden, 12 heads) with random weights, saved with a BERT tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hepth", type=Path, default=hepth_dir(), help="hep-th folder (default ../shared/data/hepth)")
    parser.add_argument("--n", type=int, default=1000, help="papers (default 1000)")
    parser.add_argument("--model", default="minilm", help="model (default minilm, with [CLS] pooling)")
    parser.add_argument("--random-bert", action="store_true", help="a random BERT-base-shaped model instead")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--blocks", type=int, default=1, help="interleave the variants over this many blocks (each sorted on its own)"
    )
    parser.add_argument(
        "--variants", default="ref,ours", help="comma list of ref, ours, ours-bf16, ov, ov-bf16, ov-int8"
    )
    parser.add_argument(
        "--token-budget", type=int, default=4096, help="the -tb variants: padded wordpieces per batch (default 4096)"
    )
    parser.add_argument("--int8-scheme", default="default", help="ov-int8: the NNCF scheme (default)")
    parser.add_argument(
        "--pooling", choices=("cls", "mean", "model"), default="cls", help="cls (default), mean, or the model's own"
    )
    parser.add_argument("--out", type=Path, help="also write the figures (JSON) and their table (.md beside it)")
    args = parser.parse_args()
    if args.hepth is None:
        parser.error("hep-th data not found: pass --hepth DIR")
    import torch

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    started = time.time()
    papers = pick_papers(args.hepth, args.n)
    print(f"{len(papers)} hep-th papers read in {time.time() - started:.0f} s; torch threads {torch.get_num_threads()}")
    print(f"CPU flags: {' '.join(cpu_flags()) or 'none of avx2/avx512/amx'}")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(random_bert_dir(args.model, Path(tmp) / "bert")) if args.random_bert else args.model
        encoders = {
            "ours": load_encoder(model, args.pooling, args.max_length, args.device, "float32"),
            "ours-bf16": None,
        }
        if "ours-bf16" in variants:
            encoders["ours-bf16"] = Encoder(**{**encoders["ours"].__dict__, "dtype": "bfloat16"})
        encoder = encoders["ours"]
        for variant, precision in (("ov", "float32"), ("ov-bf16", "bfloat16"), ("ov-int8", "int8")):
            if variant in variants or f"{variant}-tb" in variants:
                from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

                tick = time.perf_counter()
                texts = [p.text(encoder.sep) for p in papers]
                try:
                    encoders[variant] = to_openvino(encoder, precision, texts, args.int8_scheme)
                except BackendUnavailable as exc:
                    print(f"{variant}: skipped: {exc}")
                    variants = [v for v in variants if v.removesuffix("-tb") != variant]
                    continue
                print(
                    f"{variant}: OpenVINO {encoders[variant].openvino_version}, inference precision "
                    f"{encoders[variant].precision}, ready in {time.perf_counter() - tick:.1f} s "
                    f"(cache {encoders[variant].cache_dir})"
                )
        lengths = encoder.token_lengths([p.text(encoder.sep) for p in papers])
        print(
            f"model {'random BERT-base' if args.random_bert else args.model}, pooling {encoder.pooling_detail}, "
            f"max_length {encoder.max_length}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
            f"batch {args.batch_size}, {args.device}; wordpieces mean {lengths.mean():.0f}, max {lengths.max()}"
        )
        for variant in variants:  # warm-up, off the clock: first-call allocations and thread start-up
            if variant == "ref":
                reference_recipe(encoder, papers[:2], args.batch_size)
            else:
                embed_papers(encoders[variant.removesuffix("-tb")], papers[:2], progress=False)
        seconds = dict.fromkeys(variants, 0.0)
        vectors: dict[str, list[np.ndarray]] = {v: [] for v in variants}
        blocks = np.array_split(np.arange(len(papers)), args.blocks)
        for number, block in enumerate(blocks):
            block_papers = [papers[i] for i in block]
            order = variants if number % 2 == 0 else variants[::-1]  # alternate who goes first
            for variant in order:
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                tick = time.perf_counter()
                if variant == "ref":
                    block_vectors = reference_recipe(encoder, block_papers, args.batch_size)
                else:
                    block_vectors = embed_papers(
                        encoders[variant.removesuffix("-tb")],
                        block_papers,
                        batch_size=args.batch_size,
                        progress=False,
                        token_budget=args.token_budget if variant.endswith("-tb") else None,
                    ).vectors
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                seconds[variant] += time.perf_counter() - tick
                vectors[variant].append(block_vectors)
            done = ", ".join(f"{v} {sum(map(len, vectors[v])) / seconds[v]:.2f}" for v in variants)
            print(f"  block {number + 1}/{len(blocks)}: docs/s so far: {done}", flush=True)
    rates = {v: len(papers) / seconds[v] for v in variants}
    print("\nresults (docs/s over all blocks)")
    rows = []
    for variant in variants:
        line = f"  {variant:10s} {rates[variant]:9.2f} docs/s  ({seconds[variant]:.1f} s)"
        if "ref" in variants and variant != "ref":
            cos = cosine_rows(np.vstack(vectors[variant]), np.vstack(vectors["ref"]))
            line += f"  ratio to ref {rates[variant] / rates['ref']:.2f}x  cosine to ref min {cos.min():.6f}"
            line += f" mean {cos.mean():.6f}"
        if "ours" in variants and variant not in {"ref", "ours"}:
            cos = cosine_rows(np.vstack(vectors[variant]), np.vstack(vectors["ours"]))
            line += f"  ratio to ours {rates[variant] / rates['ours']:.2f}x  min cosine to ours {cos.min():.6f}"
        if "ov" in variants and variant.startswith("ov-"):
            cos = cosine_rows(np.vstack(vectors[variant]), np.vstack(vectors["ov"]))
            line += f"  ratio to ov {rates[variant] / rates['ov']:.2f}x  cosine to ov min {cos.min():.6f} mean {cos.mean():.6f}"
        print(line)
        rows.append(row_figures(variant, rates, seconds, vectors))
    if args.out:
        record = {
            "benchmark": f"{len(papers)} hep-th abstracts (evenly spaced over the sorted ids)",
            "papers": len(papers),
            "model": "random BERT-base" if args.random_bert else args.model,
            "pooling": encoder.pooling_detail,
            "max_length": encoder.max_length,
            "batch_size": args.batch_size,
            "blocks": args.blocks,
            "wordpieces_mean": round(float(lengths.mean()), 1),
            "device": args.device,
            **provenance("python bench/bench_embedding.py", sys.argv[1:]),
            "variants": rows,
        }
        write_measured(args.out, record, table(record))
        print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


VARIANT_NAMES = {
    "ref": "transformers recipe (reference)",
    "ours": "ours, torch float32, sorted",
    "ours-bf16": "ours, torch bf16 autocast (`--backend torch --dtype bfloat16`)",
    "ov": "ours, OpenVINO f32 (`embed` default on a CPU)",
    "ov-bf16": "ours, OpenVINO bf16",
    "ov-int8": "ours, OpenVINO int8 (`--dtype int8`)",
}


def row_figures(variant: str, rates: dict, seconds: dict, vectors: dict) -> dict:
    """One variant's docs/s, its ratios and its cosines to the reference and to OpenVINO f32."""
    row = {"variant": variant, "docs_per_s": round(rates[variant], 2), "seconds": round(seconds[variant], 1)}
    for other in ("ref", "ov"):
        if other in rates and variant != other:
            cos = cosine_rows(np.vstack(vectors[variant]), np.vstack(vectors[other]))
            row[f"x_{other}"] = round(rates[variant] / rates[other], 2)
            row[f"cosine_{other}"] = {"min": round(float(cos.min()), 6), "mean": round(float(cos.mean()), 6)}
    return row


def table(record: dict) -> str:
    """The figures as Markdown, headed by the benchmark, the machine and the command."""
    lines = [
        f"{record['benchmark']}, {record['model']} ({record['pooling']}), at most {record['max_length']} wordpieces "
        f"({record['wordpieces_mean']} on average), batch {record['batch_size']}, variants interleaved over "
        f"{record['blocks']} block(s) in one process.",
        "",
        f"Machine: {machine_label(record['machine'])}; {record['date']}, commit {record['commit']}.",
        f"Command: `{record['argv']}`",
        "",
        "| variant | docs/s | x reference | cosine to reference (min / mean) | x OpenVINO f32 |",
        "|---|---|---|---|---|",
    ]
    for row in record["variants"]:
        cos = row.get("cosine_ref")
        cosine = f"{cos['min']:.6f} / {cos['mean']:.6f}" if cos else "-"
        versus_ov = "1.00" if row["variant"] == "ov" else (f"{row['x_ov']:.2f}" if "x_ov" in row else "-")
        lines.append(
            f"| {VARIANT_NAMES.get(row['variant'], row['variant'])} | {row['docs_per_s']:.2f} "
            f"| {row.get('x_ref', 1.0):.2f} | {cosine} | {versus_ov} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
