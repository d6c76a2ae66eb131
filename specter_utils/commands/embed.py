"""``specter-utils embed``: embed papers with a model (or a baseline), shard the job, merge shard files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
from specter_utils.config import INT8_SCHEMES, EmbedConfig
from specter_utils.errors import DataError

# float32 / bfloat16, plus the short spellings that train uses (one vocabulary of values); int8 (OpenVINO + NNCF)
DTYPES = ("auto", "float32", "bfloat16", "fp32", "bf16", "int8")
DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16"}

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
  # int8 on the CPU (OpenVINO + NNCF), calibrated on 300 of these papers and cached; or the fastest of
  # float32, bf16 and int8 measured on this CPU whose vectors keep a cosine of 0.99 to float32:
  specter-utils embed --model minilm --metadata F --out emb/minilm-int8.jsonl --dtype int8
  specter-utils embed --model minilm --metadata F --out emb/minilm.jsonl --dtype auto --min-cosine 0.99
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
    parser.add_argument("--model", default="minilm", help="model name or path (default: minilm, offline)")
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
        "--pooling", choices=("auto", "cls", "mean"), default="auto", help="auto: the model's own if any, else [CLS]"
    )
    add_dtype(
        parser,
        DTYPES,
        None,
        "default: float32 on a CPU, bf16 autocast on a GPU (bf16 and fp32 are accepted spellings); int8: "
        "post-training quantization with NNCF on the openvino backend, calibrated on a seeded sample of 300 of the "
        "papers and cached; auto: on a CPU, the fastest of float32, bf16 and int8 in a short timed probe whose "
        "vectors keep --min-cosine to float32 (the choice and figures go into the .meta.json); on a GPU, bf16",
    )
    parser.add_argument(
        "--min-cosine",
        type=float,
        help=f"--dtype auto: least cosine to float32 over the probe's papers (default {EmbedConfig.min_cosine})",
    )
    parser.add_argument(
        "--int8-scheme",
        choices=INT8_SCHEMES,
        default="default",
        help="--dtype int8/auto: NNCF's transformer preset (default, with SmoothQuant 0.95), SmoothQuant at 0.5, "
        "none, or mixed (feed-forward outputs and the last layer kept in float32)",
    )
    parser.add_argument(
        "--token-budget",
        type=POSITIVE_INT,
        help="batches of as many papers as fit this many padded wordpieces, instead of --batch-size papers",
    )
    parser.add_argument("--device", help="torch device (default: cuda if visible, else cpu)")
    parser.add_argument(
        "--backend",
        choices=("auto", "torch", "openvino"),
        default="auto",
        help="openvino: the transformer converted to OpenVINO, CPU only (pip install 'specter-utils[openvino]'); "
        "auto: openvino for a float32 run on the CPU when it is installed, else torch",
    )
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
    parser.add_argument("--no-resume", action="store_true", help="discard a part-finished run instead of resuming")
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


def _synthetic_flag(metadata: list[Path]) -> bool | None:
    """The ``synthetic`` flag of a benchmark.json beside (or one level above) the metadata, if any."""
    from specter_utils.io import read_json

    for path in metadata:
        for folder in (path.parent, path.parent.parent):
            if (folder / "benchmark.json").exists():
                value = read_json(folder / "benchmark.json").get("synthetic")
                return bool(value) if value is not None else None
    return None


def _held_out_ids(paths: list[Path]) -> set[str]:
    from specter_utils.data.scidocs import read_qrel
    from specter_utils.io import read_lines

    held: set[str] = set()
    for path in paths:
        held |= set(read_qrel(path)) if path.suffix == ".qrel" else set(read_lines(path))
    return held


def _run_baseline(args: argparse.Namespace, papers: dict, synthetic: bool | None) -> int:
    from specter_utils.data.graph import CitationGraph, edges_from_paper_lists, read_edge_list
    from specter_utils.embedding import baselines
    from specter_utils.embedding.inputs import read_metadata_files
    from specter_utils.embedding.io import EmbeddingSet, write_embeddings

    name = args.baseline
    graph = None
    if name == "sgc":
        edges = read_edge_list(args.edges) if args.edges else edges_from_paper_lists(papers)
        if not edges:
            raise DataError("sgc needs citations: none in the metadata; pass --edges FILE", "--baseline")
        graph = CitationGraph.from_edges(edges)
    extra = read_metadata_files(args.fit_metadata) if args.fit_metadata else None
    result = baselines.baseline_embeddings(
        name,
        papers,
        graph,
        _held_out_ids(args.held_out),
        seed=args.seed,
        fit_papers=baselines.fit_corpus(papers, extra),
        model=args.model,
        model_kwargs={"batch_size": args.batch_size, "max_length": args.max_length, "progress": not args.quiet},
    )
    info = {**result.info, **({"synthetic": synthetic} if synthetic is not None else {})}
    write_embeddings(args.out, EmbeddingSet(result.ids, result.vectors, result.titles, info))
    details = ", ".join(f"{k} {v}" for k, v in result.info.items() if k != "baseline")
    print(f"{name}: {len(result)} papers x {result.dim} dims ({details}); wrote {args.out}")
    return 0


def _wants_openvino(args: argparse.Namespace, devices: list[str] | None) -> bool:
    """``--backend auto``: OpenVINO for a float32 run on the CPU, when it is installed (it is faster there
    at cosine 1.0 to torch; docs/benchmarks.md). Explicit ``openvino`` always tries it."""
    if args.backend != "auto":
        return args.backend == "openvino"
    import importlib.util

    if devices or args.dtype == "bfloat16" or importlib.util.find_spec("openvino") is None:
        return False
    from specter_utils.embedding.encoder import resolve_device

    return resolve_device(args.device).startswith("cpu")


def _openvino_encoder(args: argparse.Namespace, devices: list[str] | None):
    """The model as an OpenVINO encoder, or the torch encoder with one line saying why not."""
    from specter_utils.embedding.encoder import load_encoder

    encoder = load_encoder(args.model, args.pooling, args.max_length, args.device, args.dtype, devices)
    try:
        from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino
    except ImportError as exc:  # sentence-transformers' module layout changed
        print(f"embed: backend openvino unavailable ({exc}); using torch", file=sys.stderr)
        return encoder
    try:
        return to_openvino(encoder, args.dtype)
    except BackendUnavailable as exc:
        print(f"embed: backend openvino unavailable: {exc}; using torch", file=sys.stderr)
        return encoder


def _probes(args: argparse.Namespace, devices: list[str] | None) -> bool:
    """``--dtype auto`` runs the timed probe on one CPU, unless the torch backend is asked for."""
    from specter_utils.embedding.encoder import resolve_device

    return not devices and args.backend != "torch" and resolve_device(args.device).startswith("cpu")


def _paper_texts(encoder, papers: dict) -> list[str]:
    from specter_utils.embedding.embed import as_paper_list, paper_texts

    return paper_texts(as_paper_list(papers), encoder.sep)


def _int8_encoder(args: argparse.Namespace, papers: dict):
    """``--dtype int8``: the model quantized on a sample of every paper given (so shards share one model)."""
    from specter_utils.embedding.encoder import load_encoder
    from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

    encoder = load_encoder(args.model, args.pooling, args.max_length, args.device, "float32")
    try:
        return to_openvino(encoder, "int8", _paper_texts(encoder, papers), args.int8_scheme)
    except BackendUnavailable as exc:
        raise DataError(f"int8 is unavailable: {exc}", "--dtype") from None


def _probed_encoder(args: argparse.Namespace, papers: dict):
    """``--dtype auto`` on a CPU: the fastest precision within --min-cosine, and its record for the meta."""
    from functools import partial

    from specter_utils.embedding.embed import length_order, plan_batches
    from specter_utils.embedding.encoder import load_encoder
    from specter_utils.embedding.openvino_backend import BackendUnavailable
    from specter_utils.embedding.precision_probe import choose_precision

    encoder = load_encoder(args.model, args.pooling, args.max_length, args.device, "float32")

    def plan(lengths):
        return plan_batches(length_order(lengths), lengths, args.batch_size, args.token_budget)

    try:
        return choose_precision(
            encoder,
            _paper_texts(encoder, papers),
            plan,
            min_cosine=args.min_cosine if args.min_cosine is not None else EmbedConfig.min_cosine,
            int8_scheme=args.int8_scheme,
            log=partial(print, file=sys.stderr),
        )
    except BackendUnavailable as exc:
        print(f"embed: --dtype auto: openvino cannot run this model ({exc}); float32 with torch", file=sys.stderr)
        return encoder, {"chosen": "float32", "reason": str(exc)}


def _check_arguments(args: argparse.Namespace) -> None:
    """Every flag and path, before any model is loaded or file written."""
    args.probe = args.dtype == "auto"  # asked for by name: the timed probe (on a CPU)
    args.dtype = DTYPE_NAMES.get(args.dtype, args.dtype) or "auto"
    _check_precision(args)
    if args.merge:
        for path in args.merge:
            input_file(path, "--merge")
    else:
        _check_inputs(args)
    # embed resumes a part-finished run (OUT.partial/); a finished OUT is replaced only with --overwrite
    check_out_file(args.out, args.overwrite, suffix=".jsonl")


def _check_precision(args: argparse.Namespace) -> None:
    """--dtype int8 / auto, --min-cosine and --token-budget: what they need and what they clash with."""
    import importlib.util

    if args.min_cosine is not None:
        if not args.probe:
            raise DataError("--min-cosine is the parity limit of --dtype auto; add --dtype auto", "--min-cosine")
        if not 0.0 < args.min_cosine <= 1.0:
            raise DataError(f"must be in (0, 1], got {args.min_cosine}", "--min-cosine")
    if args.token_budget and (args.multi_gpu or args.engine == "ray"):
        raise DataError("--token-budget batches run on one device with the local engine", "--token-budget")
    if args.dtype != "int8":
        return
    clashes = [
        flag
        for flag, given in (
            ("--backend torch", args.backend == "torch"),
            ("--engine ray", args.engine == "ray"),
            ("--multi-gpu", args.multi_gpu),
            (f"--device {args.device}", args.device and not args.device.startswith("cpu")),
            ("--baseline", args.baseline),
        )
        if given
    ]
    if clashes:
        raise DataError(f"int8 runs on the openvino backend on the CPU, not with {', '.join(clashes)}", "--dtype")
    missing = [name for name in ("openvino", "nncf") if importlib.util.find_spec(name) is None]
    if missing:
        raise DataError(f"int8 needs {' and '.join(missing)}: pip install 'specter-utils[openvino]'", "--dtype")


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
        from specter_utils.embedding.baselines import BASELINES

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
    if (
        args.baseline is None
        and args.model not in ("minilm",)
        and Path(args.model).is_dir()
        and not any(Path(args.model).iterdir())
    ):
        raise DataError("--model: the model folder is empty", args.model)


def _check_ray(args: argparse.Namespace) -> None:
    """``--engine ray``: Ray places the work, so the flags that place it by hand do not apply."""
    from specter_utils.embedding.ray_engine import check_address

    clashes = [
        flag
        for flag, given in (
            ("--shard", args.shard),
            ("--multi-gpu", args.multi_gpu),
            ("--device", args.device),
            ("--backend openvino", args.backend == "openvino"),
            ("--baseline", args.baseline),
        )
        if given
    ]
    if clashes:
        raise DataError(f"{', '.join(clashes)} cannot be used with --engine ray (Ray places the work)", "--engine")
    if args.ray_address:
        check_address(args.ray_address)  # a dead address is one line now, not a minute's wait after the model loads


def _run_ray(args: argparse.Namespace, papers: dict, synthetic: bool | None) -> int:
    """``--engine ray``: the same output files, made by a Ray Data pipeline."""
    from specter_utils.embedding.embed import describe
    from specter_utils.embedding.ray_engine import embed_with_ray

    result = embed_with_ray(
        args.model,
        papers,
        args.out,
        batch_size=args.batch_size,
        max_length=args.max_length,
        pooling=args.pooling,
        dtype=args.dtype,
        workers=args.ray_workers,
        address=args.ray_address,
        chunk_size=args.chunk_size,
        resume=not args.no_resume,
        progress=not args.quiet,
        info={"synthetic": synthetic} if synthetic is not None else None,
    )
    print(f"{describe(result)}; wrote {args.out} (+ .npy, .ids.txt, .meta.json)")
    return 0


def run(args: argparse.Namespace) -> int:
    """Embed, compute a baseline, or merge shards."""
    from specter_utils.data.records import ReadReport
    from specter_utils.embedding.shards import merge_shard_files, parse_shard

    _check_arguments(args)
    if args.quiet:
        silence_progress()
    if args.merge:
        merged = merge_shard_files(args.merge, args.out)
        print(
            f"merged {merged.info['merged_shards']} shards: {len(merged)} papers x {merged.dim} dims; wrote {args.out}"
        )
        return 0
    shard = None
    if args.shard:
        try:
            shard = parse_shard(args.shard)
        except ValueError as exc:
            raise DataError(str(exc), "--shard") from None

    from specter_utils.embedding.inputs import load_papers
    from specter_utils.models import prepare_offline_env

    prepare_offline_env()
    report = ReadReport(source=", ".join(str(p) for p in args.metadata))
    papers = load_papers(args.metadata, args.ids, report)
    if report.counts:
        print(report.summary(), file=sys.stderr)
    synthetic = _synthetic_flag(args.metadata)
    if args.baseline:
        return _run_baseline(args, papers, synthetic)

    from specter_utils.embedding.embed import describe, embed_to_file

    if args.engine == "ray":
        return _run_ray(args, papers, synthetic)

    devices = None
    if args.multi_gpu:
        import torch

        count = torch.cuda.device_count()
        if count > 1:
            devices = [f"cuda:{i}" for i in range(count)]
        else:
            print(f"embed: --multi-gpu with {count} visible GPU(s): running on one device", file=sys.stderr)
    model = args.model
    info = {"synthetic": synthetic} if synthetic is not None else {}
    if args.dtype == "int8":
        model = _int8_encoder(args, papers)
    elif args.probe and _probes(args, devices):
        model, info["precision_choice"] = _probed_encoder(args, papers)
    elif _wants_openvino(args, devices):
        model = _openvino_encoder(args, devices)
    result = embed_to_file(
        model,
        papers,
        args.out,
        batch_size=args.batch_size,
        max_length=args.max_length,
        pooling=args.pooling,
        device=args.device,
        dtype=args.dtype,
        devices=devices,
        chunk_size=args.chunk_size,
        shard=shard,
        resume=not args.no_resume,
        progress=not args.quiet,
        info=info or None,
        token_budget=args.token_budget,
    )
    print(f"{describe(result)}; wrote {args.out} (+ .npy, .ids.txt, .meta.json)")
    return 0
