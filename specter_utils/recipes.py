"""Where a training run starts: a *profile* (``PROFILES``: fits a run to a machine) and a *recipe* (``RECIPES``:
the scientific choices), each a set of ``training`` values over TrainConfig's defaults (:mod:`specter_utils.spec`
applies them in its order of precedence)."""

from __future__ import annotations

from typing import Any

# A profile fits training to a machine; it changes only what differs from TrainConfig's defaults, and says why.
PROFILES: dict[str, dict[str, Any]] = {
    # Within an hour on a laptop CPU: MiniLM, 64 wordpieces, a budget of 375 optimiser steps.
    "cpu": {
        # Training length only (evaluation embeds at its own length): title and the first ~50 words of the
        # abstract, about 2.4x the triplets/s of 128 on 2 cores (docs/benchmarks.md)
        "max_length": 64,
        # The budget is in optimiser steps, so it follows the corpus: 375 steps of 64 are one pass over 24,000
        # triplets (hep-th's training graph yields about 40,000, capped here), about 40 minutes on 2 cores, inside a
        # 60-minute budget; a corpus that yields fewer triplets makes more passes over its own in the same steps.
        # Of the levers measured on held-out hep-th papers, more distinct triplets moved MAP the most; batches of
        # 256 did not beat batches of 64 (docs/results.md, the lever study)
        "max_steps": 375,
        "max_triplets": 24000,
        "epochs": 1.0,  # one pass where a preset or study sets its budget in triplets (max_steps: -1)
        "max_val_triplets": 200,  # each evaluation embeds 3 texts per val triplet (loss + triplet accuracy)
        # One forward batch of 32 instead of 8 x 4 accumulation: the same gradient, less Python overhead per step
        "batch_size": 32,
        "save_steps": 50,  # checkpoints hold the optimiser state (about 270 MB for MiniLM): every ~5 minutes
        "eval_steps": 1000,  # validation before training and at the end (a 1-epoch CPU run has ~375 steps)
        "logging_steps": 5,
    },
    # The paper's run: SciBERT, 512 wordpieces, every triplet, 2 epochs (needs the hub or a local copy).
    "gpu": {
        "base_model": "allenai/scibert_scivocab_uncased",
        "batch_size": 32,  # 96 sequences of 512 per step fit an 80 GB GPU in bf16; 1 accumulation step
        "save_steps": 1000,
        "eval_steps": 2000,
        "dataloader_num_workers": 2,  # keep tokenisation off the training process
    },
}

# A recipe is a set of scientific choices applied after the profile. Choosing one gives exactly these values,
# whatever a preset file says for the same keys (spec.py); only your own overrides in the same command win.
RECIPES: dict[str, dict[str, Any]] = {
    # SPECTER (docs/protocol.md, "Loss"): triplet loss, L2 distance, margin 1, final-layer [CLS], batch 32, lr 2e-5.
    "paper": {
        "loss": "triplet",
        "pooling": "cls",
        "triplet_margin": 1.0,
        "learning_rate": 2e-5,
        "effective_batch_size": 32,
    },
    # The released AllenNLP code (docs/recipes.md lists every difference): the paper's loss and pooling, with
    # lr 3e-5 (the paper says 2e-5), BertAdam, AllenNLP's slanted triangular schedule (cut_frac 0.1, ratio 32),
    # per-tensor norm clipping at 1 plus value clipping at 1, dropout 0.5 on the embeddings before the loss,
    # and the epoch with the lowest validation loss as the final model.
    "released": {
        "loss": "triplet",
        "pooling": "cls",
        "triplet_margin": 1.0,
        "learning_rate": 3e-5,
        "effective_batch_size": 32,
        "weight_decay": 0.01,
        "optimizer": "bert_adam",
        "lr_schedule": "slanted_triangular",
        "warmup_ratio": 0.1,  # AllenNLP's cut_frac
        "stlr_ratio": 32.0,
        "max_grad_norm": 1.0,  # per tensor, inside BertAdam
        "grad_value_clip": 1.0,
        "embedding_dropout": 0.5,
        "best_by_val_loss": True,
    },
    # In-batch negatives with the training graph's false negatives masked, the base model's own pooling.
    "citation-mnrl": {
        "loss": "mnrl-citation",
        "pooling": "auto",
        # the cpu profile's 375 steps of 64: 2e-5 barely moves a model that is already good
        "learning_rate": 5e-5,
        "effective_batch_size": 64,  # every row of a batch is a negative of the others: bigger is better
        "batch_size": 64,  # in-batch negatives come from one forward batch, so no accumulation
    },
}
DEFAULT_RECIPE = {"cpu": "citation-mnrl", "gpu": "paper"}  # a profile's recipe when none is named
