"""Similar-paper index: build time, peak memory, query latency (p50/p99), queries/s and recall@10 against exact search.

Generated vectors (``--n``): 384-dim unit vectors around 1,000 field centres, spread along a shared
24-dimensional subspace plus a little isotropic noise, so that a paper's nearest neighbours stand out
from the rest as they do for text embeddings (isotropic blobs in 384 dims make all neighbours
equidistant and every quantiser look bad). Vectors are generated chunk by chunk (100,000 rows, seeded
by chunk), so neither the generator nor the build ever holds the full matrix; the exact top-10 of the
500 queries (fresh draws from the same model, not indexed) is computed on each chunk as it passes and
merged. Each figure is printed and appended to ``--out`` (JSON lines) as it comes.

The baseline, measured in the same run: exact search (the chunked brute force that makes the truth,
per query, batched) for latency, and float32 storage (n x dim x 4 bytes) for memory.

    python bench/bench_index.py --n 1000000 --kinds ivf-pq,ivf            # tune at 1M
    python bench/bench_index.py --n 10000000 --kinds ivf-pq --out bench/index_10m.jsonl
    python bench/bench_index.py --grow 200000 --kinds ivf-pq,ivf           # +10% without a rebuild vs a rebuild
    python bench/bench_index.py --real DIR                                  # recall on real MiniLM embeddings

``--real DIR`` reads ``DIR/hepth.jsonl`` and ``DIR/arxiv2023.jsonl`` (made by ``--embed-real DIR``: hep-th
titles and abstracts, arXiv-2023 titles, all-MiniLM-L6-v2 at 128 wordpieces), holds out 500 random
papers as queries, and gives the nprobe that real embeddings need for recall@10 0.90 and 0.95 next to
generated vectors of the same count; then it grows an index trained on hep-th alone with arXiv papers
(a new field) and compares its recall with a rebuild, the drift that says when a re-train is due.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specter_utils.executed import cpu_flags as executed_cpu_flags  # noqa: E402
from specter_utils.executed import machine_info  # noqa: E402
from specter_utils.search import (  # noqa: E402
    CHUNK,
    PaperIndex,
    build_index_chunks,
    choose_kind,
    normalise,
    set_threads,
    train_size,
)

DIM = 384
FIELDS = 1000
INTRINSIC = 24
SPREAD = 0.9  # norm of a paper's offset from its field centre (centres have norm 1)
NOISE = 0.25  # norm of the isotropic noise
K = 10


# ---------------------------------------------------------------- generated vectors
class Generator:
    """Deterministic chunks of clustered unit vectors: chunk ``c`` depends only on (seed, c)."""

    def __init__(self, seed: int = 0, dim: int = DIM, fields: int = FIELDS) -> None:
        rng = np.random.default_rng(seed)
        self.seed, self.dim = seed, dim
        self.centres = (rng.standard_normal((fields, dim)) / np.sqrt(dim)).astype(np.float32)
        self.basis = np.linalg.qr(rng.standard_normal((dim, INTRINSIC)))[0].T.astype(np.float32)

    def draw(self, m: int, rng: np.random.Generator, fields: np.ndarray | None = None) -> np.ndarray:
        pool = fields if fields is not None else np.arange(len(self.centres))
        field = pool[rng.integers(0, len(pool), m)]
        z = rng.standard_normal((m, INTRINSIC), dtype=np.float32) * np.float32(SPREAD / np.sqrt(INTRINSIC))
        noise = rng.standard_normal((m, self.dim), dtype=np.float32) * np.float32(NOISE / np.sqrt(self.dim))
        block = self.centres[field] + z @ self.basis + noise
        return block / np.linalg.norm(block, axis=1, keepdims=True)

    def chunks(self, n: int, stream: int = 0, fields: np.ndarray | None = None) -> Iterator[np.ndarray]:
        for number, start in enumerate(range(0, n, CHUNK)):
            yield self.draw(min(CHUNK, n - start), np.random.default_rng([self.seed, stream, number]), fields)

    def sample(self, m: int, stream: int, fields: np.ndarray | None = None) -> np.ndarray:
        return self.draw(m, np.random.default_rng([self.seed, stream, 10**6]), fields)


class ExactTruth:
    """Exact top-k of ``queries`` over rows seen chunk by chunk (inner product of unit vectors)."""

    def __init__(self, queries: np.ndarray, k: int = K) -> None:
        self.queries, self.k = queries, k
        self.scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        self.rows = np.full((len(queries), k), -1, dtype=np.int64)
        self.offset, self.seconds = 0, 0.0

    def see(self, chunk: np.ndarray) -> None:
        start = time.perf_counter()
        sims = self.queries @ chunk.T
        top = np.argpartition(-sims, min(self.k, sims.shape[1] - 1), axis=1)[:, : self.k]
        scores = np.concatenate([self.scores, np.take_along_axis(sims, top, axis=1)], axis=1)
        rows = np.concatenate([self.rows, top + self.offset], axis=1)
        best = np.argsort(-scores, axis=1, kind="stable")[:, : self.k]
        self.scores, self.rows = np.take_along_axis(scores, best, axis=1), np.take_along_axis(rows, best, axis=1)
        self.offset += len(chunk)
        self.seconds += time.perf_counter() - start


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


# ---------------------------------------------------------------- measuring
def cpu_flags() -> str:
    """The CPU's model and the flags that decide the fast paths, as one line."""
    return f"{machine_info()['cpu']}; flags: {' '.join(executed_cpu_flags()) or 'none of avx2/avx512/amx'}"


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # ru_maxrss is in KiB on Linux


