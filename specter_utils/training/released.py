"""Pieces of the released AllenNLP SPECTER training code, for ``--recipe released`` (docs/recipes.md).

Each piece is small, has its own test (``tests/test_released_recipe.py``) and is switched on by a
``TrainConfig`` field, so the recipe is a set of values rather than a second training loop:

- :class:`BertAdam` (``optimizer="bert_adam"``): Adam without bias correction, eps 1e-6, weight decay
  added to the update (BERT's), and each parameter tensor's gradient clipped to norm ``max_grad_norm``
  inside the step (``pytorch_pretrained_bert.BertAdam``, which AllenNLP registers as ``bert_adam``);
- :func:`slanted_triangular` (``lr_schedule="slanted_triangular"``): AllenNLP's schedule, from lr/ratio up
  to lr over the first ``cut_frac`` of the steps and back down to lr/ratio;
- :class:`GradientValueClipping` (``grad_value_clip``): AllenNLP's ``grad_clipping``, a backward hook on
  every parameter that clamps each gradient value;
- :class:`DropoutTripletLoss` (``embedding_dropout``): dropout on the paper embeddings before the triplet
  loss, active only while the model trains; it lives in the loss, so the saved model has no such module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import torch
from sentence_transformers.sentence_transformer.losses import TripletDistanceMetric, TripletLoss
from torch import Tensor
from transformers import TrainerCallback

BERT_ADAM_EPS = 1e-6  # pytorch_pretrained_bert's default, which the released config keeps


class BertAdam(torch.optim.Optimizer):
    """Adam as BERT's original code has it: no bias correction, weight decay added to the update.

    Per tensor ``p`` with gradient ``g`` (after clipping ``g`` to norm ``max_grad_norm``)::

        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        p -= lr (m / (sqrt(v) + eps) + weight_decay p)

    Without bias correction the first steps are smaller than Adam's (m and v start at 0): at step 1 the
    update is ``(1 - b1) / sqrt(1 - b2) = 3.16`` times the sign of ``g``, not 1.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 3e-5,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = BERT_ADAM_EPS,
        weight_decay: float = 0.01,
        max_grad_norm: float = 1.0,
    ) -> None:
        if lr <= 0 or eps <= 0 or weight_decay < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"BertAdam: invalid lr={lr}, betas={betas}, eps={eps} or weight_decay={weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "max_grad_norm": max_grad_norm}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("BertAdam does not support sparse gradients")
                if group["max_grad_norm"] and group["max_grad_norm"] > 0:
                    torch.nn.utils.clip_grad_norm_(p, group["max_grad_norm"])  # per tensor, as the original
                grad = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["next_m"] = torch.zeros_like(p)
                    state["next_v"] = torch.zeros_like(p)
                next_m, next_v = state["next_m"], state["next_v"]
                next_m.mul_(beta1).add_(grad, alpha=1 - beta1)
                next_v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = next_m / (next_v.sqrt() + group["eps"])
                if group["weight_decay"] > 0.0:
                    update = update + group["weight_decay"] * p
                p.add_(update, alpha=-group["lr"])
                state["step"] += 1
        return loss


def slanted_triangular(step: int, total_steps: int, cut_frac: float = 0.1, ratio: float = 32.0) -> float:
    """The learning-rate multiplier of AllenNLP's ``slanted_triangular`` schedule at ``step`` (0-based):
    ``cut = floor(total_steps x cut_frac)``; the multiplier rises linearly from ``1 / ratio`` at step 0 to 1
    at ``cut``, then falls linearly back to ``1 / ratio`` at ``total_steps``.
    """
    cut = max(int(total_steps * cut_frac), 1)
    if step < cut:
        proportion = step / cut
    else:
        proportion = max(1.0 - (step - cut) / max(total_steps - cut, 1), 0.0)
    return (1.0 + proportion * (ratio - 1.0)) / ratio


def slanted_triangular_scheduler(optimizer, total_steps: int, cut_frac: float = 0.1, ratio: float = 32.0):
    """A ``LambdaLR`` following :func:`slanted_triangular` (the trainer steps it once per optimiser step)."""
    rule = functools.partial(slanted_triangular, total_steps=total_steps, cut_frac=cut_frac, ratio=ratio)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, rule)


def clamp_gradient_values(parameters: Iterable[torch.nn.Parameter], limit: float) -> list[Any]:
    """AllenNLP's ``grad_clipping``: a hook on each parameter clamping its gradient to ``[-limit, limit]``; returns
    the hook handles (``handle.remove()`` takes a hook off)."""
    return [
        p.register_hook(functools.partial(torch.clamp, min=-limit, max=limit)) for p in parameters if p.requires_grad
    ]


class GradientValueClipping(TrainerCallback):
    """Put :func:`clamp_gradient_values` hooks on the model at train start; take them off at the end."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.handles: list[Any] = []

    def on_train_begin(self, args, state, control, model=None, **kwargs) -> None:
        self.handles = clamp_gradient_values(model.parameters(), self.limit)

    def on_train_end(self, args, state, control, **kwargs) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []


class DropoutTripletLoss(TripletLoss):
    """``TripletLoss`` with dropout (probability ``p``) on the query, positive and negative embeddings, active only
    while the model trains; being part of the loss, it never reaches the saved inference model."""

    def __init__(
        self,
        model: Any,
        p: float = 0.5,
        distance_metric: Any = TripletDistanceMetric.EUCLIDEAN,
        triplet_margin: float = 1.0,
    ) -> None:
        super().__init__(model, distance_metric=distance_metric, triplet_margin=triplet_margin)
        self.p = p

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        training = bool(getattr(self.model, "training", False))
        dropped = [torch.nn.functional.dropout(e, self.p, training=training) for e in embeddings]
        return super().compute_loss_from_embeddings(dropped, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "embedding_dropout": self.p}
