"""Embed the issue-11 study's test papers with the TF-IDF-SVD baseline, fitted as the pipeline fits it.

Usage: python experiments/embed_baselines.py RUN_DIR   (RUN_DIR holds bench/ and test_ids.txt)
"""

import sys
from pathlib import Path

from specter_utils.steps import embed_baselines, papers_to_embed

run = Path(sys.argv[1])
wanted = set((run / "test_ids.txt").read_text().split())
papers = {pid: p for pid, p in papers_to_embed(run / "bench/scidocs", split="test").items() if pid in wanted}
written = embed_baselines(["tfidf-svd"], papers, run / "emb", run / "bench/scidocs", run / "bench/train", seed=0)
print(written)
