"""The recipe-lever study (``studies.levers`` through ``workflow.sweep``, with ``experiments/recipe_levers.py`` as
its command line) end to end on the smoke preset's tiny data: 2 settings x 1 seed, a tiny random model, one optimiser
step each; the resume (a second invocation trains nothing) and the table."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.paths import REPO_ROOT
from specter_utils.runs import RunPaths
from specter_utils.spec import load_spec
from specter_utils.studies import levers
from specter_utils.workflow.prepare import prepare
from specter_utils.workflow.sweep import append_row, read_rows

SCRIPT = REPO_ROOT / "experiments" / "recipe_levers.py"

SETTINGS = {
    "reference": {"training.max_steps": 1},
    # the levers at once: the citation mask on the cached loss, every triplet, SciNCL positives, lr and schedule
    "levers": {
        "training.cached_mini_batch": 16,
        "training.max_triplets": 0,
        "training.max_steps": 1,
        "training.learning_rate": 1e-4,
        "training.lr_schedule": "slanted_triangular",
        "mining.scincl_fraction": 0.5,
    },
}


def _command(*args: str) -> subprocess.CompletedProcess:
    """The study's command line, run as a command with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


def _script(*args: str) -> subprocess.CompletedProcess:
    """The study's command line, its ``main`` (what ``python experiments/recipe_levers.py`` exits with) called in
    this process with stdout and stderr captured: the same arguments, exit code and output as :func:`_command`
    without a fresh interpreter importing torch for each of the dozen invocations below (an uncaught exception
    raises here, where the command would print a traceback). :func:`_command` runs it as a command where that is
    what is checked: a refused run's exit code and its one line."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = runpy.run_path(str(SCRIPT))["main"](list(args))
        except SystemExit as exc:  # argparse's --help and usage errors exit, as the command does
            code = exc.code
    return subprocess.CompletedProcess([str(SCRIPT), *args], code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A smoke run folder as notebook 01 leaves it: the benchmark and pipeline.json."""
    run = tmp_path_factory.mktemp("levers") / "run"
    prepare(load_spec("smoke"), RunPaths.of(run).benchmark_dir)
    write_json(run / "pipeline.json", {"preset": "smoke", "overrides": {}})
    return run


def test_the_command_line_has_help():
    done = _script("--help")
    assert done.returncode == 0 and "--table" in done.stdout and "--settings" in done.stdout


