"""Real (tiny) training runs on real SPECTER triplets from scirepeval/specter_small.json.

The model is all-MiniLM-L6-v2 cut to 2 layers (pretrained weights, SPECTER's [CLS] pooling) so each
run takes seconds; the data are the first real triplets of the SciRepEval sample.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from transformers import TrainerCallback

from specter_utils.cli import main
from specter_utils.io import write_json
from specter_utils.spec import train_config
from specter_utils.training.train import resolve_precision, train_specter
from specter_utils.triplets.io import Triplet, write_triplets

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny_model(minilm_two_layers) -> Path:
    """all-MiniLM-L6-v2 with its first 2 layers only, saved as a plain transformers model (tests/conftest.py)."""
    return minilm_two_layers


@pytest.fixture(scope="module")
def triplet_dir(shared_data, tmp_path_factory) -> Path:
    """16 train and 4 val real triplets, plus one train triplet whose papers have no metadata."""
    from specter_utils.data.scirepeval import read_specter_triplets

    src = shared_data / "scirepeval" / "specter_small.json"
    if not src.exists():
        pytest.skip(f"{src} not found")
    triples, papers = read_specter_triplets(src)
    rows = [Triplet(q.paper_id, p.paper_id, n.paper_id, "easy") for q, p, n in triples]
    out = tmp_path_factory.mktemp("triplets")
    write_triplets(out / "train.jsonl", [*rows[:16], Triplet("no-such-paper", rows[0].pos, "missing-too", "hard")])
    write_triplets(out / "val.jsonl", rows[16:20])
    write_json(out / "metadata.json", {pid: paper.to_specter_metadata() for pid, paper in papers.items()})
    return out


def _config(tiny_model: Path, triplet_dir: Path, out: Path, **overrides):
    settings = dict(
        triplets=str(triplet_dir),
        metadata=str(triplet_dir / "metadata.json"),
        out=str(out),
        base_model=str(tiny_model),
        max_length=48,
        batch_size=4,
        effective_batch_size=8,
        epochs=2,
        save_steps=2,
        eval_steps=2,
        logging_steps=1,
        progress_bar=False,
        drop_unknown=True,  # the fixture holds one triplet naming unknown papers: counted and dropped
        seed=7,
    )
    return train_config(**{**settings, **overrides})


def _gap(model, texts) -> float:
    """Mean d(q, pos) - d(q, neg) over the triplets (lower is better)."""
    anchor, positive, negative = (model.encode(column, convert_to_tensor=True) for column in texts)
    return ((anchor - positive).norm(dim=1) - (anchor - negative).norm(dim=1)).mean().item()


class OptimizerGroups(TrainerCallback):
    """Records which parameters each optimiser group decays."""

    def __init__(self) -> None:
        self.decayed: list[str] = []
        self.not_decayed: list[str] = []
        self.weight_decay = 0.0

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        names = {id(p): n for n, p in model.named_parameters()}
        for group in optimizer.param_groups:
            target = self.decayed if group["weight_decay"] > 0 else self.not_decayed
            target.extend(names[id(p)] for p in group["params"])
        self.weight_decay = max(g["weight_decay"] for g in optimizer.param_groups)


@pytest.fixture(scope="module")
def trained(tiny_model, triplet_dir, tmp_path_factory):
    """One short run (4 optimiser steps, lr raised so a few steps move the embeddings)."""
    from sentence_transformers import SentenceTransformer

    from specter_utils.training.data import load_training_data
    from specter_utils.training.train import specter_model as build_model

    before = build_model(str(tiny_model), "cls", 48)
    data = load_training_data(triplet_dir, triplet_dir / "metadata.json", before.tokenizer.sep_token, drop_unknown=True)
    texts = (data.train.anchor, data.train.positive, data.train.negative)
    gap_before = _gap(before, texts)
    groups = OptimizerGroups()
    out = tmp_path_factory.mktemp("run") / "run"
    final_dir = train_specter(_config(tiny_model, triplet_dir, out, learning_rate=1e-4), callbacks=[groups])
    gap_after = _gap(SentenceTransformer(str(final_dir)), texts)
    return {"dir": final_dir, "out": out, "before": gap_before, "after": gap_after, "groups": groups, "texts": texts}


def test_training_pulls_positives_closer(trained):
    # Fails if the Euclidean metric's sign were inverted (as in some sentence-transformers releases).
    assert trained["after"] < trained["before"] - 1e-4, (trained["before"], trained["after"])


def test_weight_decay_skips_bias_and_layernorm(trained):
    groups = trained["groups"]
    assert groups.weight_decay == pytest.approx(0.01)
    assert groups.decayed and groups.not_decayed
    assert all("bias" in n or "LayerNorm" in n for n in groups.not_decayed), groups.not_decayed
    assert not any("bias" in n or "LayerNorm" in n for n in groups.decayed)
    assert any(n.endswith("attention.self.query.weight") for n in groups.decayed)


def test_saved_model_loads_both_ways_with_cls_pooling(trained):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    path = str(trained["dir"])
    model = SentenceTransformer(path)
    text = trained["texts"][0][0]
    embedding = model.encode([text], convert_to_tensor=True)[0]
    tokenizer, plain = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)
    batch = tokenizer([text], truncation=True, max_length=48, return_tensors="pt")
    with torch.no_grad():
        cls = plain(**batch).last_hidden_state[0, 0]
    # The HF allenai/specter recipe (AutoModel, [CLS] vector) gives the same embedding.
    assert torch.allclose(embedding, cls, atol=1e-4)
    assert model.max_seq_length == 48


def test_card_and_run_files(trained):
    card = (trained["dir"] / "README.md").read_text()
    summary = json.loads((trained["dir"] / "specter_training.json").read_text())
    assert summary["data"]["train"]["read"] == 17 and summary["data"]["train"]["used"] == 16
    assert summary["data"]["train"]["without_metadata"] == 1
    assert set(summary["data"]["train"]["missing_examples"]) == {"no-such-paper", "missing-too"}
    assert "| train |" in card and "| 17 | 16 | 1 (2 ids" in card
    assert "| learning_rate | 0.0001 |" in card and "margin 1.0" in card
    results = summary["results"]
    assert results["global_step"] == 4 and "val_loss_final" in results and "val_loss_before" in results
    assert "base_model:" in card.split("---")[1]
    log = json.loads((trained["out"] / "log_history.json").read_text())
    assert sum("eval_loss" in e for e in log) >= 3  # before training, at step 2 and step 4
    assert not (trained["out"] / "checkpoints").exists()  # removed after a successful run
    assert not list(trained["out"].glob(".model.*"))  # no temp dir left behind
    recorded = json.loads((trained["out"] / "train_config.json").read_text())
    assert recorded["dtype"] == "auto" and recorded["resolved_dtype"] == resolve_precision("auto")
    assert summary["derived"]["precision"] == recorded["resolved_dtype"]


def test_existing_model_is_not_overwritten(trained, tiny_model, triplet_dir):
    from specter_utils.errors import DataError

    with pytest.raises(DataError, match="--overwrite"):
        train_specter(_config(tiny_model, triplet_dir, trained["out"]))


KILL_SCRIPT = """
import os, signal, sys
from transformers import TrainerCallback
from specter_utils.spec import train_config
from specter_utils.training.train import resolve_precision, train_specter

