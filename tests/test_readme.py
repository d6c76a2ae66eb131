"""The generated blocks of README.md, docs/results.md and docs/benchmarks.md: they equal what the committed reports give, a number
edited by hand fails the check, and a minimal report renders the expected rows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_notebook

from specter_utils.cli import main
from specter_utils.io import read_json, write_json
from specter_utils.paths import REPO_ROOT
from specter_utils.pipeline import NOTEBOOKS
from specter_utils.presentation import blocks, readme, report_folder
from specter_utils.report import write_report

README_FILES = ("README.md", "docs/results.md", "docs/benchmarks.md")
# What a user-facing file must not say: issue numbers, the machinery that wrote the project, the protocol's file
FORBIDDEN = re.compile(
    r"issue [0-9]|#1[0-9]\b|#2[0-9]\b|helper (session|agent)|sessions?\b.{0,12}(so far|lent)|lent to (the|this)"
    r"|SPEC\.md",
    re.IGNORECASE,
)


def test_committed_blocks_equal_the_reports():
    """The README-vs-metrics test: every generated block is what the committed reports give."""
    for name in README_FILES:
        assert readme.check_file(REPO_ROOT / name, REPO_ROOT / "reports") == [], name
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert {"results", "figure2", "times"} <= {m.group("name") for m in readme.BLOCK.finditer(text)}
    docs = (REPO_ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert {"results", "ablations"} <= {m.group("name") for m in readme.BLOCK.finditer(docs)}


def test_check_command_passes_on_the_repository(capsys):
    assert main(["report", "--readme", "--check"]) == 0
    assert "README.md: up to date" in capsys.readouterr().out


def _copy_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    for name in README_FILES:
        shutil.copyfile(REPO_ROOT / name, root / name)
    shutil.copytree(REPO_ROOT / "reports", root / "reports")
    shutil.copytree(REPO_ROOT / "experiments" / "measured", root / "experiments" / "measured")
    (root / "bench" / "measured").mkdir(parents=True)  # the commands and train_dtype blocks' tables
    for table in (REPO_ROOT / "bench" / "measured").glob("*.md"):
        shutil.copyfile(table, root / "bench" / "measured" / table.name)
    shutil.copytree(REPO_ROOT / "figures", root / "figures", ignore=shutil.ignore_patterns("*.pdf"))  # linked charts
    return root


def test_the_lever_table_in_the_docs_is_the_drivers_own_output(tmp_path, capsys):
    root = _copy_repo(tmp_path)
    table = (REPO_ROOT / "experiments" / "measured" / "recipe_levers_hepth.md").read_text(encoding="utf-8").strip()
    text = (root / "docs" / "results.md").read_text(encoding="utf-8")
    block = next(m for m in readme.BLOCK.finditer(text) if m.group("name") == "levers")
    assert table in block.group("body") and "recipe_levers_hepth.jsonl" in block.group("body")
    # a new row in the committed table (the driver re-run) makes the docs stale until they are rewritten
    with (root / "experiments" / "measured" / "recipe_levers_hepth.md").open("a", encoding="utf-8") as handle:
        handle.write("| new | 3 | 1.00 |\n")
    capsys.readouterr()
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 2
    assert "'levers'" in capsys.readouterr().err
    assert main(["report", "--readme", "--root", str(root)]) == 0
    assert "| new | 3 | 1.00 |" in (root / "docs" / "results.md").read_text(encoding="utf-8")


def test_a_number_edited_by_hand_fails_the_check(tmp_path, capsys):
    root = _copy_repo(tmp_path)
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 0
    text = (root / "README.md").read_text(encoding="utf-8")
    block = next(m for m in readme.BLOCK.finditer(text) if m.group("name") == "results")
    number = re.search(r"\| (\d+\.\d\d) \|", block.group("body"))
    edited = f"| {float(number.group(1)) + 0.01:.2f} |"
    at = block.start("body") + number.start()
    (root / "README.md").write_text(text[:at] + edited + text[at + len(number.group(0)) :], encoding="utf-8")
    capsys.readouterr()
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "README.md" in err and "'results'" in err and "Traceback" not in err
    # rewriting restores the committed text, and the check passes again
    assert main(["report", "--readme", "--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8") == text
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 0


def test_an_unknown_block_is_a_one_line_error(tmp_path, capsys):
    root = _copy_repo(tmp_path)
    with (root / "README.md").open("a", encoding="utf-8") as handle:
        handle.write("\n<!-- generated:nonsense -->\nx\n<!-- /generated:nonsense -->\n")
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "unknown generated block 'nonsense'" in err and "README.md" in err


def _minimal_report(root: Path) -> Path:
    """A report as the report writer leaves it: pipeline.json, metrics/<notebook>.json, spec.yaml."""
    folder = root / "toy"
    coverage = {
        "mag": {"train": {"papers": 30}, "test": {"papers": 12}},
        "cite": {"queries": 7, "queries_evaluated": 7},
        "co-cite": {"queries": 7, "queries_evaluated": 7},
    }

    def result(f1: float, cite: float, cocite: float) -> dict:
        return {"mag": {"f1": f1}, "cite": {"map": cite, "ndcg": 1.0}, "co-cite": {"map": cocite}, "coverage": coverage}

    spec = {"embedding": {"max_length": 96}, "evaluation": {"split": "test", "scidocs_dir": ""}}
    write_json(
        folder / "metrics" / "05_scidocs_eval.json",
        {
            "split": "test",
            "results": {
                "base": result(40.0, 50.0, 51.0),
                "trained": result(41.5, 55.25, 56.0),
                "sif": result(30, 20, 21),
            },
            "spec": spec,
        },
    )
    write_json(
        folder / "metrics" / "01_prepare_data.json",
        {"corpus": {"name": "toycorpus", "synthetic": False}, "benchmark": {"cite": {"test_queries": 7}}},
    )
    scores = {"homogeneity": 0.123, "completeness": 0.456}
    write_json(
        folder / "metrics" / "06_embedding_analysis.json",
        {"scores": {"tsne": {"base": scores, "trained": scores}}, "n_papers": 40, "n_classes": 4},
    )
    write_json(
        folder / "pipeline.json",
        {
            "preset": "toy",
            "commit": "abc1234",
            "command": "specter-utils run --preset toy --report",
            "machine": {"cores": 2, "cpu": "Toy CPU", "flags": "avx2"},
            "notebooks": {
                "01_prepare_data": {"seconds": 11.2, "commit": "abc1234", "finished": "2026-11-24 15:00 UTC"},
                "05_scidocs_eval": {
                    "seconds": 3700,
                    "peak_rss_mb": 2560.0,
                    "commit": "abc1234",
                    "finished": "2026-11-24 16:00 UTC",
                },
            },
        },
    )
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    (folder / "ablations.md").write_text("| row | CITE |\n|---|---|\n| specter | 1.00 ± 0.10 |\n", encoding="utf-8")
    return folder


def test_a_minimal_report_renders_the_expected_rows(tmp_path):
    reports = tmp_path / "reports"
    _minimal_report(reports)
    blocks = readme.render_blocks(reports, tmp_path / "README.md")
    results = blocks["results"]
    assert (
        "**Table 1, preset `toy` on toycorpus**: test split, 7 queries per ranking task (cite and co-cite)" in results
    )
    assert "12 test papers in the `mag` slot, every row embedded at 96 wordpieces" in results
    assert "(reports/toy/metrics/05_scidocs_eval.json)" in results
    rows = [line for line in results.splitlines() if line.startswith("| ")]
    assert rows[0] == "| model | CLS macro-F1 (`mag`) | cite MAP | co-cite MAP |"
    assert rows[1:] == [  # the README's headline rows; sif is in the report's results.md
        "| trained | 41.50 | 55.25 | 56.00 |",
        "| base | 40.00 | 50.00 | 51.00 |",
    ]
    assert "every row in [`results.md`](reports/toy/results.md)" in results
    in_docs = readme.render_blocks(reports, tmp_path / "docs" / "results.md")["results"]
    assert "| sif | 30.00 | 20.00 | 21.00 |" in in_docs  # docs/results.md shows every row
    figure2 = blocks["figure2"]
    assert "| tsne | homogeneity | 0.12 | 0.12 | +0.00 | not tested (1 projection seed) |" in figure2
    assert "40 `mag` papers of 4 classes" in figure2 and "predates them): no direction is stated" in figure2
    assert "| tsne | homogeneity | 0.19 (SciBERT) | 0.41 (SPECTER) | +0.22 | one map, not tested |" in figure2
    assert "| tsne | completeness | 0.63 (SciBERT) | 0.72 (SPECTER) | +0.09 |" in figure2
    assert (  # the README: the slowest notebook only; docs/results.md: every notebook
        "| [`toy`](reports/toy/pipeline.json) | 05 `scidocs_eval`, 1 h 1 min | 1 h 1 min | 2.5 GiB | `abc1234` |"
        in blocks["times"]
    )
    times = readme.render_blocks(reports, tmp_path / "docs" / "results.md")["times"]
    assert (
        "| [`toy`](../reports/toy/pipeline.json) | 11 s | 1 h 1 min | 1 h 1 min | 2.5 GiB | `abc1234` | 2 cores, Toy CPU, avx2 |"
        in times
    )
    stages = blocks["stages"]
    assert "| 01_prepare_data | 11 s |  |" in stages and "| 05_scidocs_eval | 1 h 1 min | 2.50 GiB |" in stages
    assert "| specter | 1.00 ± 0.10 |" in blocks["ablations"] and "Ablations on **toycorpus**" in blocks["ablations"]
    # from docs/, links climb one folder
    assert (
        "(../reports/toy/metrics/05_scidocs_eval.json)"
        in readme.render_blocks(reports, tmp_path / "docs" / "x.md")["results"]
    )


def test_a_report_from_the_report_writer_renders(tmp_path):
    """What write_report leaves (pipeline.json with a list of flags, metrics/ with relative paths) is what is read."""
    run_dir = tmp_path / "results" / "toyrun"
    source = _minimal_report(tmp_path / "source")
    entries = {}
    for notebook in NOTEBOOKS:
        (run_dir / notebook).mkdir(parents=True)
        nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), run_dir / notebook / f"{notebook}.ipynb")
        metrics = source / "metrics" / f"{notebook}.json"
        if metrics.exists():
            shutil.copyfile(metrics, run_dir / notebook / "metrics.json")
        entries[notebook] = {"seconds": 60.0, "commit": "abc1234", "finished": "2026-11-24 15:00 UTC", "overrides": {}}
    shutil.copyfile(source / "spec.yaml", run_dir / "spec.yaml")
    machine = {"cores": 2, "cpu": "Toy CPU", "flags": ["avx2", "avx512f"]}
    write_json(run_dir / "pipeline.json", {"preset": "toy", "overrides": {}, "machine": machine, "notebooks": entries})
    write_report(run_dir, tmp_path / "reports" / "toy")
    blocks = readme.render_blocks(tmp_path / "reports", tmp_path / "README.md")
    assert (
        "| trained | 41.50 | 55.25 | 56.00 |" in blocks["results"] and "on toycorpus**: test split" in blocks["results"]
    )
    assert "| 8 min 0 s |  | `abc1234` | 2 cores, Toy CPU, avx2, avx512f |" in blocks["times"]
    assert "| tsne | completeness | 0.46 | 0.46 |" in blocks["figure2"]


def test_figure2_block_reads_the_full_space_first_and_the_seeds(tmp_path):
    """A report over projection seeds: the full-space row and the map rows with mean ± sd, each with its verdict."""
    from specter_utils.analysis.geometry import seed_difference

    folder = _minimal_report(tmp_path / "reports")
    base, trained = [0.20, 0.40, 0.20, 0.40, 0.30], [0.35, 0.10, 0.38, 0.15, 0.30]

    def summary(values):
        return {
            "homogeneity": float(np.mean(values)),
            "homogeneity_sd": float(np.std(values, ddof=1)),
            "completeness": 0.5,
            "completeness_sd": 0.0,
        }

    tests = {"homogeneity": seed_difference(trained, base), "completeness": seed_difference([0.5] * 5, [0.5] * 5)}
    knn = {"diff": 0.04, "ci_low": 0.02, "ci_high": 0.06, "p": 0.0001, "queries": 40, "seeds": 1, "reference_seeds": 1}
    knn["method"] = "hierarchical bootstrap"  # evaluation.hierarchical's test: read by the one rule
    write_json(
        folder / "metrics" / "06_embedding_analysis.json",
        {
            "scores": {"tsne": {"base": summary(base), "trained": summary(trained)}},
            "versus": {"tsne": {"trained": {"0.5": tests, "1": tests}}},
            "projection_seeds": [0, 1, 2, 3, 4],
            "space": {
                "k": 10,
                "reference": "base",
                "models": {
                    "base": {"knn_agreement": 0.5, "silhouette": 0.0},
                    "trained": {"knn_agreement": 0.54, "silhouette": 0.0},
                },
                "versus": {"trained": {"knn_agreement": knn}},
            },
            "n_papers": 40,
            "n_classes": 4,
        },
    )
    figure2 = readme.render_blocks(tmp_path / "reports", tmp_path / "docs" / "results.md")["figure2"]
    assert figure2.index(
        "k-NN topic agreement (k = 10) | 0.500 | 0.540 | +0.040 [+0.020, +0.060], p < 0.001 | higher |"
    ) < figure2.index("| tsne | homogeneity |")
    assert "| tsne | homogeneity | 0.30 ± 0.10 | 0.26 ± 0.12 |" in figure2
    assert "| no difference detected | higher 0, lower 0, none 2 (of 2) |" in figure2
    assert "in the full space k-NN topic agreement higher, so the paper's direction" in figure2
    assert (
        "5 projection seeds) t-SNE homogeneity no difference detected, t-SNE completeness no difference detected."
        in figure2
    )


def _user_facing_files() -> list[Path]:
    files = [REPO_ROOT / "README.md", *REPO_ROOT.glob("reports/*/README.md")]
    for folder in ("docs", "params", "notebooks"):
        files += [p for p in (REPO_ROOT / folder).rglob("*") if p.is_file()]
    return files


@pytest.mark.parametrize("path", _user_facing_files(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_user_facing_files_speak_of_the_project_only(path):
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return  # a binary file (a figure) says nothing
    hits = [m.group(0) for line in text.splitlines() if (m := FORBIDDEN.search(line))]
    assert not hits, f"{path.relative_to(REPO_ROOT)}: {hits}"


def test_a_report_that_its_preset_no_longer_runs_fails_the_check(tmp_path, capsys):
    root = _copy_repo(tmp_path)
    shutil.copytree(REPO_ROOT / "params", root / "params")
    for report in report_folder.load_reports(
        REPO_ROOT / "reports"
    ):  # every committed report is its preset as it is today
        assert readme.preset_drift(report, REPO_ROOT / "params") == [], report.preset
    preset = root / "params" / "hepth.yaml"
    preset.write_text(preset.read_text(encoding="utf-8").replace("max_class_papers: 3000", "max_class_papers: 2000"))
    capsys.readouterr()
    assert main(["report", "--readme", "--check", "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "hepth" in err and "spec.yaml" in err and "Traceback" not in err
    assert "data.max_class_papers: 3000 in the report, 2000 today" in err
    assert main(["report", "--readme", "--root", str(root)]) == 0  # rewriting the blocks warns, and goes on
    assert "warning:" in capsys.readouterr().out


def test_the_times_say_which_ablation_rows_were_reused(tmp_path):
    folder = _minimal_report(tmp_path / "reports")
    assert "reused" not in blocks.times_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    rows = {
        "specter": {"0": {"seed": 0}, "1": {"seed": 1, "seconds": 400.0, "reused": "07_ablations/specter/seed1"}},
        "no_hard_negatives": {"0": {"seed": 0, "seconds": 420.0}, "1": {"seed": 1, "seconds": 380.0, "reused": "x"}},
    }
    write_json(folder / "metrics" / "07_ablations.json", {"variants": rows})
    times = blocks.times_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    assert "`toy` 07 reused 2 of its 4 rows from an earlier run with the same settings" in times
    assert "took 13 min 0 s more" in times
    assert "time split" not in times
    made = {"split": {"split_by": "date"}, "seconds": 2520.0}
    write_json(folder / "metrics" / "05_scidocs_eval.json", {"time_split": {"made": made}})  # made by this run
    assert "time split" not in blocks.times_block(
        report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"}
    )
    made["reused"] = "05_scidocs_eval/time_split/row.json"
    write_json(folder / "metrics" / "05_scidocs_eval.json", {"time_split": {"made": made}})
    times = blocks.times_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    assert "`toy` 05 reused its time split (benchmark, model, embeddings)" in times and "took 42 min 0 s more" in times
    assert "made by code not recorded (made before rows kept their commit)" in times  # no commit in these rows


def test_reused_rows_name_the_commit_that_made_them(tmp_path):
    folder = _minimal_report(tmp_path / "reports")
    own = report_folder.notebook_runs(report_folder.load_reports(tmp_path / "reports")[0]).get("07_ablations", {})
    own_commit = own.get("commit") or "aaaaaaa"
    rows = {
        "specter": {"1": {"seed": 1, "seconds": 400.0, "reused": "r", "commit": own_commit}},
        "no_hard_negatives": {"1": {"seed": 1, "seconds": 380.0, "reused": "r", "commit": "0ldc0de"}},
        "venue": {"1": {"seed": 1, "seconds": 380.0, "reused": "r"}},
    }
    write_json(folder / "metrics" / "07_ablations.json", {"variants": rows})
    times = blocks.times_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    assert "`0ldc0de` (1 row), other code than the report's" in times
    assert "code not recorded (1 row)" in times
    assert blocks.made_at({"abc1234": 2}, "abc1234") == "`abc1234`, the report's own"


def test_the_ablations_block_shows_the_chart_and_the_computed_reading(tmp_path):
    from specter_utils.presentation.interpret import interpret_ablations
    from specter_utils.presentation.tables import PAPER_ROWS, seed_group_statistics

    folder = _minimal_report(tmp_path / "reports")

    def results(cite: float) -> dict:
        return {"cite": {"map": cite}, "co-cite": {"map": cite - 1}}

    statistics = {
        "groups": {
            "specter": seed_group_statistics([results(80), results(81), results(82)]),
            "no_abstract": seed_group_statistics([results(70), results(71), results(70.5)]),
        },
        "seeds": {"specter": [0, 1, 2], "no_abstract": [0, 1, 2]},
        "compared_to": {"no_abstract": "specter"},
        "paired": {  # evaluation.hierarchical's comparison, as notebook 07 stores it
            "rows": {
                "no_abstract": {
                    "tasks": {
                        "cite": {
                            "versus": {
                                "specter": {
                                    "diff": -10.5,
                                    "ci_low": -12.0,
                                    "ci_high": -9.0,
                                    "p": 0.0001,
                                    "p_adjusted": 0.0002,
                                    "seeds": 3,
                                    "reference_seeds": 3,
                                    "queries": 7,
                                    "method": "hierarchical bootstrap",
                                }
                            }
                        }
                    }
                }
            },
            "family": 2,
            "n_resamples": 10_000,
        },
    }
    chart = "figures/table2_toy.png"
    write_json(
        folder / "metrics" / "07_ablations.json", {"statistics": statistics, "figures": [chart, chart[:-3] + "pdf"]}
    )
    report = report_folder.load_reports(tmp_path / "reports")[0]
    block = blocks.ablations_block(report, "../reports/toy", tmp_path, "..")
    assert "| no_abstract | 3 |" in block and "![" not in block  # no chart file: no broken image
    reading = interpret_ablations(report_folder.ablation_statistics_of(report), "specter", PAPER_ROWS)
    assert block.endswith(reading) and "**no_abstract**" in reading and "agrees with the paper's direction" in reading
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "table2_toy.png").write_bytes(b"png")
    block = blocks.ablations_block(report, "../reports/toy", tmp_path, "..")
    assert f"](../{chart})" in block and block.index(f"../{chart}") < block.index(reading)


def test_the_controls_block_sets_the_gain_under_matched_negatives_beside_random_and_the_time_split(tmp_path):
    from specter_utils.evaluation.deltas import Delta

    folder = _minimal_report(tmp_path / "reports")
    reports = report_folder.load_reports(tmp_path / "reports")
    assert "No report keeps" in blocks.controls_block(reports, {"toy": "reports/toy"})  # an older report
    metrics = read_json(folder / "metrics" / "05_scidocs_eval.json")

    def gain(task: str, diff: float, low: float, high: float) -> dict:
        return Delta("trained", "base", task, "MAP", diff, low, high, 0.01, 160).as_dict()

    in_degree = {"config": {"ranker": "in-degree", "text_free": True}, "cite": {"map": 67.2}}
    in_degree["cite (matched)"] = {"map": 26.3}
    metrics["results"]["in-degree"] = in_degree
    metrics["deltas"] = [gain("cite", 4.0, 2.0, 6.0), gain("cite (matched)", 3.0, 1.0, 5.0)]
    made = {"split": {"split_by": "date", "cutoff_year": 1999, "queries_by_year": {"1999": 300, "2000": 20}}}
    time_split = {
        "made": made,
        "results": {},
        "deltas": [gain("cite", 1.0, -0.5, 2.5), gain("cite (matched)", 1, 0, 2)],
    }
    metrics["time_split"] = time_split
    write_json(folder / "metrics" / "05_scidocs_eval.json", metrics)
    block = blocks.controls_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    rows = [line for line in block.splitlines() if line.startswith("| [`toy`]")]
    assert rows[0].endswith(
        "| random (the report's) | cite | 160 | 67.20 → 26.30 | +4.00 [+2.00, +6.00] | +3.00 [+1.00, +5.00] | 75% |"
    )
    assert rows[1].endswith(
        "| date (queries from 1999 (300), 2000 (20)) | cite | 160 | — → — | +1.00 [-0.50, +2.50] | +1.00 [+0.00, +2.00] "
        "| — (no gain shown) |"
    )
    assert len(rows) == 2  # co-cite has no paired test here: no row


def test_the_formats_block_tables_each_reports_scirepeval_tasks_trained_against_base(tmp_path):
    folder = _minimal_report(tmp_path / "reports")
    reports = report_folder.load_reports(tmp_path / "reports")
    assert "No report holds SciRepEval-format" in blocks.formats_block(reports, {"toy": "reports/toy"})
    metrics = read_json(folder / "metrics" / "05_scidocs_eval.json")

    def test(kind: str, metric: str, delta: float, low: float, high: float, unit: str) -> dict:
        scores = {"score": 50.0 + delta, "reference_score": 50.0, "delta": delta, "ci_low": low, "ci_high": high}
        return {"type": kind, "multi_label": False, "metric": metric, **scores, "p": 0.01, "n": 40, "unit": unit}

    paired = {
        "citations-received": test("regression", "kendalltau", 1.5, -0.5, 3.5, "papers"),
        "same-author": test("proximity", "map", 2.0, 1.0, 3.0, "queries"),
    }
    metrics["formats"] = {"row": "trained", "reference": "base", "max_length": 96, "paired": paired}
    write_json(folder / "metrics" / "05_scidocs_eval.json", metrics)
    block = blocks.formats_block(report_folder.load_reports(tmp_path / "reports"), {"toy": "reports/toy"})
    assert block.startswith(
        "**toycorpus**, embedded at 96 wordpieces, [`toy`](reports/toy/metrics/05_scidocs_eval.json)"
    )
    assert "excludes 0 (higher on same-author) and includes it on 1 task(s)." in block
    assert (
        "| citations-received | regression | kendalltau | 51.50 | 50.00 | +1.50 [-0.50, +3.50] | 0.010 | 40 papers |"
        in block
    )


def test_the_lever_block_labels_each_table_by_its_split_validation_first(tmp_path):
    measured = tmp_path / "experiments" / "measured"
    measured.mkdir(parents=True)
    (measured / "recipe_levers_hepth.md").write_text("Benchmark: test split (`test`: ...)\n\n| t |\n", encoding="utf-8")
    (measured / "recipe_levers_hepth_val.md").write_text("Benchmark: validation split (`val`)\n\n| v |\n")
    (measured / "recipe_levers_hepth_val.jsonl").write_text("{}\n")
    block = blocks.levers_block(measured, tmp_path / "docs" / "results.md")
    assert block.index("**hepth, validation split**") < block.index("**hepth, test split**")
    assert "[`recipe_levers_hepth_val.jsonl`](../experiments/measured/recipe_levers_hepth_val.jsonl)" in block
    assert "from the rows of" not in block.split("**hepth, test split**")[1]  # that table has no rows file here
    # the small-corpus study's tables are their own block, named by corpus, and not among the lever tables
    (measured / "small_corpus_hepth2k_val.md").write_text("Benchmark: validation split (`val`)\n\n| s |\n")
    small = blocks.levers_block(measured, tmp_path / "docs" / "results.md", "small_corpus_", "none yet")
    assert small.startswith("**hepth2k, validation split** ([`small_corpus_hepth2k_val.md`]") and "| s |" in small
    assert "| s |" not in blocks.levers_block(measured, tmp_path / "docs" / "results.md")
    assert blocks.levers_block(tmp_path, tmp_path / "results.md", "small_corpus_", "none yet") == "none yet"


def test_figure2_sentences_name_how_long_each_model_trained():
    from specter_utils.presentation.figure_blocks import figure2_block
    from specter_utils.presentation.report_folder import load_reports, training_length

    reports = load_reports(REPO_ROOT / "reports")
    demo = next(r for r in reports if r.preset == "demo")
    trained = demo.metrics["03_train_specter"]
    steps, used = trained["results"]["global_step"], trained["data"]["train"]["used"]
    assert training_length(demo).startswith(f"trained {steps:,} optimiser steps on {used:,} triplets")
    block = figure2_block(reports, {r.preset: f"reports/{r.preset}" for r in reports})
    assert f"trained against base ({training_length(demo)})" in block


def test_the_controls_block_names_what_each_report_matched_on():
    reports = report_folder.load_reports(REPO_ROOT / "reports")
    block = blocks.controls_block(reports, {r.preset: f"reports/{r.preset}" for r in reports})
    for report in reports:
        keys = report_folder.matching_keys(report)
        assert keys and f"`{report.preset}` on {' and '.join(keys)}" in block
    assert report_folder.matching_keys(next(r for r in reports if r.preset == "citeseer")) == ["in-degree bucket"]


def test_each_reports_table1_names_its_matching_features_and_time_split_years(tmp_path):
    reports = report_folder.load_reports(REPO_ROOT / "reports")
    for report in reports:
        block = blocks.table1_block(report, f"reports/{report.preset}")
        keys = report_folder.matching_keys(report)
        assert f"Matched negatives: matched to the positives on {' and '.join(keys)}." in block
    hepth = blocks.table1_block(next(r for r in reports if r.preset == "hepth"), "reports/hepth")
    assert "Time split: queries from 1999 (" in hepth
    folder = _minimal_report(tmp_path / "reports")
    metrics = read_json(folder / "metrics" / "05_scidocs_eval.json")
    metrics["time_split"] = {"made": {"split": {"cutoff_year": 2001, "queries_by_year": {"2001": 9, "2002": 3}}}}
    write_json(folder / "metrics" / "05_scidocs_eval.json", metrics)
    note = blocks.controls_note(report_folder.load_reports(tmp_path / "reports")[0])
    assert note.endswith("Time split: queries from 2001 (9), 2002 (3).")
    assert note.startswith("Matched negatives: the benchmark does not record")
