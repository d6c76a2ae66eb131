"""Corpus readers: peak memory and time per million records, on generated records of realistic size.

Generates N records (title ~10 words, abstract ~150 words, ~12 references of which ~1 points outside the
corpus, 1-2 of 19 field labels, 3 authors) in the generic format, writes them as ``.jsonl.gz`` and
``.parquet``, then reads each file into a Corpus in a fresh process and reports that process's peak resident
memory above its baseline (after imports), scaled to one million records. The "all rows as dicts" line is
what parsing every row into a list first and building the Corpus from it would take (what streaming avoids).
Parquet is written in row groups of 10,000 rows; a reader decodes one row group at a time, so a file written
as one huge row group costs that row group's Arrow memory on top.

    python bench/bench_corpus_memory.py                    # 100,000 records
    python bench/bench_corpus_memory.py --records 1000000  # the full million (about 1.5 GB of files)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FIELDS = [f"Field {i}" for i in range(19)]  # MAG has 19 top-level fields


def records(n: int, seed: int = 0):
    """``n`` generic records; ids ``P<i>``; references to earlier papers plus about one unknown id."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    for i in range(n):
        refs = [f"P{rng.randrange(i)}" for _ in range(min(i, rng.randint(6, 16)))]
        if rng.random() < 0.8:
            refs.append(f"X{rng.randrange(10**9)}")
        yield {
            "paper_id": f"P{i}",
            "title": " ".join(rng.choices(vocab, k=10)),
            "abstract": " ".join(rng.choices(vocab, k=150)),
            "references": refs,
            "authors": [f"A. Author{rng.randrange(10**5)}" for _ in range(3)],
            "venue": f"Venue {rng.randrange(200)}",
            "year": 1990 + rng.randrange(30),
            "labels": rng.sample(FIELDS, rng.randint(1, 2)),
        }


def _status_mb(key: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process in MB (Linux; ru_maxrss would include the parent's
    peak, which survives fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def child(path: str, how: str) -> None:
    """Run in a fresh process: read ``path`` and print baseline and peak RSS (MB) and seconds as JSON."""
    from specter_utils.data.generic import iter_records, read_generic

    if path.endswith(".parquet"):
        import pyarrow.parquet  # noqa: F401  (its shared libraries are part of the baseline, not of the corpus)

    baseline = _status_mb("VmRSS")
    started = time.perf_counter()
    if how == "rows":  # the non-streaming way: every parsed row first, then the Corpus from them
        from specter_utils.data.generic import CorpusBuilder, parse_generic_record

        rows = list(iter_records(path))
        builder = CorpusBuilder(Path(path), "jsonl", "labels")
        for line, row in rows:
            builder.add(*parse_generic_record(row, Path(path), line)[:2], line)
        corpus = builder.corpus()
        n, edges = len(corpus.papers), len(corpus.edges)
    else:
        corpus = read_generic(path)
        n, edges = len(corpus.papers), len(corpus.edges)
    print(
        json.dumps(
            {
                "baseline": baseline,
                "peak": _status_mb("VmHWM"),
                "seconds": time.perf_counter() - started,
                "records": n,
                "edges": edges,
            }
        )
    )


def measure(path: Path, how: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), how], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="the larger of the two sizes (default 100,000)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from specter_utils.data.export import write_records

    sizes = (args.records // 4, args.records)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        files = {}
        for n in sizes:
            for suffix in ("jsonl.gz", "parquet"):
                files[n, suffix] = Path(tmp) / f"corpus{n}.{suffix}"
                write_records(files[n, suffix], records(n))
        print(
            f"generated {sum(sizes):,} records in {time.perf_counter() - started:.0f} s; at {args.records:,}: "
            + ", ".join(f"{s} {files[args.records, s].stat().st_size / 2**20:.0f} MB" for s in ("jsonl.gz", "parquet"))
        )
        print(
            "peak resident memory above the process's baseline (after imports); per 1M records is the slope "
            f"between {sizes[0]:,} and {sizes[1]:,} records (fixed costs such as Arrow's buffers cancel out)"
        )
        print(
            f"{'file':<10} {'reader':<26} "
            + " ".join(f"{f'MB at {n:,}':>12}" for n in sizes)
            + f" {'MB per 1M':>10} {'s per 1M':>9}"
        )
        for suffix in ("jsonl.gz", "parquet"):
            for how, label in (("corpus", "streaming: read_generic"), ("rows", "rows first, then Corpus")):
                m = {n: measure(files[n, suffix], how) for n in sizes}
                delta = {n: m[n]["peak"] - m[n]["baseline"] for n in sizes}
                slope = (delta[sizes[1]] - delta[sizes[0]]) * 1_000_000 / (sizes[1] - sizes[0])
                seconds = m[sizes[1]]["seconds"] * 1_000_000 / sizes[1]
                cells = " ".join(f"{delta[n]:>12,.0f}" for n in sizes)
                print(f"{suffix:<10} {label:<26} {cells} {slope:>10,.0f} {seconds:>9,.0f}")


if __name__ == "__main__":
    main()