def test_rows_are_trained_once_resumed_and_tabled(run_dir, random_tiny_model, tmp_path):
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump(SETTINGS, sort_keys=False))
    args = [
        str(run_dir),
        "--settings",
        str(settings),
        "--seeds",
        "0",
        "--set",
        f"training.base_model={random_tiny_model}",
        "--set",
        "training.max_length=32",  # short inputs: seconds per row on a busy CPU
        "--set",
        "embedding.max_length=32",
        "--split",
        "test",  # the final score's split; validation (the default) below, re-scored from the kept embeddings
    ]
    done = _script(*args)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("running") == 4  # base, tfidf-svd and the two settings
    results = run_dir / "levers" / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["setting"], r["seed"], r["kind"]) for r in rows] == [
        ("base", 0, "baseline"),
        ("tfidf-svd", 0, "baseline"),
        ("reference", 0, "trained"),
        ("levers", 0, "trained"),
    ]
    reference, lever = rows[2], rows[3]
    assert reference["training"]["loss"] == "CitationMaskedMNRL"  # the cpu profile's recipe: citation-mnrl
    assert lever["training"]["loss"] == "CachedCitationMaskedMNRL"
    assert lever["training"]["config"]["max_triplets"] == 0 and lever["training"]["data"]["train"]["used"] > 64
    assert lever["training"]["config"]["lr_schedule"] == "slanted_triangular"
    assert lever["mix"]["queries_scincl"] > 0 and reference["mix"] is None
    assert all(set(r["per_query_ap"]) == {"cite", "cocite"} for r in rows)
    assert all(len(r["per_query_ap"]["cite"]) == r["queries"]["cite"] for r in rows)
    assert not (run_dir / "levers" / "rows" / "levers" / "seed0" / "train" / "model").exists()  # models removed

    # resume: everything is there, nothing runs again; a partial line left by a kill is ignored, then cut
    with open(results, "a") as handle:
        handle.write('{"setting": "cut by a kill"')
    done = _script(*args)
    assert done.returncode == 0, done.stderr
    assert "running" not in done.stdout
    assert len(read_rows(results)) == 4
    append_row(results, {"setting": "x", "seed": 9, "kind": "trained", "overrides": {}})
    assert [r["setting"] for r in read_rows(results)][-2:] == ["levers", "x"]
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n")

    # a setting that changed under the same name is refused
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump({**SETTINGS, "reference": {"training.max_steps": 2}}, sort_keys=False))
    done = _script(*args[:2], str(changed), *args[3:])
    assert done.returncode == 2
    assert "rename the setting" in done.stderr
    # so is a finished row whose recorded values its setting no longer gives (a changed profile or default)
    assert reference["training"]["config"]["max_triplets"] == levers.STUDY_BASE["training.max_triplets"]
    kept_text = results.read_text()
    results.write_text(kept_text.replace('"learning_rate": 5e-05', '"learning_rate": 0.001', 1))
    done = _command(*args)  # as a command: the exit code and the one line a user sees
    assert done.returncode == 2
    err = done.stderr
    assert "trained with learning_rate=0.001" in err and "Traceback" not in err
    results.write_text(kept_text)

    done = _script(str(run_dir), "--split", "test", "--table", "--n-resamples", "200")
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert "cite Δ base" in table and "cite Δ tfidf-svd" in table and "cocite Δ reference" in table
    assert table.count("\n| ") == 5  # the header and 4 rows
    assert "test split" in table and "evaluation length 32" in table and "cite MAP (test)" in table
    assert "Training times on: " in table and "cores" in table and "2 rows" in table
    assert f"Set for every row (`--set`): `training.base_model={random_tiny_model}`, `training.max_length=32`" in table

    # a results file kept elsewhere (a committed copy): the rows' work files stay in the run folder
    kept = tmp_path / "kept" / "results.jsonl"
    assert _script(*args, "--only", "reference", "--results", str(kept)).returncode == 0
    assert [r["setting"] for r in read_rows(kept)] == ["base", "tfidf-svd", "reference"]
    assert sorted(p.name for p in kept.parent.iterdir()) == ["results.jsonl"]
    assert (run_dir / "levers" / "rows" / "reference" / "seed0" / "embeddings.jsonl").is_file()

    # validation: the finished test rows re-scored from their kept embeddings (both splits' papers), nothing trained
    done = _script(str(run_dir), "--rescore", str(results))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(re-scored)") == 4 and "running" not in done.stdout
    val_rows = read_rows(run_dir / "levers" / "results_val.jsonl")
    assert {r["split"] for r in val_rows} == {"val"} and all(r["rescored_from"]["split"] == "test" for r in val_rows)
    assert all(len(r["per_query_ap"]["cite"]) == r["queries"]["cite"] for r in val_rows)
    assert val_rows[0]["queries"] != rows[0]["queries"]
    table = _script(str(run_dir), "--table", "--n-resamples", "200").stdout
    assert "validation split" in table and "cite MAP (val)" in table and "cite Δ reference (val)" in table
    # a test results file is not a validation one: the table and the study refuse to mix them
    done = _script(*args[:-2], "--results", str(results))
    assert done.returncode == 2 and "--split test" in done.stderr
    # a row whose embeddings are gone cannot be re-scored without training again: one line, before any row runs
    (run_dir / "levers" / "rows" / "levers" / "seed0" / "embeddings.jsonl").unlink()
    done = _script(str(run_dir), "--rescore", str(results), "--results", str(tmp_path / "val.jsonl"))
    assert done.returncode == 2 and "cannot be re-scored" in done.stderr and "levers seed 0" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "val.jsonl").exists()


def test_every_built_in_lever_is_a_valid_specification_of_the_hepth_run():
    import dataclasses

    built_in = runpy.run_path(str(SCRIPT))["LEVERS"]  # the study's list of settings, beside its command line
    assert levers.REFERENCE in built_in and built_in[levers.REFERENCE] == {}
    for name, overrides in built_in.items():
        spec = load_spec("hepth", {"data.n_queries": 500, **overrides})
        training = dataclasses.replace(spec.training, triplets="t", metadata="m.json").validate()
        assert training.accumulation_steps() == 1, name  # in-batch negatives come from one batch
        if training.batch_size > 64:
            assert training.loss == "mnrl-citation" and training.cached_mini_batch == 32, name


