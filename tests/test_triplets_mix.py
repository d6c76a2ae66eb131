"""``mining.scincl_fraction``: SciNCL neighbourhood triplets mixed with the citation sampler's, seeded."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from specter_utils.data.records import Paper
from specter_utils.data.specter_format import SpecterData, write_specter_dir
from specter_utils.errors import DataError
from specter_utils.spec import load_spec
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.io import read_triplets
from specter_utils.triplets.mix import cap_queries, mix_split
from specter_utils.triplets.sampler import mine_dir
from specter_utils.triplets.scincl import ScinclConfig, mine_scincl_dir
from specter_utils.workflow.mine import mine_triplets


def _ring(n: int = 400) -> SpecterData:
    """Papers on a ring, each citing its 3 successors (count 5) and reaching the next 2 through them (count 1)."""
    ids = [f"p{i:03d}" for i in range(n)]
    graph = {ids[i]: {ids[(i + k) % n]: 5 if k <= 3 else 1 for k in (1, 2, 3, 4, 5)} for i in range(n)}
    metadata = {pid: Paper(paper_id=pid, title=f"paper {pid}", abstract="text") for pid in ids}
    return SpecterData(graph=graph, metadata=metadata, splits={"train": ids[:300], "val": ids[300:]})


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    """The ring's training dir, and the citation sampler's and SciNCL's own triplets of it."""
    root = tmp_path_factory.mktemp("mix")
    write_specter_dir(root / "train", _ring())
    mine_dir(root / "train", root / "citation", SamplerConfig(seed=3))
    mine_scincl_dir(root / "train", root / "scincl", ScinclConfig(seed=3))
    return root


def _per_query(path) -> dict[str, list]:
    grouped = defaultdict(list)
    for t in read_triplets(path):
        grouped[t.query].append(t)
    return grouped


def _mine(root, name: str, **settings):
    metrics = mine_triplets(SamplerConfig(**settings), root / "train", root / name)
    return metrics, _per_query(root / name / "train.jsonl")


def test_each_query_takes_one_samplers_triplets_in_the_fractions_share(mined):
    citation, scincl = _per_query(mined / "citation" / "train.jsonl"), _per_query(mined / "scincl" / "train.jsonl")
    assert set(citation) == set(scincl) and len(citation) == 300  # both serve every train query
    metrics, mixed = _mine(mined, "half", scincl_fraction=0.5, seed=3)
    from_scincl = {q for q, triplets in mixed.items() if triplets == scincl[q]}
    from_citation = {q for q, triplets in mixed.items() if triplets == citation[q]}
    assert from_scincl.isdisjoint(from_citation) and from_scincl | from_citation == set(citation)
    assert len(from_scincl) == 150
    mix = metrics["train"]["mix"]
    assert mix["queries_scincl"] == 150 and mix["queries_citation"] == 150 and mix["scincl_share"] == 0.5
    assert metrics["train"]["triplets"]["total"] == sum(len(t) for t in mixed.values()) == 1500
    assert metrics["val"]["mix"]["queries_scincl"] == 50  # the validation triplets are mixed the same way
    # seeded: the same seed chooses the same queries, another seed others
    assert _mine(mined, "half_again", scincl_fraction=0.5, seed=3)[1] == mixed
    other, scincl_seed4 = _mine(mined, "half_seed4", scincl_fraction=0.5, seed=4)[1], _mine_scincl(mined, 4)
    chosen_seed4 = {q for q, t in other.items() if t == scincl_seed4[q]}
    assert len(chosen_seed4) == 150 and chosen_seed4 != from_scincl


def _mine_scincl(root, seed: int):
    mine_scincl_dir(root / "train", root / f"scincl{seed}", ScinclConfig(seed=seed))
    return _per_query(root / f"scincl{seed}" / "train.jsonl")


def test_fraction_0_is_the_citation_sampler_and_1_is_scincl_wherever_it_serves(mined):
    citation, scincl = _per_query(mined / "citation" / "train.jsonl"), _per_query(mined / "scincl" / "train.jsonl")
    assert _mine(mined, "zero", seed=3)[1] == citation
    assert _mine(mined, "all", scincl_fraction=1.0, seed=3)[1] == scincl
    # mix_split itself at 0: the citation triplets, in their order
    flat = [t for q in citation for t in citation[q]]
    assert mix_split(flat, [t for q in scincl for t in scincl[q]], 0.0, np.random.default_rng(0))[0] == flat


def test_the_cap_keeps_whole_random_queries(mined):
    metrics, capped = _mine(mined, "capped", scincl_fraction=0.5, max_triplets=203, seed=3)
    assert sum(len(t) for t in capped.values()) == 203 and metrics["train"]["mix"]["capped_from"] == 1500
    assert sum(len(t) != 5 for t in capped.values()) <= 1  # only the last query is cut to fill the cap
    flat = [t for q in sorted(capped) for t in capped[q]]
    assert cap_queries(flat, 0, np.random.default_rng(0)) == flat


def test_bad_settings_and_the_specification_key(mined, tmp_path):
    with pytest.raises(DataError, match="scincl_fraction must be in"):
        SamplerConfig(scincl_fraction=1.5)
    with pytest.raises(DataError, match="strategy is scincl"):
        SamplerConfig(strategy="scincl", scincl_fraction=0.5)
    assert load_spec("smoke", {"mining.scincl_fraction": 0.25}).mining.scincl_fraction == 0.25
    from specter_utils.cli import main

    out = tmp_path / "cli"
    assert main(["mine", "--data-dir", str(mined / "train"), "--out", str(out), "--scincl-fraction", "0.5"]) == 0
    assert json.loads((out / "metrics.json").read_text())["train"]["mix"]["queries_scincl"] == 150
