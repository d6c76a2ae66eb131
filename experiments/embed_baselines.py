"""Embed the recipe study's test papers with the TF-IDF-SVD baseline, fitted as notebook 04 fits it.

Usage: python experiments/embed_baselines.py RUN_DIR   (RUN_DIR holds bench/ and test_ids.txt; see recipes.sh)
"""

import sys
from pathlib import Path

from specter_utils.spec import load_spec
from specter_utils.workflow.embed import embed_baselines, papers_to_embed

run = Path(sys.argv[1])
wanted = set((run / "test_ids.txt").read_text().split())
papers = {pid: p for pid, p in papers_to_embed(run / "bench/scidocs", split="test").items() if pid in wanted}
spec = load_spec("hepth", {"embedding.baselines": ["tfidf-svd"], "seed": 0})
written = embed_baselines(
    spec.embedding, papers, run / "emb", run / "bench/scidocs", run / "bench/train", seed=spec.seed
)
print(written)