def _lever_row(setting, seed, ap, kind="trained"):
    """A results line as the study writes it, one task (cite) with per-query AP ``ap``."""
    return {
        "setting": setting,
        "seed": seed,
        "kind": kind,
        "split": "test",
        "queries": {"cite": len(ap)},
        "eval_max_length": 256,
        "train_seconds": 60.0 if kind == "trained" else 0.0,
        "embedding": {"file": f"{setting}{seed}.jsonl"},
        "per_query_ap": {"cite": ap},
    }


def _cell(table, row, column):
    """The cell of ``row`` under the header ``column`` of a lever table."""
    lines = table.splitlines()
    header = next(line for line in lines if line.startswith("| setting |")).strip("| ").split(" | ")
    cells = next(line for line in lines if line.startswith(f"| {row} |")).strip("| ").split(" | ")
    return cells[header.index(column)]


def _p_values(cell):
    """The raw and the Holm-adjusted p of a difference cell (``< 0.001`` read as 0.0005)."""
    match = re.search(r"\] p (< 0\.001|[\d.]+), adj\. p (< 0\.001|[\d.]+)$", cell)
    assert match, cell
    return tuple(0.0005 if value.startswith("<") else float(value) for value in match.groups())


def test_table_reads_every_difference_by_the_seeds_and_queries_test(tmp_path):
    rng = np.random.default_rng(0)
    queries = [str(q) for q in range(60)]
    base_ap = rng.uniform(40, 90, size=len(queries))

    def row(setting, seed, shift, kind="trained"):
        return _lever_row(
            setting, seed, {q: float(min(100.0, a + shift)) for q, a in zip(queries, base_ap, strict=True)}, kind
        )

    results = tmp_path / "results.jsonl"
    for entry in (
        row("base", 0, 0.0, "baseline"),
        row("tfidf-svd", 0, -1.0, "baseline"),
        row("reference", 0, 2.0),
        row("reference", 1, 6.0),  # a spread of about 2.8 MAP between the two seeds
        row("wide", 0, 3.0),
        row("wide", 1, 5.0),
    ):
        append_row(results, entry)
    table = levers.lever_table(results, n_resamples=200)
    assert "inside the seed spread" not in table and "± " in _cell(table, "wide", "cite MAP (test)")
    # every difference is +4 or +5 on every query, yet the reference's two seeds lie 4 apart: seeds resampled, the
    # interval against the reference holds 0; base and TF-IDF (one seed each, deterministic) differ on every query
    low, high = map(float, re.search(r"\[(\S+), (\S+)\]", _cell(table, "wide", "cite Δ reference (test)")).groups())
    assert low < 0 < high
    assert _cell(table, "base", "cite Δ tfidf-svd (test)").startswith("+1.00 [+1.00, +1.00] p 0.005, adj. p")
    # a pair shown from both sides is one test: the same p and adjusted p, the difference and interval negated
    assert _cell(table, "tfidf-svd", "cite Δ base (test)") == _cell(table, "base", "cite Δ tfidf-svd (test)").replace(
        "+1.00", "-1.00"
    )
    # the reading is computed from the same rows: 2 seeds are a screen; a third makes `wide` a finding
    assert "- Screens, not findings (fewer than 3 seeds): `wide` (2 seeds)." in table and "- `wide` (" not in table
    append_row(results, row("wide", 2, 4.0))
    reading = levers.lever_table(results, n_resamples=200).split("Reading, computed from the rows above:")[1]
    wide_line = next(line for line in reading.splitlines() if line.startswith("- `wide` (3 seeds)"))
    assert "no difference detected against `reference` on cite (cite -0.00 [" in wide_line
    assert "higher than `base` on cite (cite +4.00 [" in wide_line and "slowest seed trained in 1.0 min" in wide_line
    # what each interval covers: seeds and queries against the reference, the queries only against a 1-seed row
    assert "seeds and queries resampled); higher than `base`" in wide_line
    assert "one seed of `base`: the interval covers the choice of queries, not that training's randomness" in wide_line


