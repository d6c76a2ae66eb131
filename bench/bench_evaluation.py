"""SCIDOCS evaluation at SCIDOCS scale: our suite versus the reference protocol run naively.

Generates a SCIDOCS directory in a temporary folder: MAG (25K labelled papers, 19 classes) and MeSH
(23K, 11 classes) with clustered 768-dimensional embeddings (class centres, sub-clusters, isotropic
noise, 8% label noise), and co-view / co-read / cite / co-cite with 1,000 queries x 30 candidates
(5 relevant near the query, 25 others). Then it times

- ours: ``evaluation.suite.evaluate`` on the directory and the ``.npy`` embeddings (load included);
- the reference: ``GridSearchCV(LinearSVC(loss="squared_hinge", random_state=42), cv=3,
  param_grid={"C": logspace(-4, 2, 7)})`` per classification task, as ``scidocs/classification.py``
  (sklearn's LinearSVC; the original imports lightning's), and the original's per-query ranking
  loop (a Python loop over candidates, a run file, ``pytrec_eval.parse_run``);

and prints the times, the ratio and the F1 difference (target: within 0.1), and checks that the
ranking metrics are identical.

    python bench/bench_evaluation.py [--reference full|subset|none] [--subset 0.2] [--n-jobs 1]

``--reference subset`` fits the reference (and, for the F1 comparison, ours again) on a stratified
``--subset`` fraction of each train split and extrapolates the reference's full-size time linearly
in the number of training papers (liblinear's cost per pass is linear in it; the number of passes
is not, so the extrapolation is a rough lower bound).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from specter_utils.data.scidocs import ScidocsData, scidocs_record, write_scidocs_dir
from specter_utils.embedding.io import read_embeddings
from specter_utils.evaluation.classification import classify
from specter_utils.evaluation.suite import evaluate, scidocs_metrics

CLASSIFICATION = {"mag": (25_000, 19), "mesh": (23_000, 11)}
RANKING_TASKS = ("coview", "coread", "cite", "cocite")
DIM = 768


def clustered(n: int, k: int, rng: np.random.Generator, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labelled points: class centres, 3 sub-clusters per class, isotropic noise, 8% of labels flipped."""
    centres = rng.normal(0, 0.06, (k, DIM))
    subs = centres[:, None, :] + rng.normal(0, 0.042, (k, 3, DIM))
    y = rng.integers(0, k, n)
    X = mean + subs[y, rng.integers(0, 3, n)] + rng.normal(0, 0.35, (n, DIM))
    flip = rng.random(n) < 0.08
    y = np.where(flip, rng.integers(0, k, n), y)
    return X.astype(np.float32), y


