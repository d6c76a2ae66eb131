"""``specter-utils embed``: embed papers with a model (or a baseline), shard the job, merge shard files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specter_utils.backend_kinds import BACKENDS, backend_help
from specter_utils.commands.common import (
    POSITIVE_INT,
    add_batch_size,
    add_dtype,
    add_max_length,
    add_out,
    add_quiet,
    check_out_file,
    input_file,
    silence_progress,
)
from specter_utils.config import EmbedConfig
from specter_utils.errors import DataError
from specter_utils.vocabularies import (
    DTYPE_ALIASES,
    EMBED_DTYPES,
    INT8_CALIBRATION,
    INT8_SCHEMES,
    POOLINGS,
    torch_dtype_name,
)

# embed's precisions by their short names, and torch's spellings of the same ones
DTYPE_CHOICES = (*EMBED_DTYPES, *(alias for alias, short in DTYPE_ALIASES.items() if short in EMBED_DTYPES))

EPILOG = """\
examples:
  specter-utils embed --model minilm --metadata data/metadata.json --out emb/minilm.jsonl
  specter-utils embed --model allenai/specter --metadata scidocs/paper_metadata_mag_mesh.json \\
      scidocs/paper_metadata_view_cite_read.json scidocs/paper_metadata_recomm.json --out emb/specter.jsonl
  # a cluster array job of 8 shards (0-based index), then one merge:
  specter-utils embed --model M --metadata F --out emb/part-$SLURM_ARRAY_TASK_ID.jsonl --shard $SLURM_ARRAY_TASK_ID/8
  specter-utils embed --merge emb/part-*.jsonl --out emb/all.jsonl
  # every visible GPU of one machine:
  specter-utils embed --model M --metadata F --out emb/all.jsonl --multi-gpu
  # Ray Data: a local Ray on this machine, or an existing cluster (GPU actors where it has GPUs):
  specter-utils embed --model M --metadata F --out emb/all.jsonl --engine ray
  specter-utils embed --model M --metadata F --out emb/all.jsonl --engine ray --ray-address HEAD:6379
  # on a CPU with openvino installed, --backend auto (the default) converts the model once to OpenVINO
  # (cached beside the model folder); the plain torch path:
  specter-utils embed --model minilm --metadata F --out emb/minilm.jsonl --backend torch
  # int8 on the CPU (OpenVINO + NNCF), calibrated on a sample of these papers and cached per
  # model, length and scheme; by default (--dtype auto) the fastest of float32, bf16 and int8,
  # timed once on this CPU and cached, whose vectors keep a cosine of 0.99 to float32 (bf16: 0.999):
  specter-utils embed --model minilm --metadata F --out emb/minilm-int8.jsonl --dtype int8
  specter-utils embed --model minilm --metadata F --out emb/minilm.jsonl --min-cosine 0.995
  # a baseline (sgc needs citations: the metadata's references/cited_by, or --edges):
  specter-utils embed --baseline sgc --metadata F --held-out scidocs/cite/test.qrel --out emb/sgc.jsonl
  # the pipeline's SIF vectors (fitted on the training papers too):
  specter-utils embed --baseline sif --metadata F --fit-metadata train/metadata.json --out emb/sif.jsonl