def test_a_difference_is_read_by_its_holm_adjusted_p_not_its_raw_p(tmp_path):
    rng = np.random.default_rng(0)
    queries = [str(q) for q in range(80)]
    truth = rng.uniform(30, 70, len(queries))

    def ap(offset):
        return {q: float(v) for q, v in zip(queries, truth + offset + rng.normal(0, 4.0, len(queries)), strict=True)}

    results = tmp_path / "results.jsonl"
    for entry in (
        _lever_row("base", 0, ap(0.0), "baseline"),
        _lever_row("tfidf-svd", 0, ap(0.0), "baseline"),
        *(_lever_row("reference", seed, ap(0.1 * seed)) for seed in range(3)),
        *(_lever_row("small", seed, ap(1.0 + 0.1 * seed)) for seed in range(3)),
    ):
        append_row(results, entry)
    table = levers.lever_table(results, n_resamples=200)
    raw, adjusted = _p_values(_cell(table, "small", "cite Δ tfidf-svd (test)"))
    assert raw < 0.05 <= adjusted  # detected alone, not among the table's 6 comparisons
    line = next(line for line in table.splitlines() if line.startswith("- `small` (3 seeds)"))
    assert "no difference detected against `tfidf-svd` on cite" in line and "higher than `tfidf-svd`" not in line
    # what 80 queries can detect: from the spread of reference (averaged over its seeds) minus base
    rows = read_rows(results)
    base = rows[0]["per_query_ap"]["cite"]
    seeds = [r["per_query_ap"]["cite"] for r in rows if r["setting"] == "reference"]
    diffs = [np.mean([seed[q] for seed in seeds]) - base[q] for q in queries]
    expected = 2.8016 * np.std(diffs, ddof=1) / np.sqrt(len(queries))  # z(0.975) + z(0.8)
    power = next(line for line in table.splitlines() if line.startswith("- What these queries can detect"))
    assert f"cite: {expected:.1f} MAP with its 80 queries" in power


def test_the_header_states_the_test_and_the_size_of_its_holm_family(tmp_path):
    queries = [str(q) for q in range(20)]

    def ap(offset):
        return {q: 50.0 + offset + (int(q) % 7) for q in queries}

    results = tmp_path / "results.jsonl"
    for entry in (
        _lever_row("base", 0, ap(0.0), "baseline"),
        _lever_row("tfidf-svd", 0, ap(-1.0), "baseline"),
        _lever_row("reference", 0, ap(1.0)),
    ):
        append_row(results, entry)
    # base-tfidf, reference-base, reference-tfidf: each pair once, though the table shows each from both rows
    header = levers.lever_table(results, n_resamples=50).splitlines()[0]
    assert "Holm over the table's 3 comparisons" in header and "two-level bootstrap (50 resamples" in header
    assert "each row's seeds drawn within it" in header and "queries drawn once for both rows" in header
    # a setting adds one comparison against each of the three
    append_row(results, _lever_row("setting", 0, ap(2.0)))
    assert "Holm over the table's 6 comparisons" in levers.lever_table(results, n_resamples=50)


def test_the_table_names_the_split_of_every_number_and_refuses_mixed_splits(tmp_path):
    def row(setting, split):
        return {
            "setting": setting,
            "seed": 0,
            "kind": "baseline",
            "split": split,
            "queries": {"cite": 3},
            "eval_max_length": 256,
            "train_seconds": 0.0,
            "embedding": {"file": f"{setting}.jsonl"},
            "per_query_ap": {"cite": {"q1": 50.0, "q2": 60.0, "q3": 70.0}},
        }

    val = tmp_path / "val.jsonl"
    append_row(val, row("base", "val"))
    append_row(val, row("tfidf-svd", "val"))
    table = levers.lever_table(val, n_resamples=50)
    assert table.startswith("Benchmark: validation split") and "| cite MAP (val) | cite Δ base (val) |" in table
    assert "a choice between settings made from them is made on test" not in table
    test = tmp_path / "test.jsonl"
    append_row(test, row("base", "test"))
    assert "a choice between settings made from them is made on test" in levers.lever_table(test, n_resamples=50)
    append_row(val, row("reference", "test"))
    with pytest.raises(DataError, match="rows scored on the test split"):
        levers.lever_table(val, n_resamples=50)