class Report:
    """Print each figure and append it to a JSON lines file as it comes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def __call__(self, text: str, **record) -> None:
        print(text, flush=True)
        if self.path is not None and record:
            with self.path.open("a") as handle:
                handle.write(json.dumps({"time": datetime.datetime.now(datetime.UTC).isoformat(), **record}) + "\n")


def timed_queries(index: PaperIndex, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """One query at a time (the interactive case): milliseconds and rows; and the batch's queries/s."""
    times, rows = [], []
    for q in queries:
        start = time.perf_counter()
        rows.append(index.index.search(q[None, :], K)[1][0])
        times.append((time.perf_counter() - start) * 1e3)
    start = time.perf_counter()
    index.index.search(queries, K)
    qps = len(queries) / (time.perf_counter() - start)
    return np.array(times), np.vstack(rows), qps


def sweep(index: PaperIndex, queries: np.ndarray, truth: np.ndarray, args, report: Report, label: str, **extra) -> list:
    """Recall and latency for each search width the kind has; returns the records."""
    import faiss

    kind = index.kind
    if kind in ("ivf", "ivf-pq"):
        ivf = faiss.extract_index_ivf(index.index)
        widths = [("nprobe", p) for p in args.nprobe if p <= ivf.nlist]
    elif kind == "hnsw":
        widths = [("efSearch", e) for e in args.ef_search]
    else:
        widths = [(None, None)]
    reranks = args.rerank if kind == "ivf-pq" else [None]
    out = []
    for name, width in widths:
        if name == "nprobe":
            ivf.nprobe = width
        elif name == "efSearch":
            index.index.hnsw.efSearch = width
        for rerank in reranks:
            if rerank is not None:
                index.index.k_factor = rerank
            ms, found, qps = timed_queries(index, queries)
            record = {
                "what": "search",
                "label": label,
                "kind": kind,
                name or "setting": width,
                "rerank": rerank,
                "recall_at_10": round(recall_at(found, truth), 4),
                "p50_ms": round(float(np.percentile(ms, 50)), 3),
                "p99_ms": round(float(np.percentile(ms, 99)), 3),
                "batch_queries_per_s": round(qps, 1),
                "load": round(os.getloadavg()[0], 2),
                **extra,
            }
            out.append(record)
            setting = f"{name} {width}" if name else "exact"
            setting += f" rerank {rerank}x" if rerank is not None else ""
            base = extra.get("exact_ms_per_query")
            ratio = f" ({base / record['p50_ms']:.0f}x faster than exact)" if base else ""
            report(
                f"    {setting:<24} recall@10 {record['recall_at_10']:.3f}  p50 {record['p50_ms']:.2f} ms{ratio}  "
                f"p99 {record['p99_ms']:.2f} ms  batch {qps:,.0f} q/s  (load {record['load']})",
                **record,
            )
    return out


