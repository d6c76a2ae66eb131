"""The sweep runner (``workflow.sweep``): variants x seeds made once, resumed from either row store, and paired."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.evaluation.paired import compare_rows
from specter_utils.spec import load_spec
from specter_utils.workflow.ablations import ABLATIONS, REFERENCE, ablation_rows, ablation_settings, ablation_spec
from specter_utils.workflow.sweep import (
    ROW_FILE,
    RowFolders,
    RowLines,
    SweepRow,
    paired_deltas,
    read_rows,
    run_sweep,
    scored_records,
    variant_rows,
)

VARIANTS = {"reference": {}, "lr": {"training.learning_rate": 1e-4}}


def _maker(tmp_path, made):
    def make(row: SweepRow) -> dict:
        made.append((row.name, row.seed))
        embeddings = tmp_path / "emb" / f"{row.name}{row.seed}.jsonl"
        embeddings.parent.mkdir(exist_ok=True)
        embeddings.write_text("{}\n")
        return {
            "name": row.name,
            "seed": row.seed,
            "embedding_file": str(embeddings),
            "lr": row.spec.training.learning_rate,
        }

    return make


def test_rows_are_resolved_variant_by_variant():
    spec = load_spec("smoke")
    rows = variant_rows(spec, VARIANTS, [0, 1])
    assert [(r.name, r.seed) for r in rows] == [("reference", 0), ("reference", 1), ("lr", 0), ("lr", 1)]
    assert (
        rows[3].spec.seed == 1 and rows[3].spec.training.learning_rate == 1e-4 and rows[3].overrides == VARIANTS["lr"]
    )
    assert rows[0].spec.training.learning_rate == spec.training.learning_rate


def test_a_row_folder_sweep_makes_each_row_once_and_reuses_it(tmp_path):
    spec = load_spec("smoke")
    store = RowFolders(lambda row: tmp_path / row.name / f"seed{row.seed}", lambda variant: variant.to_dict())
    made, started, finished = [], [], []
    rows = variant_rows(spec, VARIANTS, [0, 1])
    result = run_sweep(
        rows,
        _maker(tmp_path, made),
        store,
        lambda row: started.append((row.name, row.seed)),
        lambda row, r, reused: finished.append(reused),
    )
    assert made == started == [(r.name, r.seed) for r in rows] and finished == [False] * 4
    assert result["lr"][1]["lr"] == 1e-4 and (tmp_path / "lr" / "seed1" / ROW_FILE).is_file()
    # a second sweep makes nothing: every row comes back from its folder, marked as reused
    made.clear()
    again = run_sweep(rows, _maker(tmp_path, made), store)
    assert made == [] and again["lr"][1]["reused"].endswith(ROW_FILE) and again["lr"][1]["lr"] == 1e-4
    # a row whose settings changed is made again; the others are reused
    changed = variant_rows(spec, {**VARIANTS, "lr": {"training.learning_rate": 2e-4}}, [0, 1])
    run_sweep(changed, _maker(tmp_path, made), store)
    assert made == [("lr", 0), ("lr", 1)]


def test_a_row_keeps_the_commit_that_made_it_when_reused(tmp_path, monkeypatch):
    from specter_utils.workflow import sweep

    spec = load_spec("smoke")
    store = RowFolders(lambda row: tmp_path / row.name / f"seed{row.seed}", lambda variant: variant.to_dict())
    rows = variant_rows(spec, VARIANTS, [0])
    monkeypatch.setattr(sweep, "source_commit", lambda: "aaaaaaa")
    first = run_sweep(rows, _maker(tmp_path, []), store)
    assert first["lr"][0]["commit"] == "aaaaaaa" and "reused" not in first["lr"][0]
    monkeypatch.setattr(sweep, "source_commit", lambda: "bbbbbbb")  # later code reuses the row: it says whose it is
    again = run_sweep(rows, _maker(tmp_path, []), store)
    assert again["lr"][0]["commit"] == "aaaaaaa" and again["lr"][0]["reused"].endswith(ROW_FILE)


def test_a_row_not_recorded_is_made_every_time(tmp_path):
    spec = load_spec("smoke")
    store = RowFolders(lambda row: tmp_path / row.name, lambda variant: variant.to_dict())
    made = []
    fresh = [SweepRow("main", spec.seed, None, spec, record=False)]
    run_sweep(fresh, _maker(tmp_path, made), store)
    run_sweep(fresh, _maker(tmp_path, made), store)
    assert made == [("main", spec.seed)] * 2 and not (tmp_path / "main").exists()


def test_a_results_file_sweep_appends_a_line_per_row_and_resumes(tmp_path):
    spec = load_spec("smoke")
    results = tmp_path / "results.jsonl"
    made = []
    rows = variant_rows(spec, VARIANTS, [0])
    run_sweep(rows, _maker(tmp_path, made), RowLines(results))
    assert [(r["name"], r["seed"]) for r in read_rows(results)] == [("reference", 0), ("lr", 0)]
    with open(results, "a") as handle:
        handle.write('{"name": "cut by a kill"')  # a partial last line: ignored, then cut by the next append
    more = variant_rows(spec, VARIANTS, [0, 1])
    run_sweep(more, _maker(tmp_path, made), RowLines(results))
    assert made == [("reference", 0), ("lr", 0), ("reference", 1), ("lr", 1)]
    assert len(read_rows(results)) == 4 and len(results.read_text().splitlines()) == 4


def test_rows_are_paired_against_the_row_each_is_tested_against():
    rng = np.random.default_rng(0)
    queries = [str(q) for q in range(50)]
    base = rng.uniform(40, 90, size=len(queries))

    def seeds(shift: float) -> list[dict]:
        return [
            {"per_query_ap": {"cite": {q: float(a + shift + s) for q, a in zip(queries, base, strict=True)}}}
            for s in (0.0, 0.5)
        ]

    scored = scored_records({"ref": seeds(0.0), "up": seeds(3.0), "same": seeds(0.0)}, lambda r: "")
    comparison = compare_rows(scored, ["ref", "up"], ["cite"], n_resamples=200)
    assert comparison["rows"]["up"]["tasks"]["cite"]["versus"]["ref"]["diff"] > 2.9
    deltas = {(d.row, d.reference): d.diff for d in paired_deltas(comparison, {"same": "up"}, "ref")}
    assert set(deltas) == {("up", "ref"), ("same", "up")}
    assert deltas[("same", "up")] < -2.9


def test_notebook_07_pairs_by_seeds_and_queries_keeps_the_per_query_ap_and_reads_it_again(tmp_path):
    from specter_utils.evaluation.hierarchical import METHOD
    from specter_utils.io import read_json, write_json
    from specter_utils.workflow.sweep import paired_by_seeds, reread

    rng = np.random.default_rng(1)
    queries = [str(q) for q in range(40)]
    base = rng.uniform(40, 90, size=len(queries))

    def seeds(shift: float) -> list[dict]:
        noise = rng.normal(0, 3, size=(3, len(queries)))
        return [
            {"per_query_ap": {"cite": {q: float(a + shift + n) for q, a, n in zip(queries, base, row, strict=True)}}}
            for row in noise
        ]

    scored = scored_records({"ref": seeds(0.0), "up": seeds(4.0), "same": seeds(0.0)}, lambda r: "")
    against = {"up": "ref", "same": "ref"}
    comparison = paired_by_seeds(scored, against, ["cite"], n_resamples=500)
    up = comparison["rows"]["up"]["tasks"]["cite"]["versus"]["ref"]
    assert up["method"] == METHOD and up["seeds"] == up["reference_seeds"] == 3 and up["queries"] == 40
    assert comparison["family"] == 2 and up["p_adjusted"] >= up["p"] and up["p_adjusted"] < 0.05
    assert comparison["rows"]["ref"]["tasks"]["cite"]["versus"] == {}  # a reference is tested against nothing
    stored = comparison["per_query_ap"]
    assert stored["tasks"]["cite"]["queries"] == sorted(queries) and len(stored["tasks"]["cite"]["rows"]["up"]) == 3
    # the metrics file keeps it, rounded; read back, the same test gives the same reading without the embeddings
    write_json(tmp_path / "07_ablations.json", {"statistics": {"paired": comparison}})
    again = reread(read_json(tmp_path / "07_ablations.json")["statistics"]["paired"], against, n_resamples=500)
    again_up = again["rows"]["up"]["tasks"]["cite"]["versus"]["ref"]
    assert again_up["diff"] == pytest.approx(up["diff"], abs=1e-3) and again_up["p_adjusted"] < 0.05
    deltas = {(d.row, d.reference): d for d in paired_deltas(comparison, against, "ref")}
    assert set(deltas) == {("up", "ref"), ("same", "ref")} and deltas[("up", "ref")].detected


def test_notebook_07_runs_the_reference_row_first_then_each_variant_at_every_seed():
    spec = load_spec("smoke").with_overrides({"ablations.seeds": [0, 1], "ablations.variants": ["no_hard_negatives"]})
    rows = ablation_rows(spec)
    assert [(r.name, r.seed) for r in rows] == [
        (REFERENCE, 0),
        (REFERENCE, 1),
        ("no_hard_negatives", 0),
        ("no_hard_negatives", 1),
    ]
    run_seed = next(r for r in rows if r.name == REFERENCE and r.seed == spec.seed)
    assert not run_seed.record  # the main run's own model, not retrained
    assert all(r.record for r in rows if r is not run_seed)
    for row in rows[2:]:
        assert row.overrides == ABLATIONS["no_hard_negatives"]
        assert ablation_settings(row.spec) == ablation_settings(ablation_spec(spec, row.name, row.seed))
    own = spec.with_overrides({"ablations.max_triplets": 32})
    assert all(r.record for r in ablation_rows(own))  # a budget of its own: the run seed is retrained too


def test_notebook_07_rows_are_made_once_and_reused_by_the_next_run(tmp_path, monkeypatch):
    from specter_utils.runs import RunPaths
    from specter_utils.workflow import ablations

    spec = load_spec("smoke").with_overrides({"ablations.seeds": [0, 1], "ablations.variants": ["no_hard_negatives"]})
    paths = RunPaths.of(tmp_path / "run")
    made = []

    def make(variant, paths, name, out):
        made.append((name, variant.seed))
        out.mkdir(parents=True, exist_ok=True)
        (out / "embeddings.jsonl").write_text("{}\n")
        return {"seed": variant.seed, "embedding_file": str(out / "embeddings.jsonl"), "seconds": 1.0}

    monkeypatch.setattr(ablations, "make_ablation_row", make)
    monkeypatch.setattr(ablations, "reference_row", lambda spec, paths: {"seed": spec.seed, "source": "main run"})
    messages = []
    rows = ablations.run_ablations(spec, paths, progress=messages.append)
    assert {name: list(by_seed) for name, by_seed in rows.items()} == {REFERENCE: [0, 1], "no_hard_negatives": [0, 1]}
    assert rows[REFERENCE][spec.seed]["source"] == "main run"
    assert made == [(REFERENCE, 1), ("no_hard_negatives", 0), ("no_hard_negatives", 1)]
    assert messages == ["no_hard_negatives seed 0 done in 1.0 s", "no_hard_negatives seed 1 done in 1.0 s"]
    assert (paths.ablation_dir("no_hard_negatives") / "seed1" / ROW_FILE).is_file()
    messages.clear()
    again = ablations.run_ablations(spec, paths, progress=messages.append)
    assert len(made) == 3 and all(m.startswith("no_hard_negatives seed ") and "reused from" in m for m in messages)
    assert again[REFERENCE][1]["reused"].endswith(ROW_FILE)
    # one row on its own (run_ablation) is the same recorded row
    assert ablations.run_ablation(spec, paths, "no_hard_negatives", 1)["reused"].endswith(ROW_FILE)