def test_rows_embedded_for_the_scored_split_only_cannot_be_rescored_on_the_other(run_dir, random_tiny_model, tmp_path):
    run = tmp_path / "run"  # a run folder of its own: notebook 01's benchmark as the module's run folder has it
    shutil.copytree(RunPaths.of(run_dir).benchmark_dir, RunPaths.of(run).benchmark_dir)
    shutil.copy(run_dir / "pipeline.json", run / "pipeline.json")
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump({"reference": SETTINGS["reference"]}))
    small = ["--set", "training.max_length=32", "--set", "embedding.max_length=32"]
    model = ["--set", f"training.base_model={random_tiny_model}"]
    done = _script(str(run), "--settings", str(settings), "--seeds", "0", *model, *small, "--embed", "scored")
    assert done.returncode == 0, done.stderr
    rows = read_rows(run / "levers" / "results_val.jsonl")
    assert [r["setting"] for r in rows] == ["base", "tfidf-svd", "reference"]
    assert all(r["split"] == "val" and r["embedded_splits"] == ["val"] for r in rows)
    embedded = (run / "levers" / "rows" / "reference" / "seed0" / "embeddings.ids.txt").read_text().split()
    scidocs = RunPaths.of(run).scidocs_dir(load_spec("smoke")["evaluation.scidocs_dir"])
    assert set(embedded) == set(levers.study_papers(scidocs, levers.TASKS, ["val"]))
    assert set(embedded) < set(levers.study_papers(scidocs, levers.TASKS))
    done = _script(str(run), "--rescore", str(run / "levers" / "results_val.jsonl"), "--split", "test")
    assert done.returncode == 2 and "cannot be re-scored" in done.stderr and "lacks" in done.stderr
    assert "Traceback" not in done.stderr and not (run / "levers" / "results.jsonl").exists()


def test_a_pairwise_table_tests_every_pair_of_rows_once_in_one_family(tmp_path):
    queries = [str(q) for q in range(30)]

    def ap(offset):
        return {q: 40.0 + offset + (int(q) % 11) for q in queries}

    results = tmp_path / "results.jsonl"
    for entry in (
        _lever_row("base", 0, ap(0.0), "baseline"),
        _lever_row("tfidf-svd", 0, ap(-1.0), "baseline"),
        *(_lever_row("reference", seed, ap(1.0 + 0.1 * seed)) for seed in range(3)),
        *(_lever_row("a", seed, ap(3.0 + 0.1 * seed)) for seed in range(3)),
        *(_lever_row("b", seed, ap(5.0 + 0.1 * seed)) for seed in range(3)),
    ):
        append_row(results, entry)
    assert "Holm over the table's 9 comparisons" in levers.lever_table(results, n_resamples=50)  # a-b untested
    table = levers.lever_table(results, n_resamples=1000, pairwise=True)
    assert "Holm over the table's 10 comparisons" in table  # the 10 pairs of 5 rows, one task
    assert _cell(table, "a", "cite Δ b (test)").startswith("-2.00 [") and _cell(table, "a", "cite Δ a (test)") == ""
    a_low, a_high = map(float, re.search(r"\[(\S+), (\S+)\]", _cell(table, "a", "cite Δ b (test)")).groups())
    b_low, b_high = map(float, re.search(r"\[(\S+), (\S+)\]", _cell(table, "b", "cite Δ a (test)")).groups())
    assert (b_low, b_high) == (-a_high, -a_low)  # one test, read from both rows
    assert _p_values(_cell(table, "b", "cite Δ a (test)")) == _p_values(_cell(table, "a", "cite Δ b (test)"))
    line = next(line for line in table.splitlines() if line.startswith("- `a` (3 seeds)"))
    assert line.index("`reference` on cite") < line.index("`base` on cite") < line.index("`b` on cite")
    assert "lower than `b` on cite (cite -2.00 [" in line and "`a` on cite" not in line
    done = _script(
        str(results.parent),
        "--results",
        str(results),
        "--split",
        "test",
        "--table",
        "--pairwise",
        "--n-resamples",
        "200",
    )
    assert done.returncode == 0, done.stderr
    assert "Holm over the table's 10 comparisons" in done.stdout