A killed run started again with the same arguments resumes from OUT.partial/ and writes the same file.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``embed`` to the top-level parser."""
    parser = subparsers.add_parser(
        "embed",
        help="embed papers into a SCIDOCS embeddings file (jsonl + npy + ids + meta)",
        description="Embed each paper's 'title [SEP] abstract' with a model ([CLS] for plain transformers models such "
        "as SPECTER, a sentence-transformers model's own pooling) or compute a baseline, writing FILE.jsonl, "
        "FILE.npy, FILE.ids.txt and FILE.meta.json atomically.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", default=EmbedConfig.model, help="model name or path (default: minilm, offline)")
    parser.add_argument(
        "--metadata",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        help="metadata.json (SPECTER), paper_metadata_*.json (SCIDOCS) or generic record files (.jsonl, .jsonl.gz, "
        ".parquet: paper_id, title, abstract per line, data/README.md); several are merged",
    )
    parser.add_argument("--ids", type=Path, help="only these paper ids (one per line), in this order")
    add_out(parser, "output FILE.jsonl (a part-finished run of the same command resumes)")
    add_batch_size(parser, EmbedConfig.batch_size, "papers per forward pass")
    add_max_length(parser, EmbedConfig.max_length, "wordpieces per paper")
    parser.add_argument(
        "--pooling", choices=POOLINGS, default=EmbedConfig.pooling, help="auto: the model's own if any, else [CLS]"
    )
    add_dtype(
        parser,
        DTYPE_CHOICES,
        None,
        "default auto: on a CPU with openvino, the fastest of float32, bf16 and int8 in a short timed probe whose "
        "vectors keep --min-cosine to float32 (bf16: at least 0.999), run once per machine, model, length and "
        "pooling and cached in $SPECTER_UTILS_CACHE (~/.cache/specter_utils); one line on stderr names the choice "
        "and the .meta.json keeps the figures; elsewhere (--backend torch, a GPU, --engine ray) fp32 on a CPU, "
        "bf16 autocast on a GPU. fp32, bf16 (torch's float32 and bfloat16 are accepted spellings): as asked; int8: "
        "post-training quantization with NNCF on the openvino backend, calibrated on a seeded sample of the papers "
        "(--calibration) and cached",
    )
    parser.add_argument(
        "--min-cosine",
        type=float,
        help=f"--dtype auto: least cosine to float32 over the probe's papers for int8 (default {EmbedConfig.min_cosine}"
        "; bf16 needs at least 0.999); a cached probe is chosen from again, not re-run",
    )
    parser.add_argument(
        "--int8-scheme",
        choices=INT8_SCHEMES,
        default="default",
        help="--dtype int8/auto: NNCF's transformer preset (default, with SmoothQuant 0.95), SmoothQuant at 0.5, "
        "none, or mixed (feed-forward outputs and the last layer kept in float32)",
    )
    parser.add_argument(
        "--calibration",
        type=POSITIVE_INT,
        default=INT8_CALIBRATION,
        metavar="N",
        help=f"--dtype int8/auto: papers in int8's seeded calibration sample (default {INT8_CALIBRATION}); the int8 "
        "model is cached per model, length, scheme and N, so a later corpus reuses it",
    )
    parser.add_argument(
        "--token-budget",
        type=POSITIVE_INT,
        help="batches of as many papers as fit this many padded wordpieces, instead of --batch-size papers",
    )
    parser.add_argument("--device", help="torch device (default: cuda if visible, else cpu)")
    parser.add_argument("--backend", choices=BACKENDS, default=EmbedConfig.backend, help=backend_help())
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: a Ray Data pipeline over model replicas (actors), on a local Ray it starts itself or on "
        "--ray-address; pip install 'specter-utils[scale]' (default local)",
    )
    parser.add_argument("--ray-address", help="--engine ray: an existing cluster, HOST:PORT, ray://HOST:PORT or auto")
    parser.add_argument(
        "--ray-workers",
        type=POSITIVE_INT,
        help="--engine ray: model replicas (default: one per GPU, else one per CPU but one)",
    )
    parser.add_argument("--shard", help="embed only shard i/n of the papers (0 <= i < n), for separate jobs")
    parser.add_argument("--multi-gpu", action="store_true", help="spread the work over every visible GPU")
    parser.add_argument(
        "--chunk-size", type=POSITIVE_INT, help="papers per resumable chunk (default: 1024; 16384 multi-GPU)"
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="resume a part-finished run (OUT.partial/); --no-resume discards it and starts again",
    )
    add_quiet(parser)
    parser.add_argument("--merge", type=Path, nargs="+", metavar="SHARD", help="merge these shard .jsonl files")
    parser.add_argument("--baseline", help="compute a baseline instead: random, tfidf, tfidf-hash, tfidf-svd, sif, sgc")
    parser.add_argument("--edges", type=Path, help="citations for sgc: 'citing cited' lines (default: from metadata)")
    parser.add_argument(
        "--held-out",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        help="sgc: query papers whose citations are dropped (.qrel files: their query ids; else one id a line)",
    )
    parser.add_argument(
        "--fit-metadata",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        help="tfidf*/sif/sgc: also fit on these papers (e.g. the training metadata.json), as the pipeline does; "
        "default: fit on the papers embedded",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the baselines")
    parser.set_defaults(func=run)


def _check_arguments(args: argparse.Namespace) -> None:
    """Every flag and path, before any model is loaded or file written (the paths first: a missing file is one
    line before the embedding stack is imported)."""
    args.probe = args.dtype in (None, "auto")  # the default: the probe's choice, cached per machine (on a CPU)
    args.dtype = torch_dtype_name(args.dtype) if args.dtype else "auto"
    if args.merge:
        for path in args.merge:
            input_file(path, "--merge")
    else:
        _check_inputs(args)
    _check_precision(args)
    # embed resumes a part-finished run (OUT.partial/); a finished OUT is replaced only with --overwrite
    check_out_file(args.out, args.overwrite, suffix=".jsonl")


def _check_precision(args: argparse.Namespace) -> None:
    """--dtype int8 / auto, --min-cosine and --token-budget: what they need and what they clash with."""
    if args.min_cosine is not None:
        if not args.probe:
            raise DataError(
                f"the parity limit of --dtype auto (the default), not of --dtype {args.dtype}", "--min-cosine"
            )
        if not 0.0 < args.min_cosine <= 1.0:
            raise DataError(f"must be in (0, 1], got {args.min_cosine}", "--min-cosine")
    if args.token_budget and (args.multi_gpu or args.engine == "ray"):
        raise DataError("batches run on one device with the local engine", "--token-budget")
    if args.dtype != "int8":
        return
    clashes = _given(
        ("--backend torch", args.backend == "torch"),
        ("--engine ray", args.engine == "ray"),
        ("--multi-gpu", args.multi_gpu),
        (f"--device {args.device}", args.device and not args.device.startswith("cpu")),
        ("--baseline", args.baseline),
    )
    if clashes:
        raise DataError(f"int8 runs on the openvino backend on the CPU, not with {clashes}", "--dtype")
    from specter_utils.workflow.embed import missing_int8_packages

    missing = missing_int8_packages()
    if missing:
        raise DataError(f"int8 needs {' and '.join(missing)}: pip install 'specter-utils[openvino]'", "--dtype")


def _given(*flags: tuple[str, object]) -> str:
    """The flags that were given, comma-separated ("" for none)."""
    return ", ".join(flag for flag, given in flags if given)


def _check_inputs(args: argparse.Namespace) -> None:
    if not args.metadata:
        raise DataError("give --metadata FILE [FILE ...] (or --merge SHARD ...)", "--metadata")
    for path in args.metadata:
        input_file(path, "--metadata")
    for flag, paths in (("--ids", [args.ids] if args.ids else []), ("--fit-metadata", args.fit_metadata)):
        for path in paths:
            input_file(path, flag)
    for path in args.held_out:
        input_file(path, "--held-out")
    if args.edges is not None:
        input_file(args.edges, "--edges")
    if args.baseline is not None:
        from specter_utils.workflow.embed import BASELINES

        if args.baseline not in BASELINES:
            raise DataError(f"unknown baseline {args.baseline!r}; known: {', '.join(BASELINES)}", "--baseline")
        if args.shard or args.multi_gpu:
            raise DataError(
                "--shard and --multi-gpu split a model's work; a baseline is fitted on all papers at once, so embed "
                "it in one job",
                "--baseline",
            )
    if args.engine == "ray":
        _check_ray(args)
    elif args.ray_address or args.ray_workers:
        raise DataError("--ray-address and --ray-workers need --engine ray", "--engine")
    folder = Path(args.model)
    if args.baseline is None and args.model != "minilm" and folder.is_dir() and not any(folder.iterdir()):
        raise DataError("--model: the model folder is empty", args.model)


def _check_ray(args: argparse.Namespace) -> None:
    """``--engine ray``: Ray places the work, so the flags that place it by hand do not apply."""
    from specter_utils.workflow.embed import check_ray_address

    clashes = _given(
        ("--shard", args.shard),
        ("--multi-gpu", args.multi_gpu),
        ("--device", args.device),
        ("--backend openvino", args.backend == "openvino"),
        ("--baseline", args.baseline),
    )
    if clashes:
        raise DataError(f"{clashes} cannot be used with --engine ray (Ray places the work)", "--engine")
    if args.ray_address:
        check_ray_address(args.ray_address)  # a dead address is one line now, not a minute's wait after the model loads


def run(args: argparse.Namespace) -> int:
    """Embed, compute a baseline, or merge shards."""
    _check_arguments(args)
    from specter_utils.workflow.embed import (
        BackendChoice,
        BaselineSources,
        EmbedRun,
        Placement,
        describe,
        embed_baseline,
        embed_file,
        merge_shards,
        read_papers,
        shard_range,
        synthetic_flag,
    )

    if args.quiet:
        silence_progress()
    if args.merge:
        merged = merge_shards(args.merge, args.out)
        print(
            f"merged {merged.info['merged_shards']} shards: {len(merged)} papers x {merged.dim} dims; wrote {args.out}"
        )
        return 0
    shard = shard_range(args.shard)
    config = EmbedConfig(
        model=args.model,
        pooling=args.pooling,
        max_length=args.max_length,
        dtype=args.dtype,
        device=args.device,
        backend=args.backend,
        batch_size=args.batch_size,
    )
    papers, report = read_papers(args.metadata, args.ids)
    if report.counts:
        print(report.summary(), file=sys.stderr)
    synthetic = synthetic_flag(args.metadata)
    info = {"synthetic": synthetic} if synthetic is not None else None
    if args.baseline:
        result = embed_baseline(
            config,
            args.baseline,
            papers,
            args.out,
            sources=BaselineSources(args.edges, args.held_out, args.fit_metadata),
            seed=args.seed,
            progress=not args.quiet,
            info=info,
        )
        details = ", ".join(f"{k} {v}" for k, v in result.info.items() if k != "baseline")
        print(f"{args.baseline}: {len(result)} papers x {result.dim} dims ({details}); wrote {args.out}")
        return 0
    choice = BackendChoice(
        config,
        probe=args.probe,
        int8_scheme=args.int8_scheme,
        calibration_size=args.calibration,
        min_cosine=args.min_cosine,
        token_budget=args.token_budget,
    )
    result = embed_file(
        choice,
        papers,
        args.out,
        EmbedRun(chunk_size=args.chunk_size, shard=shard, resume=args.resume, progress=not args.quiet, info=info),
        Placement(args.engine, args.ray_address, args.ray_workers, args.multi_gpu),
    )
    print(f"{describe(result)}; wrote {args.out} (+ .npy, .ids.txt, .meta.json)")
    return 0