# ---------------------------------------------------------------- generated: build and search
def run_generated(args, report: Report) -> None:
    gen = Generator(args.seed)
    queries = gen.sample(args.queries, stream=9)
    ids = [str(i) for i in range(args.n)]
    truth = ExactTruth(queries)
    for number, kind in enumerate(args.kinds):
        chosen = choose_kind(kind, args.n)
        rss0 = peak_rss_gb()
        gen_seconds = 0.0

        def chunks(first: bool = number == 0) -> Iterator[np.ndarray]:
            nonlocal gen_seconds
            start = time.perf_counter()
            for chunk in gen.chunks(args.n):
                gen_seconds += time.perf_counter() - start
                if first:
                    truth.see(chunk)
                yield chunk
                start = time.perf_counter()

        start = time.perf_counter()
        size = train_size(chosen, args.n)
        train = gen.sample(size, stream=1) if size else None
        gen_seconds += time.perf_counter() - start
        index = build_index_chunks(ids, chunks(), train, chosen, info={"model": "generated"}, threads=args.threads)
        del train
        total = time.perf_counter() - start
        build = total - gen_seconds - (truth.seconds if number == 0 else 0.0)
        exact_ms = truth.seconds / args.queries * 1e3
        if number == 0:
            report(
                f"exact truth (the baseline): {truth.seconds:.1f} s for {args.queries} queries over {args.n:,} "
                f"vectors, chunk by chunk = {exact_ms:.2f} ms a query (batched)",
                what="exact",
                n=args.n,
                seconds=round(truth.seconds, 2),
                ms_per_query=round(exact_ms, 3),
            )
        file_bytes = None
        save_seconds = None
        if args.save_dir is not None:
            path = args.save_dir / f"bench_{chosen}_{args.n}.index.npz"
            start = time.perf_counter()
            index.save(path)
            save_seconds = time.perf_counter() - start
            file_bytes = path.stat().st_size
            path.unlink()
        float32 = args.n * DIM * 4
        record = {
            "what": "build",
            "kind": chosen,
            "n": args.n,
            "threads": args.threads,
            "build_seconds": round(build, 1),
            "generate_seconds": round(gen_seconds, 1),
            "peak_rss_gb": round(peak_rss_gb(), 2),
            "peak_rss_before_gb": round(rss0, 2),
            "file_bytes": file_bytes,
            "save_seconds": round(save_seconds, 1) if save_seconds else None,
            "float32_bytes": float32,
            "nlist": index.info.get("ivf", {}).get("nlist"),
        }
        size_text = (
            f"file {file_bytes / 1e9:.2f} GB ({float32 / file_bytes:.1f}x smaller than float32 {float32 / 1e9:.2f} GB), "
            f"saved in {save_seconds:.0f} s, "
            if file_bytes
            else ""
        )
        report(
            f"{chosen:<7} build {build:7.1f} s (+ {gen_seconds:.0f} s generating), {size_text}"
            f"peak RSS {record['peak_rss_gb']:.2f} GB (process, from {rss0:.2f} GB), lists {record['nlist']}",
            **record,
        )
        sweep(index, queries, truth.rows, args, report, f"generated {args.n}", n=args.n, exact_ms_per_query=exact_ms)
        del index


