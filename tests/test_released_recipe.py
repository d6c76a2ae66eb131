"""``--recipe released``: each piece of the released AllenNLP training code, tested on its own, then one tiny run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from specter_utils.errors import DataError
from specter_utils.recipes import RECIPES
from specter_utils.spec import train_config
from specter_utils.training.released import (
    BertAdam,
    DropoutTripletLoss,
    GradientValueClipping,
    clamp_gradient_values,
    slanted_triangular,
    slanted_triangular_scheduler,
)

# --- BertAdam ---


def test_bert_adam_step_matches_the_hand_computed_update():
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = BertAdam([p], lr=0.1, eps=1e-6, weight_decay=0.01, max_grad_norm=0)  # no clipping here
    g1, g2 = torch.tensor([0.3, -0.4]), torch.tensor([0.1, 0.2])
    expected = p.detach().clone()
    m = torch.zeros(2)
    v = torch.zeros(2)
    for g in (g1, g2):
        p.grad = g.clone()
        opt.step()
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        expected = expected - 0.1 * (m / (v.sqrt() + 1e-6) + 0.01 * expected)  # no bias correction
        assert torch.allclose(p.detach(), expected, atol=1e-6)
    # the first step moves each weight by lr x (0.1 / sqrt(0.001)) = lr x 3.16, not lr as bias-corrected Adam would
    first = BertAdam([q := torch.nn.Parameter(torch.zeros(1))], lr=1.0, weight_decay=0.0, max_grad_norm=0)
    q.grad = torch.tensor([0.5])
    first.step()
    assert q.item() == pytest.approx(-0.1 / math.sqrt(0.001), rel=1e-4)


def test_bert_adam_clips_each_tensors_norm_separately():
    big, small = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt = BertAdam([big, small], lr=1e-3, weight_decay=0.0, max_grad_norm=1.0)
    big.grad, small.grad = torch.tensor([3.0, 4.0]), torch.tensor([0.3, 0.4])
    opt.step()
    assert big.grad.norm().item() == pytest.approx(1.0, rel=1e-5)  # 5 -> 1
    assert small.grad.norm().item() == pytest.approx(0.5, rel=1e-5)  # under the limit: untouched (global: 0.1)


def test_bert_adam_decays_only_groups_with_weight_decay():
    w, b = torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))
    opt = BertAdam([{"params": [w], "weight_decay": 0.5}, {"params": [b], "weight_decay": 0.0}], lr=0.1)
    w.grad, b.grad = torch.zeros(1), torch.zeros(1)
    opt.step()
    assert w.item() == pytest.approx(1 - 0.1 * 0.5) and b.item() == 1.0


# --- the slanted triangular schedule ---


def test_slanted_triangular_start_peak_end():
    total = 100  # cut = 10
    assert slanted_triangular(0, total) == pytest.approx(1 / 32)
    assert slanted_triangular(10, total) == pytest.approx(1.0)
    assert slanted_triangular(5, total) == pytest.approx((1 + 0.5 * 31) / 32)
    assert slanted_triangular(55, total) == pytest.approx((1 + 0.5 * 31) / 32)  # halfway down
    assert slanted_triangular(100, total) == pytest.approx(1 / 32)
    rising = [slanted_triangular(t, total) for t in range(11)]
    falling = [slanted_triangular(t, total) for t in range(10, 101)]
    assert rising == sorted(rising) and falling == sorted(falling, reverse=True)


def test_slanted_triangular_scheduler_sets_the_learning_rate():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = BertAdam([p], lr=3e-5)
    scheduler = slanted_triangular_scheduler(opt, total_steps=20, cut_frac=0.1, ratio=32)
    seen = []
    for _ in range(20):
        seen.append(opt.param_groups[0]["lr"])
        p.grad = torch.zeros(1)
        opt.step()
        scheduler.step()
    assert seen[0] == pytest.approx(3e-5 / 32) and seen[2] == pytest.approx(3e-5) and max(seen) == seen[2]
    assert opt.param_groups[0]["lr"] == pytest.approx(3e-5 / 32)  # after the last step


# --- gradient value clipping ---


def test_value_clipping_clamps_every_gradient_value():
    p = torch.nn.Parameter(torch.tensor([1.0, 1.0, 1.0]))
    handles = clamp_gradient_values([p], 1.0)
    (p * torch.tensor([10.0, -0.5, -3.0])).sum().backward()
    assert p.grad.tolist() == [1.0, -0.5, -1.0]
    for handle in handles:
        handle.remove()
    p.grad = None
    (p * 10.0).sum().backward()
    assert p.grad.tolist() == [10.0, 10.0, 10.0]  # the hooks are gone


def test_value_clipping_callback_adds_and_removes_hooks():
    model = torch.nn.Linear(2, 1)
    callback = GradientValueClipping(0.25)
    callback.on_train_begin(None, None, None, model=model)
    (model(torch.full((1, 2), 100.0)).sum()).backward()
    assert model.weight.grad.abs().max().item() == pytest.approx(0.25)
    callback.on_train_end(None, None, None)
    assert callback.handles == []


# --- dropout on the embeddings, in the loss only ---


def test_embedding_dropout_is_active_only_while_training():
    model = torch.nn.Identity()
    loss = DropoutTripletLoss(model, p=0.5, triplet_margin=1.0)
    torch.manual_seed(0)
    q, pos, neg = (torch.randn(64, 16) for _ in range(3))
    labels = torch.zeros(64)
    model.eval()
    plain = loss.compute_loss_from_embeddings([q, pos, neg], labels)
    reference = torch.relu((q - pos).norm(dim=1) - (q - neg).norm(dim=1) + 1.0).mean()
    assert plain.item() == pytest.approx(reference.item(), rel=1e-5)  # evaluation: no dropout
    model.train()
    first = loss.compute_loss_from_embeddings([q, pos, neg], labels)
    second = loss.compute_loss_from_embeddings([q, pos, neg], labels)
    assert first.item() != pytest.approx(plain.item()) and first.item() != second.item()
    assert loss.get_config_dict()["embedding_dropout"] == 0.5
    assert not any(isinstance(m, torch.nn.Dropout) for m in model.modules())  # nothing added to the model


# --- the recipe ---


def test_released_recipe_values_and_paper_unchanged():
    config = train_config("cpu", "released", triplets="t", metadata="m.json")
    assert config.recipe == "released"
    assert (config.optimizer, config.lr_schedule, config.learning_rate) == ("bert_adam", "slanted_triangular", 3e-5)
    assert (config.warmup_ratio, config.stlr_ratio, config.max_grad_norm, config.grad_value_clip) == (0.1, 32, 1, 1)
    assert config.embedding_dropout == 0.5 and config.best_by_val_loss and config.loss == "triplet"
    paper = train_config("cpu", "paper", triplets="t", metadata="m.json")
    assert (paper.optimizer, paper.lr_schedule, paper.embedding_dropout, paper.best_by_val_loss) == (
        "adamw",
        "linear",
        0.0,
        False,
    )
    assert "released" in RECIPES and RECIPES["paper"]["learning_rate"] == 2e-5


def test_released_fields_are_validated():
    base = {"triplets": "t", "metadata": "m.json"}
    with pytest.raises(DataError, match="optimizer"):
        train_config(optimizer="sgd", **base).validate()
    with pytest.raises(DataError, match="embedding_dropout"):
        train_config("cpu", "citation-mnrl", embedding_dropout=0.5, **base).validate()
    with pytest.raises(DataError, match="stlr_ratio"):
        train_config(stlr_ratio=0.5, **base).validate()


def test_released_training_arguments(tmp_path):
    from specter_utils.training.train import optimizer_cls_and_kwargs, trainer_class, training_arguments

    config = train_config("cpu", "released", triplets="t", metadata="m.json")
    args = training_arguments(config, tmp_path, "fp32", has_val=True)
    assert args.max_grad_norm == 0.0  # clipping happens per tensor inside BertAdam
    assert args.load_best_model_at_end and args.metric_for_best_model == "eval_loss" and not args.greater_is_better
    assert args.eval_strategy == "epoch" and args.save_strategy == "epoch"
    cls, kwargs = optimizer_cls_and_kwargs(config)
    assert cls is BertAdam and kwargs == {"lr": 3e-5, "eps": 1e-6, "max_grad_norm": 1.0}
    assert trainer_class(config).__name__ == "SlantedTriangularTrainer"
    with pytest.raises(DataError, match="validation"):
        training_arguments(config, tmp_path, "fp32", has_val=False)
    paper = train_config("cpu", "paper", triplets="t", metadata="m.json")
    assert optimizer_cls_and_kwargs(paper) is None
    assert training_arguments(paper, tmp_path, "fp32", has_val=True).max_grad_norm == 1.0


# --- one tiny run through the trainer ---


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> dict:
    """A random 2-layer BERT of width 32, 16 synthetic triplets, 2 epochs of the released recipe."""
    from transformers import AutoTokenizer, BertConfig, BertModel, TrainerCallback

    from specter_utils.io import write_json
    from specter_utils.models import resolve_model
    from specter_utils.training.train import train_specter
    from specter_utils.triplets.io import Triplet, write_triplets

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("released")
    model_dir = root / "bert"
    BertModel(
        BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    ).save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(resolve_model("minilm")).save_pretrained(model_dir)
    papers = {
        f"p{i}": {"paper_id": f"p{i}", "title": f"paper {i} on topic {i % 3}", "abstract": "words"} for i in range(12)
    }
    write_json(root / "metadata.json", papers)
    rows = [Triplet(f"p{i}", f"p{(i + 3) % 12}", f"p{(i + 1) % 12}", "easy") for i in range(12)]
    write_triplets(root / "train.jsonl", rows[:8] + rows[:8])
    write_triplets(root / "val.jsonl", rows[8:])

    class Seen(TrainerCallback):
        optimizer = None
        lrs: list = []

        def on_step_end(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
            Seen.optimizer = optimizer
            Seen.lrs.append(lr_scheduler.get_last_lr()[0])

    config = train_config(
        "cpu",
        "released",
        triplets=str(root),
        metadata=str(root / "metadata.json"),
        out=str(root / "run"),
        base_model=str(model_dir),
        max_length=16,
        batch_size=8,
        effective_batch_size=8,
        epochs=2.0,
        max_triplets=0,
        progress_bar=False,
        seed=3,
    )
    final = train_specter(config, callbacks=[Seen()])
    return {"final": final, "seen": Seen, "root": root}


@pytest.mark.slow
def test_released_run_uses_bert_adam_schedule_and_best_epoch(tiny_run):
    import json

    from sentence_transformers import SentenceTransformer

    assert type(tiny_run["seen"].optimizer).__name__ in {"BertAdam", "AcceleratedOptimizer"}
    inner = getattr(tiny_run["seen"].optimizer, "optimizer", tiny_run["seen"].optimizer)
    assert isinstance(inner, BertAdam)
    summary = json.loads((Path(tiny_run["final"]) / "specter_training.json").read_text())
    assert summary["results"]["best_step"] in (2, 4)  # one of the two epoch ends (2 steps per epoch)
    assert summary["derived"]["loss"] == "DropoutTripletLoss"
    model = SentenceTransformer(str(tiny_run["final"]))
    assert [type(m).__name__ for m in model] == ["Transformer", "Pooling"]  # no dropout module saved
    assert tiny_run["seen"].lrs[-1] == pytest.approx(3e-5 / 32)  # back down to lr / 32 at the end


def test_cli_recipe_released_and_spec_recipe():
    from specter_utils.cli import build_parser
    from specter_utils.commands.train import config_from_args
    from specter_utils.spec import load_spec

    argv = ["train", "--triplets", "T", "--metadata", "M", "--preset", "cpu", "--recipe", "released"]
    args = build_parser().parse_args(argv)
    config = config_from_args(args)
    assert (config.recipe, config.optimizer, config.best_by_val_loss) == ("released", "bert_adam", True)
    spec = load_spec("smoke", {"training.recipe": "released"})  # a run specification selects it the same way
    assert spec["training.recipe"] == "released"
