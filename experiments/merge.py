"""WiSE-FT after the fact: merge a trained model with its base at weight ALPHA (the same code as --merge-with-base).

Usage: python experiments/merge.py TRAINED_MODEL_DIR BASE ALPHA OUT_DIR
"""

import sys

from sentence_transformers import SentenceTransformer

from specter_utils.models import resolve_model
from specter_utils.training.train import merge_with_base

trained_dir, base, alpha, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
trained = SentenceTransformer(trained_dir, device="cpu")
original = SentenceTransformer(resolve_model(base), device="cpu")
print(f"merged {merge_with_base(trained, original, alpha)} tensors at alpha {alpha}")
trained.save_pretrained(out)