# ---------------------------------------------------------------- growth: add vs rebuild
def run_grow(args, report: Report) -> None:
    """Build on ``--grow`` vectors from all but ``--new-fields`` of the fields, then add papers from all fields."""
    gen = Generator(args.seed)
    queries = gen.sample(args.queries, stream=9)
    old_fields = np.arange(int(round(FIELDS * (1 - args.new_fields))))
    base_n = args.grow
    steps = args.steps
    total_n = int(base_n * (1 + steps[-1]))
    vectors = np.vstack(
        list(gen.chunks(base_n, stream=2, fields=old_fields)) + list(gen.chunks(total_n - base_n, stream=3))
    )
    for kind in args.kinds:
        ids = [str(i) for i in range(total_n)]
        train = vectors[np.random.default_rng(0).permutation(base_n)[: train_size(kind, base_n)]]
        start = time.perf_counter()
        grown = build_index_chunks(ids[:base_n], [vectors[:base_n]], train, kind)
        report(
            f"{kind}: built on {base_n:,} papers ({len(old_fields) / FIELDS:.0%} of the fields) in "
            f"{time.perf_counter() - start:.1f} s"
        )
        width = grown.info["ivf"]["nprobe"]
        at = base_n
        for step in steps:
            end = int(base_n * (1 + step))
            start = time.perf_counter()
            grown.add(ids[at:end], vectors[at:end])
            add_seconds = time.perf_counter() - start
            at = end
            truth = ExactTruth(queries)
            truth.see(vectors[:end])
            sample = train_size(kind, end)
            rebuilt = build_index_chunks(
                ids[:end], [vectors[:end]], vectors[np.random.default_rng(0).permutation(end)[:sample]], kind
            )
            faiss_ivf = __import__("faiss").extract_index_ivf
            faiss_ivf(rebuilt.index).nprobe = faiss_ivf(grown.index).nprobe = width
            recalls = {}
            for name, index in (("grown", grown), ("rebuilt", rebuilt)):
                _, found, _ = timed_queries(index, queries)
                recalls[name] = recall_at(found, truth.rows)
            record = {
                "what": "grow",
                "kind": kind,
                "base": base_n,
                "grown_by": step,
                "n": end,
                "nprobe": width,
                "add_seconds": round(add_seconds, 2),
                "recall_grown": round(recalls["grown"], 4),
                "recall_rebuilt": round(recalls["rebuilt"], 4),
                "drift": round(recalls["rebuilt"] - recalls["grown"], 4),
                "lists_grown": grown.info["ivf"]["nlist"],
                "lists_rebuilt": rebuilt.info["ivf"]["nlist"],
                "new_fields": args.new_fields,
            }
            report(
                f"  +{step:.0%} ({end:,} papers, added in {add_seconds:.1f} s): recall@10 grown {recalls['grown']:.3f} "
                f"vs rebuilt {recalls['rebuilt']:.3f} (drift {record['drift']:+.3f}) at nprobe {width}",
                **record,
            )
            del rebuilt