def generate(root: Path, queries: int, seed: int = 0) -> Path:
    """Write the SCIDOCS directory and ``emb.npy`` + ``emb.ids.txt``; return the embeddings path."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(0, 0.3, DIM)
    ids: list[str] = []
    blocks: list[np.ndarray] = []
    data = ScidocsData(root=root)
    metadata: dict[str, dict] = {"mag_mesh": {}, "view_cite_read": {}}
    for task, (n, k) in CLASSIFICATION.items():
        X, y = clustered(n, k, rng, mean)
        pids = [f"{task}-{i}" for i in range(n)]
        ids += pids
        blocks.append(X)
        rows = [(pid, f"label{label}") for pid, label in zip(pids, y.tolist(), strict=True)]
        n_train, n_val = int(0.67 * n), int(0.08 * n)
        data.classification[task] = {
            "train": rows[:n_train],
            "val": rows[n_train : n_train + n_val],
            "test": rows[n_train + n_val :],
        }
        metadata["mag_mesh"].update({pid: scidocs_record(pid, pid) for pid in pids})
    for task in RANKING_TASKS:
        q = mean + rng.normal(0, 0.3, (queries, DIM))
        pos = q[:, None, :] + rng.normal(0, 0.35, (queries, 5, DIM))
        neg = q[:, None, :] + rng.normal(0, 0.36, (queries, 25, DIM))  # barely farther: MAP around 80
        qrels = {}
        for i in range(queries):
            qid = f"{task}-q{i}"
            cands = [f"{task}-q{i}-c{j}" for j in range(30)]
            qrels[qid] = {c: int(j < 5) for j, c in enumerate(cands)}
            ids += [qid, *cands]
            metadata["view_cite_read"].update({pid: scidocs_record(pid, pid) for pid in [qid, *cands]})
        blocks += [np.concatenate([q[:, None, :], pos, neg], axis=1).reshape(-1, DIM).astype(np.float32)]
        data.ranking[task] = {"test": qrels}
    data.metadata = metadata
    write_scidocs_dir(root, data)
    path = root / "emb.npy"
    np.save(path, np.concatenate(blocks))
    (root / "emb.ids.txt").write_text("\n".join(ids) + "\n")
    return path


def stratified_subset(rows: list[tuple[str, str]], fraction: float) -> list[tuple[str, str]]:
    from sklearn.model_selection import train_test_split

    if fraction >= 1:
        return rows
    keep, _ = train_test_split(rows, train_size=fraction, random_state=0, stratify=[label for _, label in rows])
    return keep


def reference_classification(X_train, y_train, X_test, y_test, n_jobs: int) -> float:
    """The original's ``classify``, with sklearn's LinearSVC."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import f1_score
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    svm = GridSearchCV(
        LinearSVC(loss="squared_hinge", random_state=42), cv=3, param_grid={"C": np.logspace(-4, 2, 7)}, n_jobs=n_jobs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(X_train, y_train)
    return float(np.round(100 * f1_score(y_test, svm.predict(X_test), average="macro"), 2)), svm.best_params_["C"]


def reference_ranking(qrels: dict[str, dict[str, int]], vectors: dict[str, np.ndarray], run_file: Path) -> dict:
    """The original's ``make_run_from_embeddings`` + ``get_qrel_metrics`` (per-candidate Python loop)."""
    import pytrec_eval

    lines = []
    for pid, docs in qrels.items():
        query = np.array(vectors[pid])
        scored = sorted(((d, -np.linalg.norm(query - np.array(vectors[d]))) for d in docs), key=lambda x: x[1])
        lines += [f"{pid} 0 {d} 0 {np.round(s, 5)} n/a" for d, s in scored]
    run_file.write_text("\n".join(lines) + "\n")
    with open(run_file) as handle:
        run = pytrec_eval.parse_run(handle)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    return {
        m: float(np.round(100 * pytrec_eval.compute_aggregated_measure(m, [q[m] for q in per_query.values()]), 2))
        for m in ("map", "ndcg")
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", choices=("full", "subset", "none"), default="subset")
    parser.add_argument("--subset", type=float, default=0.2, help="train fraction for --reference subset")
    parser.add_argument("--queries", type=int, default=1000, help="queries per ranking task")
    parser.add_argument("--n-jobs", type=int, default=1, help="threads (ours) / processes (reference)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        emb_path = generate(root, args.queries)
        print(f"generated SCIDOCS-size data in {time.perf_counter() - t0:.1f} s ({os.cpu_count()} CPUs)", flush=True)
        print(f"load average before: {os.getloadavg()}", flush=True)

        t0 = time.perf_counter()
        ours = evaluate(root, emb_path, tasks=["mag", "mesh", *RANKING_TASKS], n_jobs=args.n_jobs)
        ours_seconds = time.perf_counter() - t0
        print(f"ours: whole suite {ours_seconds:.1f} s (load included)", flush=True)
        for key, details in ours["details"].items():
            print(f"  {key}: {details.get('seconds')} s {details.get('C', '')}", flush=True)
        print(json.dumps(scidocs_metrics(ours)), flush=True)

        figures = {"ours_seconds": round(ours_seconds, 1), "ours": scidocs_metrics(ours), "reference": args.reference}
        if args.reference != "none":
            from specter_utils.data.scidocs import read_scidocs_dir

            emb = read_embeddings(emb_path)
            data = read_scidocs_dir(root, ["mag", "mesh", *RANKING_TASKS])
            fraction = 1.0 if args.reference == "full" else args.subset
            ref_seconds, ours_same, diffs = 0.0, 0.0, {}
            for task in CLASSIFICATION:
                train = stratified_subset(data.classification[task]["train"], fraction)
                X_train, _ = emb.lookup([p for p, _ in train])
                y_train = np.array([label for _, label in train])
                X_test, _ = emb.lookup([p for p, _ in data.classification[task]["test"]])
                y_test = np.array([label for _, label in data.classification[task]["test"]])
                t0 = time.perf_counter()
                ref_f1, ref_c = reference_classification(X_train, y_train, X_test, y_test, args.n_jobs)
                seconds = time.perf_counter() - t0
                ref_seconds += seconds / fraction
                if fraction < 1:
                    t0 = time.perf_counter()
                    mine = classify(X_train, y_train, X_test, y_test)
                    ours_same += time.perf_counter() - t0
                    our_f1, our_c = mine.f1, mine.best_c
                else:
                    our_f1, our_c = ours[task]["f1"], ours["details"][task]["C"]
                diffs[task] = round(abs(our_f1 - ref_f1), 2)
                print(
                    f"reference {task}: F1 {ref_f1} (C={ref_c:g}) in {seconds:.1f} s on {len(train)} train papers; "
                    f"ours F1 {our_f1} (C={our_c:g}); |diff| {diffs[task]}",
                    flush=True,
                )
            vectors = {pid: row.astype(np.float64).tolist() for pid, row in zip(emb.ids, emb.vectors, strict=True)}
            t0 = time.perf_counter()
            for task in RANKING_TASKS:
                ref = reference_ranking(data.ranking[task]["test"], vectors, root / "temp.run")
                key = {"coview": "co-view", "coread": "co-read", "cocite": "co-cite"}.get(task, task)
                assert ref == ours[key], (task, ref, ours[key])
            rank_seconds = time.perf_counter() - t0
            ref_seconds += rank_seconds
            print(f"reference ranking (4 tasks): {rank_seconds:.1f} s, metrics identical to ours", flush=True)
            label = "reference" if fraction == 1 else f"reference (extrapolated from {fraction:g} of train)"
            print(f"{label}: {ref_seconds:.1f} s; ratio {ref_seconds / ours_seconds:.1f}x", flush=True)
            print(f"F1 |ours - reference|: {diffs} (target <= 0.1)", flush=True)
            figures.update(
                reference_seconds=round(ref_seconds, 1),
                ratio=round(ref_seconds / ours_seconds, 1),
                f1_diff=diffs,
                subset=fraction,
            )
        print(f"load average after: {os.getloadavg()}", flush=True)
        if args.out:
            from specter_utils.io import write_json

            write_json(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
