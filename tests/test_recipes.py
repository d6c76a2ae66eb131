"""Training recipes: in-batch losses and the citation mask, pooling auto, WiSE-FT merging, SciNCL
sampling and the paired comparison of models over queries."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from specter_utils.data.records import Paper
from specter_utils.data.specter_format import SpecterData
from specter_utils.errors import DataError
from specter_utils.training.losses import CitationMaskedMNRL, citation_links

# --- the citation mask ---

GRAPH = {"q": {"a": 5, "b": 1}, "c": {"q": 5}, "x": {"y": 5}}  # q cites a; b is a citation of a citation; c cites q


def test_citation_links_cover_cites_cited_by_and_count_one_paths():
    links = citation_links(GRAPH)
    assert links["q"] == {"a", "b", "c"}  # cites a, reaches b, is cited by c
    assert "q" in links["a"] and "q" in links["c"]  # the reverse of a direct citation
    assert "q" not in links.get("b", set())  # a count-1 path is not a citation of b
    assert links["x"] == {"y"}


def _loss(rows):
    return CitationMaskedMNRL(torch.nn.Identity(), rows, citation_links(GRAPH), scale=20.0)


def test_mask_hits_linked_in_batch_papers_only():
    rows = [("q", "a", "n1"), ("r", "c", "b"), ("s", "t", "u")]
    mask = _loss(rows).false_negative_mask([0, 1, 2])
    # columns: positives a, c, t, then negatives n1, b, u
    assert mask[0].tolist() == [False, True, False, False, True, False]  # c cites q, b is q's count-1 paper
    assert not mask[1].any() and not mask[2].any()
    assert not mask[0, 0] and not mask[0, 3]  # the row's own positive and own mined negative stay


def test_masked_paper_contributes_no_gradient():
    torch.manual_seed(0)
    rows = [("q", "a", "n1"), ("r", "p2", "c"), ("s", "p3", "n3")]  # c (cites q) is row 1's mined negative
    loss = _loss(rows)
    queries, positives, negatives = (torch.randn(3, 8, requires_grad=True) for _ in range(3))
    loss._mask = loss.false_negative_mask([0, 1, 2])
    assert loss._mask[0, 4] and loss._mask.sum() == 1
    value = loss.compute_loss_from_embeddings([queries, positives, negatives], torch.arange(3))
    value.backward()
    # Row 1's negative c reaches query 0's softmax only through the masked entry, so query 0 gets no
    # gradient from c's direction: removing c from query 0's candidates gives the same gradient.
    reference_queries = queries.detach().clone().requires_grad_(True)
    scores = torch.nn.functional.cosine_similarity(
        reference_queries[0:1, None, :], torch.cat([positives, negatives]).detach()[None], dim=-1
    )[0]
    keep = torch.ones(6, dtype=torch.bool)
    keep[4] = False
    logits = 20.0 * scores[keep]
    (-(logits[0] - torch.logsumexp(logits, 0)) / 3).backward()
    assert torch.allclose(queries.grad[0], reference_queries.grad[0], atol=1e-6)
    # and the masked score's own gradient is exactly zero
    sims = torch.randn(3, 6, requires_grad=True)
    masked = sims.masked_fill(loss._mask, float("-inf"))
    torch.logsumexp(masked, dim=1).sum().backward()
    assert sims.grad[0, 4] == 0 and sims.grad[0, 0] != 0


def test_unmasked_loss_equals_library_mnrl():
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(1)
    rows = [("s1", "p1", "n1"), ("s2", "p2", "n2")]  # no links: nothing to mask
    embeddings = [torch.randn(2, 8) for _ in range(3)]
    ours = _loss(rows)
    ours._mask = ours.false_negative_mask([0, 1])
    library = MultipleNegativesRankingLoss(torch.nn.Identity(), scale=20.0)
    assert torch.allclose(
        ours.compute_loss_from_embeddings(embeddings, None), library.compute_loss_from_embeddings(embeddings, None)
    )


# --- pooling auto and WiSE-FT merging ---


@pytest.mark.slow
def test_pooling_auto_keeps_a_sentence_transformers_head_and_gives_plain_models_cls(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from specter_utils.models import resolve_model
    from specter_utils.training.train import describe_pooling, merge_with_base
    from specter_utils.training.train import specter_model as build_model

    minilm = build_model("minilm", "auto", 64)
    assert [type(m).__name__ for m in minilm] == ["Transformer", "Pooling", "Normalize"]
    assert minilm[1].pooling_mode == "mean" and minilm.max_seq_length == 64
    assert describe_pooling("minilm", "auto") == "mean+normalize (the base model's own)"
    plain = tmp_path / "plain"
    AutoModel.from_pretrained(resolve_model("minilm")).save_pretrained(plain)
    AutoTokenizer.from_pretrained(resolve_model("minilm")).save_pretrained(plain)
    cls = build_model(str(plain), "auto", 64)
    assert [type(m).__name__ for m in cls] == ["Transformer", "Pooling"] and cls[1].pooling_mode == "cls"
    assert describe_pooling(str(plain), "auto") == "cls"
    # WiSE-FT: alpha 0.5 is the average of the two weight sets
    trained = build_model(str(plain), "cls", 64)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(1.0)
    before = next(trained.parameters()).detach().clone()
    base_first = next(cls.parameters()).detach().clone()
    assert merge_with_base(trained, cls, 0.5) > 0
    assert torch.allclose(next(trained.parameters()), (before + base_first) / 2)


# --- SciNCL sampling ---


def test_bands_are_log_rescaled_and_a_small_graph_is_an_error():
    from specter_utils.triplets.scincl import ScinclConfig, rescale_rank, rescaled_bands

    assert rescale_rank(20, 52_600_000) == 20 and rescale_rank(3998, 100_000_000) == 3998
    positives, negatives = rescaled_bands(20_000)
    assert positives == (5, 10) and negatives == (101, 103)
    assert rescale_rank(20, 12_546) < rescale_rank(3998, 12_546)
    with pytest.raises(DataError, match=r"8 nodes with citations.*ranks up to 8"):
        rescaled_bands(8, ScinclConfig())


def _ring_data(n: int = 400) -> SpecterData:
    """Papers on a ring, each citing its 3 successors: graph neighbours are ring neighbours."""
    ids = [f"p{i:03d}" for i in range(n)]
    graph = {ids[i]: {ids[(i + k) % n]: 5 for k in (1, 2, 3)} for i in range(n)}
    metadata = {pid: Paper(paper_id=pid, title=f"paper {pid}", abstract="text") for pid in ids}
    return SpecterData(graph=graph, metadata=metadata, splits={"train": ids[:300], "val": ids[300:]})


def test_scincl_triplets_come_from_the_rescaled_bands():
    from specter_utils.triplets.scincl import ScinclConfig, graph_embedding, rescaled_bands, sample_scincl

    data = _ring_data()
    config = ScinclConfig(dim=16)
    nodes, vectors = graph_embedding(data, config.dim)
    triplets, metrics = sample_scincl(data, data.splits["train"], config, "train", (nodes, vectors))
    assert metrics["triplets"] == {"total": 1500, "hard": 600, "easy": 900}
    (p0, p1), (n0, n1) = rescaled_bands(len(nodes), config)
    assert metrics["positive_ranks"] == [p0, p1 - 1] and metrics["hard_negative_ranks"] == [n0, n1 - 1]

    def ring_distance(a: str, b: str) -> int:
        d = abs(int(a[1:]) - int(b[1:]))
        return min(d, 400 - d)

    # positives sit nearer the query on the ring than hard negatives do
    pos = np.mean([ring_distance(t.query, t.pos) for t in triplets])
    hard = np.mean([ring_distance(t.query, t.neg) for t in triplets if t.kind == "hard"])
    assert pos < hard
    assert all(t.query != t.pos and t.query != t.neg for t in triplets)


def test_mine_cli_scincl_and_option_errors(tmp_path, capsys):
    from specter_utils.cli import main
    from specter_utils.data.specter_format import write_specter_dir

    write_specter_dir(tmp_path / "train", _ring_data())
    assert (
        main(["mine", "--data-dir", str(tmp_path / "train"), "--out", str(tmp_path / "t"), "--strategy", "scincl"]) == 0
    )
    assert "kNN ranks" in capsys.readouterr().out
    assert sum(1 for _ in open(tmp_path / "t" / "train.jsonl")) == 1500
    metrics = json.loads((tmp_path / "t" / "metrics.json").read_text())
    assert metrics["strategy"] == "scincl"
    args = ["mine", "--data-dir", str(tmp_path / "train"), "--out", str(tmp_path / "u"), "--strategy", "scincl"]
    assert main([*args, "--no-hard-negatives"]) == 2
    assert "apply to the specter and spectroid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mine", "--data-dir", "x", "--out", "y", "--strategy", "nope"])


# --- paired comparison ---


def test_paired_test_finds_a_real_difference_and_not_noise():
    from specter_utils.evaluation.paired import paired_test

    rng = np.random.default_rng(0)
    base = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(40, 90, 300))}
    better = {q: v + 3.0 + rng.normal(0, 2) for q, v in base.items()}
    noise = {q: v + rng.normal(0, 2) for q, v in base.items()}
    test = paired_test(better, base, n_resamples=2000)
    assert test["p"] < 0.001 and 2.5 < test["ci_low"] < test["diff"] < test["ci_high"] < 3.5
    assert (
        paired_test(noise, base, n_resamples=2000)["ci_low"] < 0 < paired_test(noise, base, n_resamples=2000)["ci_high"]
    )
    with pytest.raises(ValueError, match="at least 2 common"):
        paired_test({"a": 1.0}, {"b": 2.0})


def test_compare_rows_averages_seeds_per_query():
    from specter_utils.evaluation.paired import RowScores, compare_rows, render_comparison

    base = RowScores("base", ["b"], [{"cite": {"q1": 50.0, "q2": 70.0, "q3": 60.0}}])
    model = RowScores(
        "model",
        ["s0", "s1"],
        [{"cite": {"q1": 52.0, "q2": 74.0, "q3": 61.0}}, {"cite": {"q1": 54.0, "q2": 72.0, "q3": 63.0}}],
    )
    result = compare_rows([base, model], ["base"], ["cite"], n_resamples=200)
    cite = result["rows"]["model"]["tasks"]["cite"]
    assert cite["map_per_seed"] == [62.33, 63.0] and cite["map_sd"] == pytest.approx(np.std([187 / 3, 63.0], ddof=1))
    assert cite["versus"]["base"]["diff"] == pytest.approx((3 + 3 + 2) / 3)
    table = render_comparison(result)
    assert "| model | 2 | 62.67 ± 0.47 |" in table


@pytest.mark.slow
def test_compare_cli_matches_evaluate_and_reports_bad_input(tmp_path, capsys):
    from specter_utils.cli import main
    from specter_utils.data.scidocs import write_qrel
    from specter_utils.embedding.io import EmbeddingSet, write_embeddings
    from specter_utils.evaluation.ranking import evaluate_ranking

    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(60)]
    qrels = {f"p{q}": {f"p{10 + q * 5 + k}": int(k < 2) for k in range(5)} for q in range(10)}
    (tmp_path / "cite").mkdir()
    write_qrel(tmp_path / "cite" / "test.qrel", qrels)
    files = []
    for seed in range(2):
        vectors = np.random.default_rng(seed).normal(size=(60, 8)).astype(np.float32)
        embeddings = EmbeddingSet(ids=ids, vectors=vectors, info={})
        write_embeddings(tmp_path / f"e{seed}.jsonl", embeddings)
        files.append(str(tmp_path / f"e{seed}.jsonl"))
    expected = evaluate_ranking(
        qrels, EmbeddingSet(ids=ids, vectors=np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32), info={})
    )
    out = tmp_path / "cmp.json"
    argv = ["compare", "--data-dir", str(tmp_path), "--tasks", "cite", "--row", "a", files[0], "--row", "b", *files]
    assert main([*argv, "--out", str(out), "--resamples", "200"]) == 0
    result = json.loads(out.read_text())
    assert round(result["rows"]["a"]["tasks"]["cite"]["map_mean"], 2) == expected.metrics["map"]
    assert result["rows"]["b"]["seeds"] == 2
    capsys.readouterr()
    assert main(["compare", "--data-dir", str(tmp_path), "--tasks", "cite", "--row", "a", "nope.jsonl"]) == 2
    assert "not found" in capsys.readouterr().err
    assert main([*argv, "--reference", "zzz"]) == 2
    assert main(["compare", "--data-dir", str(tmp_path), "--tasks", "cocite", "--row", "a", files[0]]) == 2
    del rng
