"""``mnrl-citation`` with ``cached_mini_batch``: the GradCache loss masks the same entries as the plain loss and
gives the same loss value and gradients (GradCache is exact up to float round-off)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from specter_utils.models import build_model
from specter_utils.training.cached_citation_mnrl import CachedCitationMaskedMNRL
from specter_utils.training.citation_mnrl import CitationMaskedMNRL, citation_links
from specter_utils.training.losses import build_loss

# q0 cites a0 and c1; p3 is a citation of a citation of q0; q2 cites q4 (so q4 is linked to q2 and back).
GRAPH = {"q0": {"a0": 5, "c1": 5, "p3": 1}, "q2": {"q4": 5, "a2": 5}, "q5": {"a5": 5}}
ROWS = [  # (query, positive, mined negative); the batch is every row, in this order
    ("q0", "a0", "n0"),
    ("q1", "c1", "n1"),  # c1, row 1's positive, is cited by q0: a false negative of q0
    ("q2", "a2", "n2"),
    ("q3", "p3", "n3"),  # p3 is q0's citation of a citation
    ("q4", "a4", "a2"),  # q4's mined negative a2 is q2's positive: masked for q2 (the query's own positive)
    ("q5", "a5", "q4"),  # q5's negative q4 is cited by q2, and is query 4 itself
]
SENTENCES = {
    pid: f"paper {pid} about topic {i % 3} with words {pid * 3}"
    for i, pid in enumerate(sorted({p for row in ROWS for p in row}))
}
EXPECTED_MASKED = {
    (0, 1),
    (0, 3),
    (2, 10),
    (2, 11),
    (4, 11),
}  # (query row, candidate column: positives 0-5, negatives 6-11)


def _features(model):
    return [model.preprocess([SENTENCES[row[k]] for row in ROWS]) for k in range(3)]


def _grads(model) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}


def _close(a: torch.Tensor, b: torch.Tensor, tolerance: float = 1e-4) -> bool:
    return float((a - b).norm()) <= tolerance * float(b.norm()) + 1e-7


def _run(loss, model) -> tuple[float, dict[str, torch.Tensor], set[tuple[int, int]]]:
    """Loss value, parameter gradients and the (query, candidate) entries scored -inf, over one batch."""
    model.zero_grad()
    masked: set[tuple[int, int]] = set()
    scorer, offset = loss.similarity_fct, [0]

    def recording(queries, candidates):
        scores = scorer(queries, candidates)
        masked.update((offset[0] + i, j) for i, j in torch.isinf(scores).nonzero().tolist())
        offset[0] += len(queries)
        return scores

    loss.similarity_fct = recording  # the cached loss hands this on to the loss it wraps
    value = loss(_features(model), torch.arange(len(ROWS)))
    value.backward()
    loss.similarity_fct = scorer
    return float(value.detach()), _grads(model), masked


@pytest.fixture(scope="module")
def model(random_tiny_model):
    torch.manual_seed(0)
    built = build_model(str(random_tiny_model), "mean", max_length=32)
    built.eval()  # no dropout: the plain and the cached pass see the same network
    return built


@pytest.mark.parametrize("mini_batch", [1, 4, 6])
def test_cached_loss_masks_the_same_entries_with_the_same_loss_and_gradients(model, mini_batch):
    links = citation_links(GRAPH)
    plain = CitationMaskedMNRL(model, ROWS, links)
    cached = CachedCitationMaskedMNRL(model, ROWS, links, mini_batch_size=mini_batch)
    plain_value, plain_grads, plain_masked = _run(plain, model)
    cached_value, cached_grads, cached_masked = _run(cached, model)

    assert plain_masked == EXPECTED_MASKED
    assert cached_masked == plain_masked
    assert cached.masked == plain.masked == len(EXPECTED_MASKED)
    assert cached.scored == plain.scored == len(ROWS) * (2 * len(ROWS) - 2)
    assert cached_value == pytest.approx(plain_value, rel=1e-5)
    assert plain_grads.keys() == cached_grads.keys() and plain_grads
    for name, grad in plain_grads.items():  # the same up to float32 round-off, relative to each tensor's size
        assert _close(cached_grads[name], grad), (name, float((cached_grads[name] - grad).abs().max()))


def test_the_mask_changes_the_cached_loss(model):
    """Without the citation links (or with the library's own cached loss) the value and gradients differ: the test
    above fails if the cached loss drops the mask."""
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

    masked_value, masked_grads, _ = _run(
        CachedCitationMaskedMNRL(model, ROWS, citation_links(GRAPH), mini_batch_size=4), model
    )
    for unmasked, kept in (
        (CachedCitationMaskedMNRL(model, ROWS, {}, mini_batch_size=4), {(2, 10), (4, 11)}),  # duplicates only
        (CachedMultipleNegativesRankingLoss(model, mini_batch_size=4), set()),
    ):
        value, grads, masked = _run(unmasked, model)
        assert masked == kept
        assert value != pytest.approx(masked_value, rel=1e-3)
        assert any(not _close(grads[name], grad, 1e-2) for name, grad in masked_grads.items())


def test_every_query_row_must_be_scored(model):
    """The mask is read block by block; a loss that skipped query rows would be an error, not a silent shift."""
    loss = CitationMaskedMNRL(model, ROWS, citation_links(GRAPH))
    with pytest.raises(RuntimeError, match="scored 0 of the citation mask's 6 query rows"):
        with loss.citation_mask(torch.arange(len(ROWS))):
            pass
    assert loss._mask is None


def test_build_loss_gives_the_cached_citation_loss_at_global_batches_256_to_1024(tmp_path, model):
    import json

    metadata = tmp_path / "metadata.json"
    metadata.write_text("{}")
    graph = {q: {c: {"count": n} for c, n in row.items()} for q, row in GRAPH.items()}
    (tmp_path / "data.json").write_text(json.dumps(graph))
    for batch in (256, 1024):
        config = SimpleNamespace(loss="mnrl-citation", metadata=str(metadata), mnrl_scale=20.0, cached_mini_batch=32)
        rows = [ROWS[i % len(ROWS)][:1] + (f"pos{i}", f"neg{i}") for i in range(batch)]
        rows[1] = ("q1", "c1", "n1")
        loss = build_loss(config, model, rows)
        assert isinstance(loss, CachedCitationMaskedMNRL) and loss.mini_batch_size == 32
        mask = loss.false_negative_mask(list(range(batch)))
        assert mask.shape == (batch, 2 * batch)
        # q0's rows (every 6th) mask c1 (row 1's positive), and nothing else: every other paper is new
        assert mask[0].nonzero().flatten().tolist() == [1]
        assert int(mask.sum()) == len(range(0, batch, len(ROWS)))
        config.cached_mini_batch = 0
        assert type(build_loss(config, model, rows)) is CitationMaskedMNRL