class KillAfterStep(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == {kill_at}:
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9: no clean-up, no final save

train_specter(train_config(**{config!r}), callbacks=[KillAfterStep()])
"""


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_killed_run_resumes_to_the_same_weights(random_tiny_model, triplet_dir, tmp_path):
    # 12 triplets, batch 2 x 2 accumulation: 3 steps per epoch, 6 in all; checkpoints every 2 steps.
    tiny_model = random_tiny_model
    settings = dict(batch_size=2, effective_batch_size=4, save_steps=2, eval_steps=100, learning_rate=1e-3)
    settings |= dict(max_triplets=12, max_val_triplets=2, max_length=32)
    reference = train_specter(_config(tiny_model, triplet_dir, tmp_path / "reference", **settings))

    out = tmp_path / "interrupted"
    config = _config(tiny_model, triplet_dir, out, **settings).to_dict()
    script = KILL_SCRIPT.format(kill_at=5, config=config)  # dies in epoch 2, after checkpoint-4, before checkpoint-6
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (out / "checkpoints" / "checkpoint-4").is_dir() and not (out / "model").exists()

    # Resume through the command line, as a user would (its main, in this process: the kill above is the one step
    # that needs a process of its own)
    argv = ["train", "--triplets", str(triplet_dir)]
    argv += ["--metadata", str(triplet_dir / "metadata.json"), "--out", str(out)]
    for name, value in config.items():
        if name not in {"triplets", "metadata", "out", "profile", "recipe"} and isinstance(value, int | float | str):
            if isinstance(value, bool):
                argv.append(f"--{'' if value else 'no-'}{name.replace('_', '-')}")
            else:
                argv += [f"--{name.replace('_', '-')}", str(value)]
    assert main(argv) == 0
    summary = json.loads((out / "model" / "specter_training.json").read_text())
    # Resumed mid-epoch 2: the trainer skips the batch already seen, in the same (seed, epoch) order.
    assert summary["resumed_from"] == "checkpoint-4" and summary["results"]["global_step"] == 6

    expected, actual = _weights(reference), _weights(out / "model")
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.allclose(expected[name], actual[name], atol=1e-6), name
    # ... and the run really moved the weights, so the comparison means something.
    start = _weights(tiny_model)
    moved = [n for n in start if n in expected and not torch.allclose(start[n], expected[n], atol=1e-6)]
    assert moved


def test_train_quiet_draws_no_progress_bar(random_tiny_model, triplet_dir, tmp_path, capfd):

    argv = ["train", "--triplets", str(triplet_dir), "--metadata", str(triplet_dir / "metadata.json")]
    argv += ["--out", str(tmp_path / "q"), "--base-model", str(random_tiny_model), "--profile", "cpu"]
    argv += ["--max-triplets", "8", "--batch-size", "4", "--effective-batch-size", "4", "--max-length", "32"]
    argv += ["--drop-unknown", "--loss", "mnrl", "--quiet", "--max-steps", "2"]
    assert main(argv) == 0
    printed = capfd.readouterr()
    assert "it/s]" not in printed.err + printed.out and "s/it]" not in printed.err + printed.out, printed.err[-800:]
    assert "Computing widget examples" not in printed.err
    from tqdm import tqdm

    assert not tqdm(range(1)).disable  # the switch ends with the command
