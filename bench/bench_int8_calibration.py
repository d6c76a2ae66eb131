"""int8's calibration sample: what its size costs (quantization seconds) and keeps (MAP parity with float32).

On a run folder's benchmark (notebook 01), the test papers of the ranking tasks are embedded with the OpenVINO
float32 model and with int8 models calibrated on seeded samples of ``--sizes`` papers (each quantized from an empty
int8 cache, the f32 conversion cached); each int8 row is scored per query (AP x 100) on cite and co-cite and tested
against float32, paired over queries (95% bootstrap CI, permutation p), with the cosine of its vectors to float32.

    specter-utils run --preset hepth --run hepth-dtype --notebooks 01 02
    python bench/bench_int8_calibration.py results/hepth-dtype --rows default:300 default:100 mixed:100

Results go to ``bench/measured/int8_calibration_<corpus>.json`` and a Markdown table beside it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.config import EmbedConfig  # noqa: E402
from specter_utils.embedding.backends import BackendChoice, load_backend  # noqa: E402
from specter_utils.embedding.embed import EmbedRun, embed_to_file  # noqa: E402
from specter_utils.embedding.encoder import load_encoder  # noqa: E402
from specter_utils.embedding.io import read_embeddings_fast  # noqa: E402
from specter_utils.embedding.openvino_backend import converted_model  # noqa: E402
from specter_utils.evaluation.paired import RowScores, compare_rows, per_query_ap  # noqa: E402
from specter_utils.executed import machine_info, machine_label  # noqa: E402
from specter_utils.runs import RunPaths, corpus_label  # noqa: E402
from specter_utils.workflow.embed import papers_to_embed  # noqa: E402
from specter_utils.workflow.sweep import ranking_qrels  # noqa: E402

TASKS = ("cite", "cocite")


def embed_row(choice: BackendChoice, papers: dict, out: Path) -> dict:
    """Build the encoder (timed: the int8 calibration when its cache is empty), embed ``papers`` into ``out``."""
    started = time.perf_counter()
    encoder, info = load_backend(choice, papers)
    built = time.perf_counter() - started
    started = time.perf_counter()
    embed_to_file(encoder, papers, out, EmbedRun(progress=False, info=info or None), batch_size=choice.spec.batch_size)
    return {"build_s": round(built, 1), "embed_s": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run folder with notebook 01's benchmark")
    parser.add_argument(
        "--rows",
        nargs="+",
        default=["default:300", "default:100"],
        help="int8 rows as SCHEME:SIZE (embed --int8-scheme, --calibration); default default:300 default:100",
    )
    parser.add_argument("--max-length", type=int, default=128, help="wordpieces (default 128)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/measured/int8_calibration_<corpus>.json)")
    args = parser.parse_args()
    paths = RunPaths.of(args.run_dir)
    scidocs = paths.scidocs_dir("")
    papers = papers_to_embed(scidocs, "test", list(TASKS))
    qrels = ranking_qrels(scidocs, "test", TASKS)
    corpus = corpus_label(paths.run_dir)
    out = args.out or REPO / "bench" / "measured" / f"int8_calibration_{corpus}.json"
    machine = machine_info()
    print(f"{corpus}: {len(papers)} test papers, {args.max_length} wordpieces; {machine_label(machine)}", flush=True)
    rows, scored = [], []
    with tempfile.TemporaryDirectory(prefix="bench-int8-") as tmp:
        spec = EmbedConfig(model=args.model, max_length=args.max_length)
        variants = [("float32", BackendChoice(spec.but(dtype="fp32")))]
        for text in args.rows:
            scheme, _, size = text.partition(":")
            choice = BackendChoice(spec.but(dtype="int8"), int8_scheme=scheme, calibration_size=int(size))
            variants.append((f"int8 {scheme}, {size} papers", choice))
        vectors = {}
        for name, choice in variants:
            file = Path(tmp) / f"{len(rows)}.jsonl"
            if choice.spec.dtype == "int8":  # every int8 model of this model quantized anew
                _, folder = converted_model(load_encoder(args.model, None, args.max_length, "cpu"), ov.Core())
                shutil.rmtree(folder / "int8", ignore_errors=True)
            timing = embed_row(choice, papers, file)
            emb = read_embeddings_fast(file)
            vectors[name] = emb.lookup(sorted(papers))[0]
            per_query = {task: per_query_ap(task_qrels, emb, task) for task, task_qrels in qrels.items()}
            scored.append(RowScores(name, [str(file)], [per_query]))
            row = {"row": name, **timing, "info": {k: emb.info.get(k) for k in ("dtype", "int8", "max_length")}}
            if name != "float32":
                a, b = vectors["float32"], vectors[name]
                cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
                row["cosine_min"], row["cosine_mean"] = round(float(cos.min()), 5), round(float(cos.mean()), 5)
            rows.append(row)
            print(f"  {name}: built in {timing['build_s']} s, embedded in {timing['embed_s']} s", flush=True)
    compared = compare_rows(scored, ["float32"], list(qrels))
    record = {
        "benchmark": f"{corpus}, test split, queries "
        + ", ".join(f"{t} {len(q)}" for t, q in qrels.items())
        + f", {len(papers)} papers, {args.max_length} wordpieces, {args.model}",
        **provenance("python bench/bench_int8_calibration.py RUN_DIR", sys.argv[2:], machine),
        "rows": rows,
        "compared": compared,
    }
    lines = [
        f"Benchmark: {record['benchmark']}. Machine: {machine_label(machine)}; {record['date']}, "
        f"commit {record['commit']}. Command: `{record['argv']}`",
        "",
        "| row | quantize + compile, s | " + " | ".join(f"{t} MAP | {t} Δ float32" for t in qrels) + " | min cosine |",
        "|---|---|" + "---|---|" * len(qrels) + "---|",
    ]
    for row in rows:
        cells = [row["row"], f"{row['build_s']:.1f}" if row["row"] != "float32" else ""]
        for task in qrels:
            stats = compared["rows"][row["row"]]["tasks"][task]
            cells.append(f"{stats['map_mean']:.2f}")
            test = stats["versus"].get("float32")
            p = "" if test is None else ("< 0.001" if test["p"] < 0.001 else f"{test['p']:.3f}")
            cells.append(
                "" if test is None else f"{test['diff']:+.2f} [{test['ci_low']:+.2f}, {test['ci_high']:+.2f}] p {p}"
            )
        cells.append(f"{row['cosine_min']:.4f}" if "cosine_min" in row else "")
        lines.append("| " + " | ".join(cells) + " |")
    write_measured(out, record, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
