"""The SPECTER README's plain ``transformers`` recipe as a command: the yardstick of ``bench/bench_commands.py``.

github.com/allenai/specter, "How to use the pretrained model"::

    inputs = tokenizer(title_abs, padding=True, truncation=True, return_tensors="pt", max_length=512)
    result = model(**inputs)
    embeddings = result.last_hidden_state[:, 0, :]

run over batches of the papers in input order (no sorting, no ``torch.no_grad``, as in the README; the same loop
as ``bench/bench_embedding.py``'s ``reference_recipe``), the vectors saved as one ``.npy``. It imports nothing of
this project, so its start-up is what a user of the recipe pays.

    python bench/recipe_embed.py --model MODEL_DIR --metadata papers.json --out vectors.npy --max-length 512
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a transformers model folder or hub id")
    parser.add_argument("--metadata", type=Path, required=True, help="{paper_id: {title, abstract}} JSON")
    parser.add_argument("--out", type=Path, required=True, help="vectors, one row per paper (.npy)")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    papers = list(json.loads(args.metadata.read_text()).values())
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model)
    out = []
    for start in range(0, len(papers), args.batch_size):
        batch = papers[start : start + args.batch_size]
        title_abs = [p["title"] + tokenizer.sep_token + (p.get("abstract") or "") for p in batch]
        inputs = tokenizer(title_abs, padding=True, truncation=True, return_tensors="pt", max_length=args.max_length)
        result = model(**inputs)
        out.append(result.last_hidden_state[:, 0, :].detach().float().numpy())
    np.save(args.out, np.vstack(out) if out else np.zeros((0, 0), dtype=np.float32))
    return 0


if __name__ == "__main__":
    torch.set_grad_enabled(True)  # the README's loop, autograd on
    raise SystemExit(main())
