"""The one embedding specification (config.EmbedConfig): one default per value, one pooling spelling, the file keys
read from it, the embedding path taking it whole; mine and build-benchmark resolved through the specification's
layers."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from specter_utils import spec as run_spec
from specter_utils.cli import build_parser, main
from specter_utils.config import EmbedConfig
from specter_utils.errors import DataError
from specter_utils.vocabularies import canonical_pooling

PACKAGE = Path(__file__).resolve().parent.parent / "specter_utils"
MAX_PARAMETERS = 8
EMBEDDING_PATH = ("embed_papers", "embed_to_file", "embed_with_ray", "embed_file", "load_backend", "load_model")


def parameter_counts() -> dict[str, int]:
    """Every function of the package by name with its parameter count (``self``/``cls`` not counted)."""
    counts: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)
                counts[node.name] = max(count, counts.get(node.name, 0))
    return counts


def test_the_embedding_path_takes_the_specification_whole() -> None:
    """The functions that embed take the EmbedConfig, not its fields one by one (tests/test_architecture.py holds
    every function of the package to the same limit)."""
    counts = parameter_counts()
    for name in EMBEDDING_PATH:
        assert counts[name] <= MAX_PARAMETERS, f"{name} takes {counts[name]} parameters"


def test_pooling_has_one_spelling() -> None:
    for spelling in (None, "", "auto", "model", "AUTO"):
        assert canonical_pooling(spelling) == "auto"
    assert canonical_pooling("CLS") == "cls" and canonical_pooling("mean") == "mean"
    with pytest.raises(DataError, match="pooling must be one of"):
        canonical_pooling("max")
    assert EmbedConfig(pooling="model").pooling == "auto"  # a recorded pooling passed back as written


def test_the_specification_is_frozen_and_checked() -> None:
    spec = EmbedConfig(dtype="float32", max_length=64)
    assert spec.dtype == "fp32" and spec.torch_dtype == "float32" and spec.torch_device is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.max_length = 128  # type: ignore[misc]
    with pytest.raises(DataError, match="embedding.max_length must be at least 2"):
        EmbedConfig(max_length=1)
    assert spec.but(max_length=None, device="cpu") == dataclasses.replace(spec, device="cpu")


def test_one_default_length_everywhere() -> None:
    """embed's flag, evaluate --model without a length, api.load_model and the run's section share one length."""
    from specter_utils import api
    from specter_utils.evaluation.model_eval import evaluation_length

    default = EmbedConfig().max_length
    embed_args = build_parser().parse_args(["embed", "--metadata", "m.json", "--out", "o.jsonl"])
    assert embed_args.max_length == default and embed_args.pooling == EmbedConfig().pooling
    assert evaluation_length({"max_seq_length": 256}, None)[0] == default  # the model's own 256 is not the default
    assert evaluation_length({}, 64) == (64, "given")
    assert api.load_model.__defaults__[:2] == (EmbedConfig().model, None)  # None: the specification's length
    assert run_spec.DEFAULTS["embedding.max_length"] == default


def test_max_length_and_pooling_are_defaulted_once() -> None:
    """No function signature restates a default length or pooling: they come from the specification."""
    pattern = re.compile(r"(max_length: int(?: \| None)? = (?!None)|pooling: str(?: \| None)? = (?!None))")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and "= setting(" not in line  # a setting's declaration is the one default
    ]
    assert offenders == [], offenders


def test_file_keys_live_on_the_specification() -> None:
    from specter_utils.embedding import embed, shards
    from specter_utils.search import vectors
    from specter_utils.workflow import embed as embed_stage

    keys = set(EmbedConfig.FILE_KEYS)
    assert set(embed._RUN_KEYS) < keys and set(shards.SETTINGS) < keys and set(embed_stage.EMBEDDING_INFO) < keys
    assert set(vectors.VECTOR_KEYS) - {"dim"} < keys
    with pytest.raises(KeyError, match="not a key"):
        EmbedConfig.file_keys("colour")


def test_mine_and_build_benchmark_resolve_through_the_layers(tmp_path, monkeypatch, capsys) -> None:
    mining = run_spec.section_config("mining", strategy="spectroid", seed=3)
    assert mining.strategy == "spectroid" and mining.seed == 3
    file = tmp_path / "mine.yaml"
    file.write_text("mining:\n  triplets_per_query: 7\n")
    assert run_spec.section_config("mining", file).triplets_per_query == 7
    assert run_spec.section_config("mining", file, triplets_per_query=2).triplets_per_query == 2
    with pytest.raises(DataError, match="override"):
        run_spec.section_config("mining", hard_ratio=2.0)
    assert run_spec.section_config("data", src=tmp_path).src == str(tmp_path)  # a path flag, as a string setting
    embedding = run_spec.section_config("embedding", model="m", max_length=64)
    assert embedding == EmbedConfig(model="m", max_length=64)

    called: list[tuple] = []

    def resolved(section, *args, **kwargs):
        called.append((section, kwargs))
        raise DataError("resolved through the layers")

    monkeypatch.setattr(run_spec, "section_config", resolved)
    assert main(["mine", "--data-dir", str(tmp_path), "--out", str(tmp_path / "m"), "--strategy", "spectroid"]) != 0
    assert main(["build-benchmark", "--out", str(tmp_path / "b"), "--n-queries", "7"]) != 0
    assert "resolved through the layers" in capsys.readouterr().err
    assert called == [("mining", {"strategy": "spectroid"}), ("data", {"n_queries": 7})]


def test_api_and_embed_command_give_the_same_vectors(tmp_path) -> None:
    """The same settings give the same vectors through api.embed and the embed command (MiniLM, 32 wordpieces)."""
    import json

    from specter_utils import api
    from specter_utils.embedding.io import read_embeddings

    papers = [
        {"paper_id": f"p{i}", "title": f"Paper {i} on strings", "abstract": "branes and dualities " * (i + 1)}
        for i in range(5)
    ]
    metadata = tmp_path / "metadata.json"
    metadata.write_text(json.dumps({p["paper_id"]: p for p in papers}))
    out = tmp_path / "out.jsonl"
    args = ["--max-length", "32", "--device", "cpu", "--backend", "torch", "--quiet"]
    assert main(["embed", "--metadata", str(metadata), "--out", str(out), *args]) == 0
    written = read_embeddings(out)
    from_api = api.embed(papers, api.load_model(EmbedConfig(max_length=32, device="cpu")))
    vectors, _ = written.lookup(from_api.ids)
    np.testing.assert_allclose(vectors, from_api.vectors, atol=1e-6)
    assert written.info["max_length"] == from_api.info["max_length"] == 32
    assert written.info["pooling"] == from_api.info["pooling"]
