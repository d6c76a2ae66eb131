"""The registries: a toy loss, a toy backend and a toy ranking task, each registered once, are built, used and
named wherever users see names (a setting's choices, --help, table and figure labels)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from specter_utils import train_config, vocabularies
from specter_utils.backend_kinds import BACKEND_REGISTRY, BACKENDS, BackendSpec, register_backend
from specter_utils.data.records import Paper
from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.loss_kinds import LOSS_REGISTRY, LossSpec, register_loss
from specter_utils.registry import Registry
from specter_utils.tasks import BY_NAME, RANKING, TASKS


def test_registry_get_names_and_errors():
    registry: Registry[int] = Registry("thing")
    registry.register("one", 1)

    @registry.register("two")
    def two() -> int:
        return 2

    assert registry.get("two") is two and list(registry.names()) == ["one", "two"]
    with pytest.raises(DataError, match=r"unknown thing 'three' \(known: one, two\)"):
        registry.get("three")
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("one", 3)


# ---------------------------------------------------------------- a toy loss
def _toy_loss(model, cfg, **_):
    """Squared L2 between each anchor and its positive: the smallest loss a SentenceTransformer trainer accepts."""
    import torch

    class ToyLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, sentence_features, labels=None):
            anchor, positive = (self.model(f)["sentence_embedding"] for f in sentence_features[:2])
            return ((anchor - positive) ** 2).sum(dim=1).mean()

    return ToyLoss()


@pytest.fixture
def toy_loss():
    spec = register_loss(LossSpec("toy-l2", "a toy L2 loss", "toy L2 (margin {margin:g})", _toy_loss, in_batch=True))
    yield spec
    LOSS_REGISTRY.unregister("toy-l2")


def test_toy_loss_is_a_choice_and_a_label(toy_loss):
    from specter_utils.commands.train import add_config_arguments
    from specter_utils.presentation.figures import loss_axis
    from specter_utils.presentation.interpret import loss_description

    assert "toy-l2" in vocabularies.LOSSES and "toy-l2" in vocabularies.IN_BATCH_LOSSES
    paths = {"triplets": "t", "metadata": "m.json", "out": "o"}
    train_config.TrainConfig(loss="toy-l2", **paths).validate()
    with pytest.raises(DataError, match="uses the other papers of a batch"):  # declared in-batch: a batch of 1
        train_config.TrainConfig(loss="toy-l2", batch_size=1, **paths).validate()
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert "toy-l2" in parser.format_help()
    assert loss_description({"config": {"loss": "toy-l2"}}) == "a toy L2 loss"
    assert loss_axis({"loss": "toy-l2", "triplet_margin": 2}) == "toy L2 (margin 2)"


def test_unknown_loss_is_refused_naming_the_known_ones():
    with pytest.raises(DataError, match="one of triplet, mnrl, mnrl-citation, gist"):
        train_config.TrainConfig(loss="nope").validate()
    from specter_utils.training.losses import build_loss

    with pytest.raises(DataError, match=r"unknown loss 'nope' \(known: triplet, mnrl, mnrl-citation, gist\)"):
        build_loss(SimpleNamespace(loss="nope"), model=None, row_papers=[])


def test_toy_loss_builds_and_computes_a_loss(toy_loss):
    import torch

    from specter_utils.training.losses import build_loss

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)

        def forward(self, features):
            return {"sentence_embedding": self.embed(features["input_ids"]).mean(dim=1)}

    torch.manual_seed(0)
    model = Tiny()
    loss = build_loss(train_config.TrainConfig(loss="toy-l2"), model, row_papers=[])
    batch = [{"input_ids": torch.tensor([[1, 2], [3, 4]])}, {"input_ids": torch.tensor([[5, 6], [7, 8]])}]
    value = loss(batch)
    value.backward()
    assert value.item() > 0 and model.embed.weight.grad is not None
    same = [{"input_ids": torch.tensor([[1, 2]])}, {"input_ids": torch.tensor([[1, 2]])}]
    assert loss(same).item() == 0.0


# ---------------------------------------------------------------- a toy backend
class FakeEncoder(Encoder):
    """Vectors from the text's length and word count: no model, no tokenizer."""

    sep = " | "
    dim = 2

    def token_lengths(self, texts, batch=2048):
        return np.asarray([len(text.split()) for text in texts])

    def encode(self, texts, batch_size, pool=None):
        return np.asarray([[len(text), len(text.split())] for text in texts], dtype=np.float32)

    def info(self):
        return {"model": self.model_name, "backend": "toy"}


def _fake_factory(choice, **_):
    spec = choice.spec
    return FakeEncoder(None, spec.model, spec.model, "none", "none", spec.max_length, "cpu", "float32"), {"toy": True}


@pytest.fixture
def toy_backend():
    register_backend(
        BackendSpec("toy", "a fake encoder", lambda choice, devices: choice.spec.backend == "toy", _fake_factory)
    )
    yield
    BACKEND_REGISTRY.unregister("toy")


def test_toy_backend_is_chosen_by_name_and_embeds(toy_backend):
    from specter_utils.commands import embed as embed_command
    from specter_utils.config import EmbedConfig
    from specter_utils.embedding.backends import BackendChoice, backend_name, load_backend
    from specter_utils.embedding.embed import embed_papers

    assert "toy" in BACKENDS and list(BACKENDS)[:3] == ["auto", "torch", "openvino"]
    subparsers = argparse.ArgumentParser().add_subparsers()
    embed_command.register(subparsers)
    help_text = subparsers.choices["embed"].format_help()
    assert "toy: a fake encoder" in " ".join(help_text.split())
    choice = BackendChoice(EmbedConfig(model="fake-model", backend="toy"))
    assert backend_name(choice) == "toy" and backend_name(BackendChoice(EmbedConfig(backend="torch"))) == "torch"
    encoder, meta = load_backend(choice, {})
    assert meta == {"toy": True}
    papers = [Paper("p1", "a title", "one two three"), Paper("p2", "b", "")]
    result = embed_papers(encoder, papers, batch_size=2, progress=False)
    assert result.ids == ["p1", "p2"]
    np.testing.assert_array_equal(result.vectors, [[len("a title | one two three"), 6], [len("b | "), 2]])


# ---------------------------------------------------------------- a toy ranking task
def test_toy_ranking_task_is_declared_and_scored(tmp_path):
    from specter_utils.evaluation.suite import KINDS

    toy = replace(BY_NAME["cite"], name="toy-cite", key="toy cite", label="toy cite", paper={})  # one declaration
    assert toy.kind == RANKING and toy.headers == ("toy cite MAP", "toy cite nDCG") and toy.main_score == "map"
    assert {task.kind for task in TASKS} <= set(KINDS.names())
    qrels = {"q": {"a": 1, "b": 0}}
    data = SimpleNamespace(root=tmp_path, ranking={toy.name: {"test": qrels}})
    good = EmbeddingSet(["q", "a", "b"], np.asarray([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0]]))
    bad = EmbeddingSet(["q", "a", "b"], np.asarray([[0.0, 0.0], [5.0, 0.0], [1.0, 0.0]]))
    score = KINDS.get(toy.kind)
    assert score(data, [toy.name], "test", {toy.name: good}, {})[toy.name][0]["map"] == 100.0
    assert score(data, [toy.name], "test", {toy.name: bad}, {})[toy.name][0]["map"] == 50.0
