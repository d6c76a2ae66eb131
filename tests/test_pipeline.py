"""The notebook runner: parameters, run folders, and how a failing cell is reported."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from specter_utils.cli import main
from specter_utils.errors import DataError
from specter_utils.paths import REPO_ROOT
from specter_utils.pipeline import (
    NOTEBOOKS,
    PipelineError,
    PipelineSetup,
    check_kernel,
    run_overrides,
    run_parameters,
    run_pipeline,
)
from specter_utils.runs import RunPaths, read_metrics, write_metrics
from specter_utils.spec import PRESETS, load_spec


def quiet(*_: object) -> None:
    """An echo that prints nothing."""


FAKE_SPEC = "data:\n  n_papers: 41  # the setting the fake notebooks read\n"


def fake_notebook(path: Path, body: str) -> None:
    params = new_code_cell(
        'run_dir: str = "results/x"  # run folder\npreset: str = "smoke"  # spec\noverrides: dict = {}  # changes'
    )
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[new_markdown_cell("# fake"), params, new_code_cell(body)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def fake_layout(tmp_path: Path) -> tuple[Path, Path]:
    notebooks, params = tmp_path / "notebooks", tmp_path / "params"
    notebooks.mkdir()
    params.mkdir()
    (params / "smoke.yaml").write_text(FAKE_SPEC)
    return notebooks, params


def read_value(params: Path) -> str:
    """Notebook code that reads ``data.n_papers`` from the fake specification, as a real notebook reads its slice."""
    return f"from specter_utils.spec import load_spec\nvalue = load_spec(preset, overrides, {str(params)!r})['data.n_papers']\n"


def test_run_paths_are_relative_to_the_repository() -> None:
    paths = RunPaths.of("results/demo")
    assert paths.run_dir == REPO_ROOT / "results" / "demo"
    assert paths.model_dir == paths.run_dir / "03_train_specter" / "train" / "model"
    assert paths.embedding_file("base").name == "base.jsonl"
    assert paths.scidocs_dir() == paths.benchmark_dir / "scidocs"
    assert paths.scidocs_dir("/data/scidocs") == Path("/data/scidocs")


def test_metrics_round_trip(tmp_path: Path) -> None:
    path = write_metrics(tmp_path, "05_scidocs_eval", {"cite": {"map": 1.5}})
    assert path == tmp_path / "05_scidocs_eval" / "metrics.json"
    assert read_metrics(tmp_path, "05_scidocs_eval") == {"cite": {"map": 1.5}}


def test_every_preset_has_a_specification() -> None:
    for preset in PRESETS:
        assert load_spec(preset)["seed"] == load_spec(preset).seed
    with pytest.raises(FileNotFoundError, match="presets: arxiv, citeseer, demo"):
        load_spec("nope")


def test_run_parameters_and_the_data_dir_override(tmp_path: Path) -> None:
    for name in ("cit-HepTh.txt", "cit-HepTh-abstracts.tar.gz"):  # a hep-th folder, as detection sees it
        (tmp_path / name).write_text("")
    overrides = run_overrides("demo", {"training.epochs": 1.0}, data_dir=str(tmp_path))
    assert overrides == {"training.epochs": 1.0, "data.src": str(tmp_path), "data.corpus": "hepth"}
    assert run_overrides("hepth", None, data_dir=str(tmp_path)) == {
        "data.src": str(tmp_path),
        "data.corpus": "hepth",
    }
    first = run_parameters("demo", tmp_path / "run", tmp_path / "figs", overrides)
    assert first == {
        "run_dir": str(tmp_path / "run"),
        "preset": "demo",
        "overrides": overrides,
        "figures_dir": str(tmp_path / "figs"),
    }
    later = run_parameters("demo", tmp_path / "run", tmp_path / "figs", overrides, declared={})
    assert "figures_dir" not in later and later["overrides"] == overrides


def test_the_data_dir_picks_the_reader(tmp_path: Path) -> None:
    record = tmp_path / "corpus.jsonl"
    record.write_text(json.dumps({"paper_id": "1", "title": "T", "abstract": "", "references": []}) + "\n")
    assert run_overrides("demo", None, data_dir=str(record))["data.corpus"] == "jsonl"
    assert run_overrides("demo", None, data_dir=str(record), corpus="s2orc")["data.corpus"] == "s2orc"
    with pytest.raises(ValueError, match="does not apply"):
        run_overrides("demo", None, data_dir=str(record), corpus="synthetic")
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"x": 1}) + "\n")
    with pytest.raises(DataError, match="--corpus"):  # the generated corpus cannot read a file: say which kind
        run_overrides("smoke", None, data_dir=str(odd))
    # a preset whose corpus is a folder (CiteSeer) cannot stand for a record file: the same one line, before 01
    with pytest.raises(DataError, match="cannot tell the corpus kind"):
        run_overrides("citeseer", None, data_dir=str(odd))
    odd_folder = tmp_path / "odd"
    odd_folder.mkdir()
    with pytest.raises(DataError, match="cannot tell the corpus kind of this folder"):
        run_overrides("hepth", None, data_dir=str(odd_folder))
    # a record kind (jsonl) keeps standing for a record file it cannot recognise by its first record
    assert run_overrides("demo", {"data.corpus": "jsonl"}, data_dir=str(odd))["data.corpus"] == "jsonl"


def test_run_command_refuses_an_undetectable_source_before_any_notebook(tmp_path: Path, capsys) -> None:
    from specter_utils.cli import main

    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"x": 1}) + "\n")
    results = tmp_path / "results"
    assert main(["run", "--preset", "citeseer", "--src", str(odd), "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot tell the corpus kind" in err and "Traceback" not in err
    assert not results.exists()  # no notebook ran


def test_kernel_runs_this_interpreter() -> None:
    assert Path(check_kernel("python3")).exists()
    with pytest.raises(RuntimeError, match="ipykernel install"):
        check_kernel("no-such-kernel-anywhere")


def test_pipeline_runs_a_notebook_with_the_preset_parameters(fake_layout, tmp_path: Path) -> None:
    notebooks, params = fake_layout
    fake_notebook(
        notebooks / f"{NOTEBOOKS[0]}.ipynb",
        read_value(params) + "from specter_utils.runs import write_metrics\n"
        f"write_metrics(run_dir, {NOTEBOOKS[0]!r}, {{'value': value + 1}})",
    )
    result = run_pipeline(
        "smoke",
        run="t",
        notebooks=["01"],
        setup=PipelineSetup(tmp_path / "results", tmp_path / "figs", params, notebooks, progress_bar=False, echo=quiet),
    )
    out = tmp_path / "results" / "t" / NOTEBOOKS[0]
    assert json.loads((out / "metrics.json").read_text()) == {"value": 42}
    assert (out / f"{NOTEBOOKS[0]}.ipynb").exists()
    assert "total:" in result.summary()
    assert "n_papers: 41  # preset smoke" in (tmp_path / "results" / "t" / "spec.yaml").read_text()


def test_pipeline_failure_shows_the_cell_and_the_error(fake_layout, tmp_path: Path) -> None:
    notebooks, params = fake_layout
    fake_notebook(
        notebooks / f"{NOTEBOOKS[0]}.ipynb", read_value(params) + "x = value * 2\nraise ValueError(f'broken at {x}')"
    )
    with pytest.raises(PipelineError) as info:
        run_pipeline(
            "smoke",
            run="t",
            notebooks=["01"],
            setup=PipelineSetup(
                tmp_path / "results", tmp_path / "figs", params, notebooks, progress_bar=False, echo=quiet
            ),
        )
    message = str(info.value)
    assert f"notebook {NOTEBOOKS[0]} failed in cell" in message
    assert "raise ValueError(f'broken at {x}')" in message  # the cell's source
    assert "ValueError: broken at 82" in message  # the error, with the specification's value read


def test_an_unknown_or_mistyped_override_fails_before_any_notebook(fake_layout, tmp_path: Path) -> None:
    notebooks, params = fake_layout
    fake_notebook(notebooks / f"{NOTEBOOKS[0]}.ipynb", "raise AssertionError('never run')")
    common = {"notebooks": ["01"], "setup": PipelineSetup(tmp_path, tmp_path, params, notebooks, echo=quiet)}
    with pytest.raises(KeyError, match="data.valeu"):
        run_pipeline("smoke", overrides={"data.valeu": 3}, **common)
    with pytest.raises(TypeError, match="data.n_papers"):
        run_pipeline("smoke", overrides={"data.n_papers": "three"}, **common)


def test_cli_set_rejects_an_unknown_key(capsys) -> None:
    assert main(["run", "--preset", "smoke", "--set", "training.epochz=1"]) == 2
    assert "training.epochz" in capsys.readouterr().err


def test_cli_rejects_an_unknown_preset(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--preset", "nope"])
    assert "invalid choice" in capsys.readouterr().err


def test_results_table_and_labels_say_when_the_corpus_is_synthetic(tmp_path):
    import json

    from specter_utils.runs import RunPaths, corpus_label
    from specter_utils.workflow.evaluate import write_results_table

    run_dir = tmp_path / "run"
    bench = RunPaths.of(run_dir).benchmark_dir
    bench.mkdir(parents=True)
    (bench / "benchmark.json").write_text(json.dumps({"corpus": "synthetic", "synthetic": True}))
    assert "SYNTHETIC" in corpus_label(run_dir)
    result = {"cite": {"map": 50.0, "ndcg": 70.0}}
    table = write_results_table({"trained": result}, run_dir / "05_scidocs_eval")
    assert table.startswith("Benchmark: synthetic corpus (SYNTHETIC data)")
    assert "SYNTHETIC" in (run_dir / "05_scidocs_eval" / "results.md").read_text()

    (bench / "benchmark.json").write_text(json.dumps({"corpus": "hepth", "synthetic": False}))
    assert corpus_label(run_dir) == "hepth"
    tables = {"corpus": "tables", "corpus_info": {"info": {"source": "../shared/data/arxiv2023"}}}
    (bench / "benchmark.json").write_text(json.dumps(tables))
    assert corpus_label(run_dir) == "arxiv2023 (tables)"  # the generic reader names the folder it read


def test_papers_to_embed_for_one_split_takes_exactly_what_its_evaluation_reads(tmp_path):
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.scidocs import read_scidocs_dir
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.workflow.embed import papers_to_embed

    build_benchmark(generate_synthetic_corpus(n_papers=300, seed=3), tmp_path, seed=0, n_queries=30)
    scidocs = tmp_path / "scidocs"
    data = read_scidocs_dir(scidocs)
    every = papers_to_embed(scidocs)
    assert set(every) == set(data.metadata["view_cite_read"]) | set(data.metadata["mag_mesh"])
    test = papers_to_embed(scidocs, split="test")
    expected = {pid for part in ("train", "val", "test") for pid, _ in data.classification["mag"][part]}
    for task in ("cite", "cocite"):
        expected |= {p for q, docs in data.ranking[task]["test"].items() for p in (q, *docs)}
    assert set(test) == expected
    cite_val = papers_to_embed(scidocs, split="val", tasks=["co-cite"])  # either spelling of a task
    assert set(cite_val) == {p for q, docs in data.ranking["cocite"]["val"].items() for p in (q, *docs)}
    assert len(cite_val) < len(every)
    with pytest.raises(ValueError, match="'all', 'test' or 'val'"):
        papers_to_embed(scidocs, split="train")


def test_report_command_copies_a_finished_runs_notebooks(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "results" / "r"
    for notebook in NOTEBOOKS[:2]:
        (run_dir / notebook).mkdir(parents=True)
        nbformat.write(
            new_notebook(cells=[new_markdown_cell(f"# {notebook}")]), run_dir / notebook / f"{notebook}.ipynb"
        )
    (run_dir / "pipeline.json").write_text(
        json.dumps({"preset": "hepth", "notebooks": {NOTEBOOKS[0]: {"seconds": 12}}})
    )
    (run_dir / "spec.yaml").write_text("seed: 0\n")
    out = tmp_path / "reports" / "hepth"
    argv = ["report", "--run", "r", "--results-dir", str(tmp_path / "results"), "--out", str(out)]
    assert main(argv) == 2  # two notebooks without a commit are not one report at one commit
    assert "not one report at one commit" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--allow-mixed"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", "spec.yaml", "pipeline.json", "metrics", *(f"{nb}.ipynb" for nb in NOTEBOOKS[:2])]
    )
    index = (out / "README.md").read_text()
    assert "`hepth` run" in index and f"| [{NOTEBOOKS[0]}]({NOTEBOOKS[0]}.ipynb) | 12 s |" in index
    assert "**Not one commit**" in index
    assert main(["report", "--run", "missing", "--results-dir", str(tmp_path / "results")]) == 2
    assert "no executed notebooks" in capsys.readouterr().err


def test_a_partial_run_keeps_the_other_notebooks_record(tmp_path: Path) -> None:
    from specter_utils.pipeline import PIPELINE_FILE, record_notebook, source_commit

    run_dir = tmp_path / "r"
    run_dir.mkdir()
    record_notebook(run_dir, "hepth", {}, None, NOTEBOOKS[1], {"seconds": 7.0})
    record_notebook(run_dir, "hepth", {}, None, NOTEBOOKS[0], {"seconds": 17.0})
    changed = {"ablations.seeds": [0, 1]}
    record_notebook(run_dir, "hepth", changed, None, NOTEBOOKS[1], {"seconds": 9.0})  # a later run of one notebook
    saved = json.loads((run_dir / PIPELINE_FILE).read_text())
    assert list(saved["notebooks"]) == [NOTEBOOKS[0], NOTEBOOKS[1]]  # the canonical order, both kept
    assert saved["notebooks"][NOTEBOOKS[0]]["seconds"] == 17.0 and saved["notebooks"][NOTEBOOKS[0]]["overrides"] == {}
    assert saved["notebooks"][NOTEBOOKS[1]]["seconds"] == 9.0
    assert saved["notebooks"][NOTEBOOKS[1]]["overrides"] == changed and saved["overrides"] == changed
    assert (
        saved["notebooks"][NOTEBOOKS[1]]["commit"] == source_commit()
        and "UTC" in saved["notebooks"][NOTEBOOKS[1]]["finished"]
    )
    record_notebook(run_dir, "demo", {}, None, NOTEBOOKS[2], {"seconds": 1.0})  # another preset starts afresh
    assert list(json.loads((run_dir / PIPELINE_FILE).read_text())["notebooks"]) == [NOTEBOOKS[2]]