# ---------------------------------------------------------------- real embeddings
def embed_real(work: Path, hepth_sample: int | None = None, arxiv_sample: int | None = None) -> None:
    """hep-th (title + abstract) and arXiv-2023 (titles), each a seeded sample if asked, with
    all-MiniLM-L6-v2 at 128 wordpieces, resumable."""
    import pandas as pd

    from specter_utils.config import EmbedConfig
    from specter_utils.data.hepth import read_abstracts
    from specter_utils.data.records import Paper
    from specter_utils.embedding.embed import EmbedRun, embed_to_file

    src = Path(os.environ.get("SPECTER_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    for name in ("arxiv2023", "hepth"):
        out = work / f"{name}.jsonl"
        if out.exists():
            continue
        if name == "arxiv2023":
            cols = {c: pd.read_csv(src / name / f"{c}.csv.gz", dtype=str)[c].fillna("") for c in ("ids", "titles")}
            papers = [Paper(f"arxiv:{i}", t) for i, t in zip(cols["ids"], cols["titles"], strict=True)]
            if arxiv_sample:
                keep = np.sort(np.random.default_rng(0).permutation(len(papers))[:arxiv_sample])
                papers = [papers[i] for i in keep]
        else:
            abstracts = read_abstracts(src / "hepth" / "cit-HepTh-abstracts.tar.gz").values()
            papers = [Paper(f"hepth:{p.paper_id}", p.title, p.abstract) for p in abstracts]
            if hepth_sample:
                keep = np.sort(np.random.default_rng(0).permutation(len(papers))[:hepth_sample])
                papers = [papers[i] for i in keep]
        start = time.perf_counter()
        spec = EmbedConfig(model="minilm", batch_size=32, max_length=128, device="cpu", dtype="fp32")
        embed_to_file(spec, papers, out, EmbedRun(progress=False))
        seconds = time.perf_counter() - start
        print(f"{name}: {len(papers)} papers in {seconds:.0f} s ({len(papers) / seconds:.1f} papers/s)", flush=True)


def needed(records: list[dict], target: float) -> int | None:
    """The smallest nprobe (at the default re-rank) reaching ``target`` recall."""
    hits = [r["nprobe"] for r in records if r["recall_at_10"] >= target and r.get("rerank") in (None, 16)]
    return min(hits) if hits else None


def run_real(args, report: Report) -> None:
    from specter_utils.embedding.io import read_embeddings

    sets = {name: read_embeddings(args.real / f"{name}.jsonl") for name in ("hepth", "arxiv2023")}
    vectors = normalise(np.vstack([s.vectors for s in sets.values()]))
    origin = np.concatenate([np.full(len(s), i) for i, s in enumerate(sets.values())])
    rng = np.random.default_rng(args.seed)
    held = rng.permutation(len(vectors))[: args.queries]
    keep = np.setdiff1d(np.arange(len(vectors)), held)
    queries, vectors, origin = vectors[held], vectors[keep], origin[keep]
    n = len(vectors)
    ids = [str(i) for i in range(n)]
    nn = queries @ vectors.T
    top = np.sort(nn, axis=1)[:, ::-1]
    report(
        f"real: {n:,} papers (hep-th {int((origin == 0).sum()):,}, arXiv-2023 {int((origin == 1).sum()):,}), "
        f"{args.queries} held-out queries; cosine of the 1st / 10th / 100th neighbour "
        f"{top[:, 0].mean():.3f} / {top[:, 9].mean():.3f} / {top[:, 99].mean():.3f}, random pair {nn.mean():.3f}",
        what="real_data",
        n=n,
    )
    truth = np.argsort(-nn, axis=1)[:, :K]
    gen = Generator(args.seed)
    generated = np.vstack(list(gen.chunks(n)))
    gq = gen.sample(args.queries, stream=9)
    gsims = gq @ generated.T
    gtop = np.sort(gsims, axis=1)[:, ::-1]
    report(
        f"generated, same count: cosine of the 1st / 10th / 100th neighbour {gtop[:, 0].mean():.3f} / "
        f"{gtop[:, 9].mean():.3f} / {gtop[:, 99].mean():.3f}, random pair {gsims.mean():.3f}"
    )
    gtruth = np.argsort(-gsims, axis=1)[:, :K]
    for kind in args.kinds:
        found = {}
        for label, data, q, t in (("real", vectors, queries, truth), ("generated", generated, gq, gtruth)):
            train = data[np.random.default_rng(0).permutation(n)[: train_size(kind, n)]]
            index = build_index_chunks(ids, [data], train, kind)
            found[label] = sweep(index, q, t, args, report, label, n=n)
            report(f"  ({label}, {kind}, {index.info['ivf']['nlist']} lists)")
        for target in (0.90, 0.95):
            report(
                f"{kind}: nprobe for recall@10 >= {target:.2f}: real {needed(found['real'], target)}, generated "
                f"{needed(found['generated'], target)} (of {index.info['ivf']['nlist']} lists, {n:,} papers)",
                what="nprobe_needed",
                kind=kind,
                target=target,
                real=needed(found["real"], target),
                generated=needed(found["generated"], target),
                nlist=index.info["ivf"]["nlist"],
                n=n,
            )
        # drift: lists trained on hep-th alone, then arXiv papers (another field) added
        hep = np.flatnonzero(origin == 0)
        arx = np.flatnonzero(origin == 1)
        order = np.concatenate([hep, arx])
        data, t_rows = vectors[order], np.argsort(order)[truth]
        train = data[np.random.default_rng(0).permutation(len(hep))[: train_size(kind, len(hep))]]
        grown = build_index_chunks(ids[: len(hep)], [data[: len(hep)]], train, kind)
        at = len(hep)
        for share in (0.1, 0.5, 1.0, 2.0, 3.0):
            end = min(n, int(len(hep) * (1 + share)))
            if end <= at:
                break
            grown.add(ids[at:end], data[at:end])
            at = end
            subset = np.arange(end)
            sims = queries @ data[subset].T
            t = np.argsort(-sims, axis=1)[:, :K]
            rebuilt = build_index_chunks(
                ids[:end], [data[:end]], data[np.random.default_rng(0).permutation(end)[: train_size(kind, end)]], kind
            )
            import faiss

            recalls = {}
            for probe in args.nprobe:
                for name, index in (("grown", grown), ("rebuilt", rebuilt)):
                    faiss.extract_index_ivf(index.index).nprobe = probe
                    _, f, _ = timed_queries(index, queries)
                    recalls[(name, probe)] = recall_at(f, t)
                report(
                    f"  {kind} trained on hep-th, +{share:.0%} arXiv papers ({end:,}): nprobe {probe}: recall@10 grown "
                    f"{recalls[('grown', probe)]:.3f} vs rebuilt {recalls[('rebuilt', probe)]:.3f} "
                    f"(drift {recalls[('rebuilt', probe)] - recalls[('grown', probe)]:+.3f})",
                    what="real_drift",
                    kind=kind,
                    grown_by=share,
                    n=end,
                    nprobe=probe,
                    recall_grown=round(recalls[("grown", probe)], 4),
                    recall_rebuilt=round(recalls[("rebuilt", probe)], 4),
                )
        del t_rows


def tables(paths: list[Path]) -> None:
    """Markdown tables of the figures in JSON lines files written by ``--out`` (for docs/benchmarks.md)."""
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        print(f"\n{path.name}:")
        for r in records:
            if r["what"] == "machine":
                print(
                    f"- {r['time'][:10]}, commit {r['commit']}, {r['threads']} threads on {r['cores']} cores, {r['cpu']}"
                )
            elif r["what"] == "exact":
                print(
                    f"- exact search (baseline): {r['ms_per_query']:.2f} ms a query, batched, over {r['n']:,} vectors"
                )
            elif r["what"] == "build":
                size = f"{r['file_bytes'] / 1e9:.2f} GB file" if r.get("file_bytes") else ""
                print(
                    f"- {r['kind']} build {r['build_seconds']:.0f} s (+{r['generate_seconds']:.0f} s generating), "
                    f"{size}, float32 {r['float32_bytes'] / 1e9:.2f} GB, peak RSS {r['peak_rss_gb']:.2f} GB, lists {r['nlist']}"
                )
                print(
                    "\n| setting | recall@10 | p50 ms | p99 ms | batch q/s | vs exact (p50) | load |\n|---|---|---|---|---|---|---|"
                )
            elif r["what"] == "search":
                width = next((f"{k} {r[k]}" for k in ("nprobe", "efSearch") if k in r), "exact")
                width += f", re-rank {r['rerank']}x" if r.get("rerank") is not None else ""
                ratio = f"{r['exact_ms_per_query'] / r['p50_ms']:.0f}x" if r.get("exact_ms_per_query") else ""
                print(
                    f"| {r.get('label', '')} {r['kind']} {width} | {r['recall_at_10']:.3f} | {r['p50_ms']:.2f} | "
                    f"{r['p99_ms']:.2f} | {r['batch_queries_per_s']:,.0f} | {ratio} | {r['load']} |"
                )
            elif r["what"] in ("grow", "real_drift"):
                print(
                    f"- {r['kind']} +{r['grown_by']:.0%} to {r['n']:,}, nprobe {r['nprobe']}: recall@10 grown "
                    f"{r['recall_grown']:.3f}, rebuilt {r['recall_rebuilt']:.3f}"
                    + (f", added in {r['add_seconds']} s" if "add_seconds" in r else "")
                )
            elif r["what"] == "nprobe_needed":
                print(
                    f"- {r['kind']}: nprobe for recall@10 >= {r['target']}: real {r['real']}, generated {r['generated']} "
                    f"({r['nlist']} lists, {r['n']:,} papers)"
                )
            elif r["what"] == "peak_rss":
                print(f"- peak RSS of the process {r['gb']} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="indexed generated vectors (default 1,000,000)")
    parser.add_argument("--grow", type=int, help="growth experiment from this many vectors (e.g. 200000)")
    parser.add_argument(
        "--new-fields", type=float, default=0.1, help="--grow: share of the fields that appear only in the added papers"
    )
    parser.add_argument("--steps", default="0.1,1.0", help="--grow: growth steps, as shares of the first build")
    parser.add_argument("--real", type=Path, help="folder with hepth.jsonl and arxiv2023.jsonl (from --embed-real)")
    parser.add_argument("--embed-real", type=Path, help="embed hep-th and arXiv-2023 into this folder, then stop")
    parser.add_argument("--hepth-sample", type=int, help="--embed-real: embed this many hep-th papers (seeded)")
    parser.add_argument("--arxiv-sample", type=int, help="--embed-real: embed this many arXiv-2023 papers (seeded)")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--kinds", default="ivf-pq", help="comma list of flat, hnsw, ivf, ivf-pq, auto")
    parser.add_argument("--nprobe", default="8,16,32,64,128,256", help="IVF lists scanned per query to try")
    parser.add_argument("--rerank", default="1,4,16,64", help="ivf-pq candidates re-ranked per neighbour to try")
    parser.add_argument("--ef-search", default="128,256,512", help="HNSW efSearch values to try")
    parser.add_argument("--save-dir", type=Path, help="also save each index here (file size, save time), then delete")
    parser.add_argument("--out", type=Path, help="append each figure as a JSON line to this file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", type=Path, nargs="+", help="print markdown tables of these --out files, then stop")
    args = parser.parse_args()
    if args.table:
        tables(args.table)
        return
    args.kinds = args.kinds.split(",")
    args.steps = [float(x) for x in args.steps.split(",")]
    args.nprobe = [int(x) for x in args.nprobe.split(",")]
    args.rerank = [int(x) for x in args.rerank.split(",")]
    args.ef_search = [int(x) for x in args.ef_search.split(",")]
    if args.embed_real is not None:
        embed_real(args.embed_real, args.hepth_sample, args.arxiv_sample)
        return
    set_threads(args.threads)
    report = Report(args.out)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report(
        f"{datetime.date.today()} commit {commit}: {args.threads} threads, load {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores; {cpu_flags()}",
        what="machine",
        threads=args.threads,
        cores=os.cpu_count(),
        cpu=cpu_flags(),
        commit=commit,
        argv=sys.argv[1:],
    )
    if args.real is not None:
        run_real(args, report)
    elif args.grow is not None:
        run_grow(args, report)
    else:
        run_generated(args, report)
    report(f"peak RSS of the process {peak_rss_gb():.2f} GB", what="peak_rss", gb=round(peak_rss_gb(), 2))


if __name__ == "__main__":
    main()
