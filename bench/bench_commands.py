"""What the user types, timed as whole commands: ``specter-utils embed`` against the SPECTER README's recipe.

Each case runs a whole ``python -m specter_utils embed ...`` process (start-up, imports, model loading, OpenVINO
conversion or int8 calibration included) and, in turn with it, the plain ``transformers`` recipe as a command
(``bench/recipe_embed.py``) on the same papers: A B A B ..., the speed-up taken pair by pair (recipe wall / ours),
so that a drift in the machine's speed moves both sides of a pair alike. Wall time is a monotonic clock around the
child process; CPU time is the operating system's accounting of the finished child (user + system).

The papers are two disjoint seeded samples of the hep-th abstracts (``--n`` each). The cases:

- ``default, cold``: ``embed`` with default flags (``--dtype auto``: the precision probe's choice) on sample 1,
  every OpenVINO cache of the model and the probe's cache emptied before each run (so each pays the conversion,
  int8's calibration and the probe);
- ``default, warm``: default flags on sample 2 (the converted models and the probe's choice cached): the second
  sample, papers the probe never saw;
- ``torch backend, warm``: ``--backend torch`` on sample 2: what an install without the ``openvino`` extra runs;
- ``int8, cold``: ``--dtype int8`` on sample 1, caches emptied before each run (conversion and calibration paid);
- ``int8, new corpus``: ``--dtype int8`` on sample 2: the int8 model cached by the run before, on other papers;
- ``default, 10 papers``: the start-up floor, default flags on 10 papers of sample 1 (warm).

Each run's precision is read from its ``.meta.json`` (``dtype``, and for the default the probe's ``chosen`` with its
speed-up over float32), and the machine's load average is taken before each pair. The probe's cache lives in a folder
of the run's own (``SPECTER_UTILS_CACHE``), and every case runs on a copy of the model in the run's folder, so the
converted and quantized models that the cold cases delete are the copy's: the user's stay. After the runs, the int8 vectors of sample 1
are compared with the default ones by cosine (when the default chose float32; skipped otherwise).
Results go to ``--out`` (JSON, with the machine's CPU flags, the date and the commit) and a Markdown table beside it.

    python bench/bench_commands.py --n 1000 --runs 2                     # about 15 minutes on 2 cores
    python bench/bench_commands.py --n 2000 --runs 1 --max-length 512

The model is all-MiniLM-L6-v2 (``minilm``), the project's CPU default; ``--model`` names another.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measured_files import provenance, write_measured  # noqa: E402

from specter_utils.config import EmbedConfig  # noqa: E402
from specter_utils.embedding.io import read_embeddings_fast  # noqa: E402
from specter_utils.embedding.openvino_backend import cache_folder  # noqa: E402
from specter_utils.embedding.precision_cache import CACHE_FILE  # noqa: E402
from specter_utils.executed import machine_info, machine_label  # noqa: E402
from specter_utils.models import resolve_model  # noqa: E402
from specter_utils.paths import hepth_dir  # noqa: E402
from specter_utils.vocabularies import INT8_CALIBRATION  # noqa: E402


@dataclass
class Case:
    name: str
    sample: int  # 0 or 1
    flags: list[str] = field(default_factory=list)
    cold: bool = False  # empty the model's OpenVINO caches and the probe's cache before each run of ours
    limit: int | None = None  # the first N papers of the sample only


CASES = [
    Case("default, cold", 0, cold=True),
    Case("default, warm", 1),
    Case("torch backend, warm", 1, ["--backend", "torch"]),  # what a quick start without the openvino extra gets
    Case("int8, cold", 0, ["--dtype", "int8"], cold=True),
    Case("int8, new corpus", 1, ["--dtype", "int8"]),
    Case("default, 10 papers", 0, limit=10),
]


def samples(src: Path, n: int, seed: int = 0, count: int = 2) -> list[dict[str, dict[str, str]]]:
    """``count`` (1 or 2) disjoint seeded samples of ``n`` hep-th papers with an abstract, as
    ``{id: {paper_id, title, abstract}}``."""
    from specter_utils.data.hepth import read_hepth

    corpus = read_hepth(src)
    ids = sorted(pid for pid, paper in corpus.papers.items() if paper.abstract)
    random.Random(seed).shuffle(ids)
    if len(ids) < count * n:
        raise SystemExit(f"bench_commands: {src} has {len(ids)} papers with an abstract, fewer than {count} x {n}")

    def records(chosen: list[str]) -> dict[str, dict[str, str]]:
        return {
            pid: {"paper_id": pid, "title": corpus.papers[pid].title, "abstract": corpus.papers[pid].abstract}
            for pid in chosen
        }

    return [records(ids[i * n : (i + 1) * n]) for i in range(count)]


def empty_openvino_caches(model_path: str) -> None:
    """Remove every converted and quantized model of ``model_path`` (beside the model or in the user cache)."""
    folder = cache_folder(model_path, "key").parent
    if Path(model_path).is_dir() and folder == Path(model_path) / "openvino":
        shutil.rmtree(folder, ignore_errors=True)
    else:
        prefix = cache_folder(model_path, "key").name.removesuffix("key")
        for path in folder.glob(f"{prefix}*"):
            shutil.rmtree(path, ignore_errors=True)


def timed(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU seconds of one whole child process; exits with its output when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench_commands: {' '.join(command)} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def precision_of(out: Path) -> dict[str, object]:
    """The precision a finished run embedded at (its meta's ``dtype``) and, for ``--dtype auto``, the probe's choice
    and its speed-up over float32."""
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    found: dict[str, object] = {"dtype": meta.get("dtype")}
    choice = meta.get("precision_choice")
    if choice:
        found["chosen"] = choice.get("chosen")
        rows = choice.get("candidates", {})
        base = rows.get("float32", {}).get("docs_per_s")
        found["probe_speedup"] = {
            name: round(row["docs_per_s"] / base, 3) for name, row in rows.items() if base and "docs_per_s" in row
        }
    return found


def run_case(case: Case, files: list[Path], args: argparse.Namespace, work: Path, env: dict) -> dict:
    metadata = files[case.sample]
    if case.limit:
        papers = json.loads(metadata.read_text())
        metadata = work / f"sample{case.sample + 1}-first{case.limit}.json"
        metadata.write_text(json.dumps(dict(list(papers.items())[: case.limit])))
    slug = case.name.replace(", ", "-").replace(" ", "-")
    ours_out, recipe_out = work / f"{slug}.jsonl", work / f"{slug}-recipe.npy"
    length = ["--max-length", str(args.max_length)]
    ours = [sys.executable, "-m", "specter_utils", "embed", "--model", args.model, "--metadata", str(metadata)]
    ours += ["--out", str(ours_out), "--quiet", *length, *case.flags]
    recipe = [sys.executable, str(REPO / "bench" / "recipe_embed.py"), "--model", args.model_path]
    recipe += ["--metadata", str(metadata), "--out", str(recipe_out), *length]
    if args.one_sample and not case.cold:  # one sample: the model's caches built, untimed, on its first papers
        first = work / "warm-up.json"  # as many as int8 calibrates on, so a missing int8 model is calibrated as usual
        first.write_text(json.dumps(dict(list(json.loads(metadata.read_text()).items())[:INT8_CALIBRATION])))
        warm = [*ours[:7], str(first), "--out", str(work / "warm-up.jsonl"), *ours[10:]]
        timed(warm, env)
        (work / "warm-up.jsonl").unlink(missing_ok=True)
    pairs = []
    for run in range(args.runs):
        for path in work.glob(f"{slug}.*"):  # a finished output would be resumed, not embedded again
            path.unlink()
        if case.cold:
            empty_openvino_caches(args.model_path)
            (Path(env["SPECTER_UTILS_CACHE"]) / CACHE_FILE).unlink(missing_ok=True)
        load = round(os.getloadavg()[0], 2)
        a = timed(ours, env)
        precision = precision_of(ours_out)
        b = timed(recipe, env)
        pairs.append({"ours": a, "recipe": b, "speedup": round(b["wall_s"] / a["wall_s"], 3)})
        pairs[-1].update(precision=precision, load_before=load)
        print(
            f"  [{case.name} {run + 1}/{args.runs}] ours {a['wall_s']:.1f} s ({precision['dtype']}), recipe "
            f"{b['wall_s']:.1f} s: {pairs[-1]['speedup']:.2f}x (load {load})",
            flush=True,
        )
    speedups = [p["speedup"] for p in pairs]
    return {
        "case": case.name,
        "sample": case.sample + 1,
        "papers": case.limit or args.n,
        "command": " ".join(
            ["specter-utils embed --model", args.model_name, "--metadata F --out F", *length, *case.flags]
        ),
        "flags": case.flags,
        "pairs": pairs,
        "ours_wall_median_s": statistics.median(p["ours"]["wall_s"] for p in pairs),
        "recipe_wall_median_s": statistics.median(p["recipe"]["wall_s"] for p in pairs),
        "speedup_median": statistics.median(speedups),
        "speedup_min": min(speedups),
        "speedup_max": max(speedups),
        "precision": sorted({p["precision"]["dtype"] for p in pairs}),
        "chosen": sorted({p["precision"]["chosen"] for p in pairs if "chosen" in p["precision"]}),
        "output": str(ours_out),
    }


def import_seconds(command: list[str], out: Path, env: dict[str, str], runs: int = 3) -> dict[str, float]:
    """Seconds of a warm embed command's imports by top-level package (``python -X importtime`` on the command
    itself, positive self times summed; the median of ``runs``)."""
    totals: list[dict[str, float]] = []
    for _ in range(runs):
        out.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *command[1:]], env=env, capture_output=True, text=True
        )
        by_package: dict[str, float] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, _, name = line.removeprefix("import time:").split("|")
            package = name.strip().split(".")[0]
            by_package[package] = by_package.get(package, 0.0) + max(int(own), 0) / 1e6
        totals.append(by_package)
    names = {name for total in totals for name in total}
    median = {name: statistics.median(total.get(name, 0.0) for total in totals) for name in names}
    top = dict(sorted(median.items(), key=lambda kv: -kv[1])[:8])
    top["all"] = statistics.median(sum(total.values()) for total in totals)
    return {name: round(value, 2) for name, value in top.items()}


def int8_cosine(results: list[dict]) -> dict[str, float] | None:
    """Cosine of the int8 vectors of sample 1 to the default (OpenVINO float32) ones, paper by paper."""
    by_case = {r["case"]: r for r in results}
    if "default, cold" not in by_case or "int8, cold" not in by_case:
        return None
    if by_case["default, cold"]["precision"] != ["openvino-f32"]:
        return None
    f32 = read_embeddings_fast(Path(by_case["default, cold"]["output"]))
    int8 = read_embeddings_fast(Path(by_case["int8, cold"]["output"]))
    a, _ = f32.lookup(f32.ids)
    b, _ = int8.lookup(f32.ids)
    cosines = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {"min": round(float(cosines.min()), 5), "mean": round(float(cosines.mean()), 5), "papers": len(cosines)}


def table(record: dict) -> str:
    """The results as Markdown, headed by the benchmark, the machine and the command."""
    lines = [
        f"Whole commands on hep-th: {record.get('samples', 'two disjoint seeded samples')} of {record['n']:,} papers, "
        f"{record['model']}, "
        f"{record['max_length']} wordpieces; {record['runs']} pair(s) per case, ours and the recipe in turn.",
        "",
        f"Machine: {machine_label(record['machine'])}; {record['date']}, commit {record['commit']}.",
        f"Command: `{record['argv']}`",
        "",
        "| case | sample | papers | precision | ours, s (median) | recipe, s (median) "
        "| speed-up per pair: median [min, max] |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in record["cases"]:
        precision = ", ".join(r.get("precision", [])) or "?"
        if r.get("chosen"):
            precision += f" (auto chose {', '.join(r['chosen'])})"
        lines.append(
            f"| {r['case']}: `{' '.join(r['flags']) or 'default flags'}` | {r['sample']} | {r['papers']:,} "
            f"| {precision} | {r['ours_wall_median_s']:.1f} | {r['recipe_wall_median_s']:.1f} "
            f"| **{r['speedup_median']:.2f}x** [{r['speedup_min']:.2f}, {r['speedup_max']:.2f}] |"
        )
    probes = [p["precision"] for r in record["cases"] for p in r["pairs"] if p["precision"].get("probe_speedup")]
    if probes:
        figures = ", ".join(f"{name} {ratio:.2f}x" for name, ratio in probes[0]["probe_speedup"].items())
        lines += ["", f"The probe's figures (docs/s against float32, on its own papers): {figures}."]
    loads = [p["load_before"] for r in record["cases"] for p in r["pairs"] if "load_before" in p]
    if loads:
        lines += ["", f"Load average (1 min) before each pair: {min(loads):.2f} to {max(loads):.2f}."]
    if record.get("imports_s"):
        parts = ", ".join(f"{name} {sec:.2f}" for name, sec in record["imports_s"].items() if name != "all")
        lines += [
            "",
            f"Imports of a warm embed command (10 papers, default flags): {record['imports_s']['all']:.2f} s in all "
            f"({parts}; seconds).",
        ]
    if record.get("int8_cosine"):
        c = record["int8_cosine"]
        lines += ["", f"int8 against float32 on sample 1: min cosine {c['min']:.5f}, mean {c['mean']:.5f}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hepth", type=Path, default=hepth_dir(), help="hep-th folder (default ../shared/data/hepth)")
    parser.add_argument("--n", type=int, default=1000, help="papers in each of the two samples (default 1000)")
    parser.add_argument("--runs", type=int, default=2, help="pairs (ours, recipe) per case (default 2)")
    parser.add_argument("--max-length", type=int, default=EmbedConfig.max_length, help="wordpieces (embed's default)")
    parser.add_argument("--model", default="minilm", help="model (default minilm)")
    parser.add_argument("--cases", nargs="+", help=f"only these cases (of: {'; '.join(c.name for c in CASES)})")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/measured/commands_hepth_<n>.json)")
    parser.add_argument(
        "--one-sample",
        action="store_true",
        help="one sample of --n papers for every case (hep-th has too few abstracts for two of 20,000); a warm case "
        f"first builds the model's caches (an int8 model not yet cached: calibrated as usual), untimed, on "
        f"{INT8_CALIBRATION} of its papers",
    )
    args = parser.parse_args()
    if args.hepth is None:
        parser.error("no hep-th folder found (../shared/data/hepth or $SPECTER_SHARED_DATA); pass --hepth DIR")
    args.model_path = str(resolve_model(args.model))
    args.model_name = args.model  # as the user names it; the cases run on a copy (below)
    out = args.out or REPO / "bench" / "measured" / f"commands_hepth_{args.n}.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cases = [c for c in CASES if not args.cases or c.name in args.cases]
    if args.one_sample:
        cases = [replace(c, sample=0) for c in cases]
    machine = machine_info()
    print(f"machine: {machine_label(machine)}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as tmp:
        work = Path(tmp)
        env["SPECTER_UTILS_CACHE"] = str(work / "cache")  # the probe's cache, the run's own
        # the model's OpenVINO caches sit beside it: a copy, so that the cold cases empty the run's own, not the user's
        copy = shutil.copytree(args.model_path, work / "model", ignore=shutil.ignore_patterns("openvino"))
        args.model = args.model_path = str(copy)
        files = []
        for i, papers in enumerate(samples(args.hepth, args.n, count=1 if args.one_sample else 2)):
            files.append(work / f"sample{i + 1}.json")
            files[-1].write_text(json.dumps(papers))
        for case in cases:
            print(f"{case.name}:", flush=True)
            results.append(run_case(case, files, args, work, env))
        cosine = int8_cosine(results)
        ten = work / "ten-papers.json"
        ten.write_text(json.dumps(dict(list(json.loads(files[0].read_text()).items())[:10])))
        warm = [sys.executable, "-m", "specter_utils", "embed", "--model", args.model, "--metadata", str(ten)]
        warm += ["--out", str(work / "ten.jsonl"), "--quiet", "--max-length", str(args.max_length)]
        subprocess.run(warm, env=env, capture_output=True, check=True)  # the caches warm
        imports = import_seconds(warm, work / "ten.jsonl", env)
    record = {
        "benchmark": f"hep-th abstracts, {'one seeded sample' if args.one_sample else 'two disjoint seeded samples'} (seed 0)",
        "samples": f"one seeded sample (warm caches built on {INT8_CALIBRATION} of its papers first)"
        if args.one_sample
        else "two disjoint seeded samples",
        "n": args.n,
        "runs": args.runs,
        "model": args.model_name,
        "max_length": args.max_length,
        **provenance("python bench/bench_commands.py", sys.argv[1:], machine),
        "cases": results,
        "int8_cosine": cosine,
        "imports_s": imports,
    }
    write_measured(out, record, table(record))
    print(table(record))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
