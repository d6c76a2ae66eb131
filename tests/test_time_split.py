"""Table 1 under a time split (notebook 05, ``evaluation.time_split``) and the sentences on the gain that remains
under matched negatives and under the time split."""

from __future__ import annotations

import json

import pytest

from specter_utils.evaluation.deltas import Delta
from specter_utils.presentation.structure import gain_sentences, time_split_sentences
from specter_utils.runs import RunPaths
from specter_utils.spec import load_spec
from specter_utils.workflow import time_split as ts


def _delta(task: str, diff: float, low: float, high: float, n: int = 40) -> dict:
    return Delta("trained", "base", task, "MAP", diff, low, high, 0.01, n).as_dict()


def test_the_share_of_the_gain_is_given_only_where_a_gain_is_shown() -> None:
    shown = gain_sentences([_delta("cite", 4.0, 2.0, 6.0), _delta("cite (matched)", 3.0, 1.0, 5.0)])
    assert shown == [
        "- cite: trained - base +4.00 [+2.00, +6.00] MAP under random negatives, +3.00 [+1.00, +5.00] under matched "
        "negatives: 75% of the gain remains where popularity cannot help; the matched-negative interval excludes 0 "
        "(40 queries)."
    ]
    (none,) = gain_sentences([_delta("co-cite", 0.5, -1.0, 2.0), _delta("co-cite (matched)", 0.4, -0.9, 1.7)])
    assert "no share of it is given" in none and "%" not in none and "no difference is shown" in none
    (larger,) = gain_sentences([_delta("co-cite", 4.0, 2.0, 6.0), _delta("co-cite (matched)", 5.0, 3.0, 7.0)])
    assert "no loss of the gain" in larger and "125%" in larger and "remains" not in larger  # not read as growth
    assert gain_sentences([_delta("cite", 4.0, 2.0, 6.0)]) == []  # no matched version: nothing to set beside it
    other = Delta("tfidf-svd", "base", "cite", "MAP", 1.0, 0.5, 1.5).as_dict()
    assert gain_sentences([other, _delta("cite (matched)", 3.0, 1.0, 5.0)]) == []  # only trained vs base


def test_time_split_sentences_name_the_cutoff_and_set_the_random_split_beside() -> None:
    made = {"split": {"cutoff_year": 1999, "cite_test_queries": 120, "cocite_test_queries": 118}, "triplets": 5000}
    split = {"made": made, "results": {}, "deltas": [_delta("cite", 2.0, 1.0, 3.0)]}
    text = time_split_sentences(split, [_delta("cite", 4.0, 3.0, 5.0)])
    assert text.splitlines()[0] == (
        "Queries published in 1999 or later (120 cite, 118 co-cite test queries), the recipe retrained on 5000 "
        "triplets from papers published before 1999 only:"
    )
    assert (
        "- cite: trained - base +2.00 [+1.00, +3.00] under the time split, +4.00 [+3.00, +5.00] under the random split."
        in text
    )


@pytest.fixture(scope="module")
def smoke_time_split(tmp_path_factory, random_tiny_model):
    # what is asserted is the split, the leakage audit and Table 1's rows, not a score: the tiny random model trains
    overrides = {"evaluation.time_split": True, "embedding.baselines": ["random"]}
    spec = load_spec("smoke").with_overrides({**overrides, "training.base_model": str(random_tiny_model)})
    paths = RunPaths.of(tmp_path_factory.mktemp("time_split") / "run")
    return spec, paths, ts.time_split_table(spec, paths, progress=lambda _: None)


def test_the_time_split_trains_on_earlier_papers_and_scores_table1_with_its_controls(smoke_time_split) -> None:
    spec, paths, split = smoke_time_split
    made = split["made"]
    cutoff = made["split"]["cutoff_year"]
    assert made["split"]["split_by"] == "date" and isinstance(cutoff, int) and made["leakage"]["leak_free"]
    root = ts.time_split_paths(paths)
    assert root.run_dir == paths.notebook_dir("05_scidocs_eval") / "time_split"
    # no paper from the cutoff on is in training, nor in a triplet the model trained on
    later = set((root.benchmark_dir / "later_papers.txt").read_text().split())
    metadata = json.loads((root.train_data_dir / "metadata.json").read_text())
    assert later and metadata and not later & set(metadata)
    assert made["leakage"]["later_overlap"] == 0
    assert {"trained", "base", "random", "bm25", "in-degree", "year"} <= set(split["results"])
    tasks = {(d["row"], d["reference"], d["task"]) for d in split["deltas"]}
    for task in ("cite", "co-cite", "cite (matched)", "co-cite (matched)"):
        assert ("trained", "base", task) in tasks, task
    assert 0 < made["triplets"] <= spec["training.max_triplets"]


def test_the_time_split_is_made_once_and_reused_while_its_settings_hold(smoke_time_split, monkeypatch) -> None:
    spec, paths, _ = smoke_time_split

    def fail(*_args, **_kwargs):
        raise AssertionError("made again")

    monkeypatch.setattr(ts, "train", fail)
    again = ts.time_split_table(spec.with_overrides({"evaluation.rankers": ["bm25"]}), paths)
    assert again["made"]["reused"].endswith("row.json")  # scoring settings do not remake it
    assert set(again["results"]) == {"trained", "base", "random", "bm25"}
    with pytest.raises(AssertionError, match="made again"):  # a training setting does
        ts.time_split_table(spec.with_overrides({"training.learning_rate": 1e-4}), paths, progress=lambda _: None)


def test_a_corpus_without_years_refuses_the_time_split_in_notebook_01(tmp_path) -> None:
    from specter_utils.errors import DataError
    from specter_utils.workflow.prepare import prepare

    spec = load_spec("demo").with_overrides({"evaluation.time_split": True})  # the bundled CiteSeer: no years
    with pytest.raises(DataError, match="evaluation.time_split needs them"):
        prepare(spec, tmp_path / "benchmark")
    assert not (tmp_path / "benchmark").exists()  # refused before anything was built
