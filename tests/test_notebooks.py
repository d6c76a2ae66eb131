"""The numbered notebooks: house rules checked statically, then every notebook run with the smoke preset.

The smoke run (``-m notebooks``) executes the whole pipeline once with ``params/smoke.yaml`` through
papermill on CPU (a few minutes on a free 2-core machine) and asserts on each notebook's metrics.json
and on its executed copy (every notebook shows at least one table or figure).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from specter_utils.paths import NOTEBOOKS_DIR
from specter_utils.pipeline import NOTEBOOKS, RUN_PARAMETERS, SPEC_FILE
from specter_utils.spec import PRESETS, load_spec

NOTEBOOK_PATHS = {name: NOTEBOOKS_DIR / f"{name}.ipynb" for name in NOTEBOOKS}


def read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOK_PATHS[name], as_version=4)


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_the_notebook_folder_holds_exactly_the_pipeline() -> None:
    assert sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_title_bootstrap_and_one_parameters_cell(name: str) -> None:
    nb = read(name)
    title, bootstrap, parameters = nb.cells[:3]
    assert title.cell_type == "markdown" and title.source.startswith(f"# {name[:2]} ")
    assert "**Reads**" in title.source or "**Writes**" in title.source
    assert bootstrap.cell_type == "code" and '"google.colab" in sys.modules' in bootstrap.source
    assert "from specter_utils.colab import bootstrap" in bootstrap.source  # the one helper, not a copied body
    assert not any(line.lstrip().startswith(("!", "%")) for line in bootstrap.source.splitlines())
    tagged = [cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", [])]
    assert tagged == [parameters], "exactly one cell tagged 'parameters', right after the bootstrap cell"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_are_typed_literals_with_a_comment(name: str) -> None:
    parameters = read(name).cells[2]
    tree = ast.parse(parameters.source)
    assert tree.body and all(isinstance(node, ast.AnnAssign) for node in tree.body)
    for node in tree.body:
        ast.literal_eval(node.value)  # a literal, nothing computed
    for line in parameters.source.splitlines():
        assert "  # " in line and line.count("=") == 1, f"one parameter per line with a comment: {line!r}"
    documented = pm.inspect_notebook(str(NOTEBOOK_PATHS[name]))
    assert set(documented) == {node.target.id for node in tree.body}
    assert all(spec["help"] for spec in documented.values())
    assert "run_dir" in documented


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_outputs_and_no_definitions(name: str) -> None:
    nb = read(name)
    for cell in code_cells(nb):
        assert cell.outputs == [] and cell.execution_count is None, "strip outputs (nbstripout)"
        for node in ast.walk(ast.parse(cell.source)):
            assert not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)), (
                f"{name}: logic belongs in specter_utils, not in a notebook cell"
            )
        assert "!" not in "".join(line.lstrip()[:1] for line in cell.source.splitlines())


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_cell_has_an_id(name: str) -> None:
    cells = json.loads(NOTEBOOK_PATHS[name].read_text(encoding="utf-8"))["cells"]  # as stored, before nbformat fills
    assert all(cell.get("id") for cell in cells), f"{name}: a cell without an id (nbformat 4.5)"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_sections_are_numbered_and_the_last_cell_writes_metrics(name: str) -> None:
    nb = read(name)
    headings = [cell.source.splitlines()[0] for cell in nb.cells[3:] if cell.cell_type == "markdown"]
    assert headings and all(h.startswith(f"## {i}. ") for i, h in enumerate(headings, start=1)), headings
    assert f'write_metrics(run_dir, "{name}"' in code_cells(nb)[-1].source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_declare_no_setting_of_their_own(name: str) -> None:
    """Settings live in the run specification only: a notebook declares the run's folder, preset and overrides."""
    declared = set(pm.inspect_notebook(str(NOTEBOOK_PATHS[name])))
    assert set(RUN_PARAMETERS) <= declared <= {*RUN_PARAMETERS, "figures_dir"}, sorted(declared)


SPEC_KEY = re.compile(r"""spec\[["']([a-z_.]+)["']\]""")
SPEC_SECTION = re.compile(r"""spec\.(?:section|frame)\(([^)]*)\)""")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_setting_a_notebook_reads_exists_in_every_preset(name: str) -> None:
    """The keys and sections a notebook reads are the specification's, in all four presets (no typo, no private copy)."""
    source = "\n".join(cell.source for cell in code_cells(read(name)))
    keys = set(SPEC_KEY.findall(source))
    sections = {s for args in SPEC_SECTION.findall(source) for s in re.findall(r"""["']([a-z_]+)["']""", args)}
    assert "load_spec(preset, overrides)" in source
    for preset in PRESETS:
        spec = load_spec(preset)
        assert keys <= set(spec), (preset, sorted(keys - set(spec)))
        for section in sections:
            spec.section(section)


# ---------------------------------------------------------------- smoke run of the whole pipeline
def smoke_overrides(base_model: Path) -> dict[str, str]:
    """The smoke preset as the tests run it: every model trained and embedded starts from ``base_model``, and the
    run hands over its trained model (training.keep=last; the validation verdict is still scored and shown): two
    optimiser steps need not beat the base on 7 validation queries, and the tests check what was trained. One
    SciRepEval-format task of the preset's four: notebook 05's formats section still builds, embeds and compares
    it, and no test here reads its scores (tests/test_formats_paired.py does, on its own data)."""
    return {"training.base_model": str(base_model), "training.keep": "last", "data.scirepeval_tasks": ["same-author"]}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, minilm_two_layers: Path) -> tuple[Path, Path]:
    """The whole pipeline on the smoke preset, from MiniLM cut to 2 layers (tests/conftest.py): pretrained, so the
    trained model and the heads still beat random and chance, at a third of the compute of the preset's 6 layers."""
    from specter_utils.pipeline import PipelineSetup, run_pipeline

    root = tmp_path_factory.mktemp("smoke")
    setup = PipelineSetup(root / "results", root / "figures", progress_bar=False)
    result = run_pipeline("smoke", run="smoke", overrides=smoke_overrides(minilm_two_layers), setup=setup)
    return result.run_dir, root / "figures"


def metrics(run_dir: Path, name: str) -> dict:
    path = run_dir / name / "metrics.json"
    assert path.exists(), f"{name} wrote no metrics.json"
    assert (run_dir / name / f"{name}.ipynb").exists(), "the executed copy is kept beside its metrics"
    return json.loads(path.read_text())


@pytest.mark.notebooks
def test_smoke_prepare_and_mine(smoke_run) -> None:
    run_dir, _ = smoke_run
    prepared = metrics(run_dir, "01_prepare_data")
    assert prepared["synthetic"] is True
    assert prepared["benchmark"]["cite"]["queries"] > 0 and prepared["benchmark"]["mag"]["classes"] >= 2
    assert prepared["benchmark"]["mag"]["sampled_fraction"] < 1  # max_class_papers took a stratified sample
    mined = metrics(run_dir, "02_mine_triplets")
    assert mined["train"]["triplets"]["total"] > 0 and mined["train"]["triplets"]["hard"] > 0
    assert mined["leakage"]["leak_free"] is True


@pytest.mark.notebooks
def test_smoke_training_ran_and_saved_a_model(smoke_run) -> None:
    run_dir, _ = smoke_run
    trained = metrics(run_dir, "03_train_specter")
    assert trained["results"]["global_step"] >= 1
    assert (Path(trained["model_dir"]) / "config.json").exists()


@pytest.mark.notebooks
def test_smoke_embeddings_cover_every_paper(smoke_run) -> None:
    run_dir, _ = smoke_run
    embedded = metrics(run_dir, "04_embed_papers")["embeddings"]
    assert {"base", "trained", "random", "sif", "sgc"} <= set(embedded)
    assert {info["count"] for info in embedded.values()} == {metrics(run_dir, "04_embed_papers")["papers"]}


@pytest.mark.notebooks
def test_smoke_trained_model_beats_random_on_cite(smoke_run) -> None:
    from specter_utils.presentation.tables import metric_values

    run_dir, _ = smoke_run
    results = metrics(run_dir, "05_scidocs_eval")["results"]
    assert list(results)[:2] == ["trained", "base"]
    coverage = results["trained"]["coverage"]  # notebook 04 embedded only the test split: still nothing missing
    assert coverage["mag"]["test"]["zero_filled"] == coverage["mag"]["train"]["zero_filled"] == 0
    assert coverage["cite"]["candidates_missing"] == 0 and coverage["cite"]["queries_evaluated"] > 0
    trained, random = metric_values(results["trained"]), metric_values(results["random"])
    assert trained[("cite", "map")] > random[("cite", "map")] + 10
    assert ("mag", "f1") in trained and ("co-cite", "ndcg") in trained
    table = (run_dir / "05_scidocs_eval" / "results.md").read_text()
    assert "| trained |" in table and "| SPECTER (paper) |" in table


@pytest.mark.notebooks
def test_smoke_table1_under_the_time_split(smoke_run) -> None:
    run_dir, _ = smoke_run
    split = metrics(run_dir, "05_scidocs_eval")["time_split"]
    assert split["made"]["split"]["split_by"] == "date" and split["made"]["leakage"]["leak_free"]
    assert {"trained", "base", "bm25", "in-degree"} <= set(split["results"])
    assert {d["task"] for d in split["deltas"] if d["row"] == "trained"} >= {"cite", "cite (matched)"}
    table = run_dir / "05_scidocs_eval" / "time_split" / "05_scidocs_eval" / "results.md"
    assert "| trained |" in table.read_text()


@pytest.mark.notebooks
def test_smoke_analysis_scores_and_figure(smoke_run) -> None:
    run_dir, figures = smoke_run
    analysis = metrics(run_dir, "06_embedding_analysis")
    for model in ("base", "trained"):
        scores = analysis["scores"]["tsne"][model]
        assert 0 <= scores["homogeneity"] <= 1 and 0 <= scores["completeness"] <= 1
        assert scores["min_samples"] == 4 and scores["eps"] > 0
        assert len(scores["per_seed"]["homogeneity"]) == len(analysis["projection_seeds"]) >= 5
        assert 0 <= analysis["space"]["models"][model]["knn_agreement"] <= 1
        assert set(analysis["eps_grid"]["tsne"][model]) == {"0.5", "0.75", "1", "1.5", "2"}
    assert "knee" in analysis["dbscan_rule"]
    assert {"knn_agreement", "silhouette"} == set(analysis["space"]["versus"]["trained"])
    assert "homogeneity" in analysis["versus"]["tsne"]["trained"]["1"]
    for ext in ("png", "pdf"):
        assert (figures / f"figure2_{run_dir.name}.{ext}").stat().st_size > 0


@pytest.mark.notebooks
def test_smoke_ablations_scored_each_variant(smoke_run) -> None:
    from specter_utils.presentation.tables import metric_values

    run_dir, figures = smoke_run
    seven = metrics(run_dir, "07_ablations")
    variants = seven["variants"]  # {row: {seed: result}}
    seeds = [str(s) for s in seven["spec"]["ablations"]["seeds"]]
    assert set(variants) == {"specter", "no_hard_negatives"}
    assert all(sorted(v) == sorted(seeds) for v in variants.values())
    main_seed = str(seven["seed"])
    for seed in seeds:
        assert (
            variants["no_hard_negatives"][seed]["triplets"]["hard"] == 0 < variants["specter"][seed]["triplets"]["hard"]
        )
    for by_seed in variants.values():
        for result in by_seed.values():
            assert ("cite", "map") in metric_values(result["results"])
    table = (run_dir / "07_ablations" / "ablations.md").read_text()
    assert "| no_hard_negatives |" in table and "±" in table and "paired test vs specter" in table
    assert (
        seven["statistics"]["paired"]["rows"]["no_hard_negatives"]["tasks"]["cite"]["versus"]["specter"]["queries"] > 1
    )
    for ext in ("png", "pdf"):
        assert (figures / f"table2_{run_dir.name}.{ext}").stat().st_size > 0
    # the reference row's run seed is the main run's trained model: the same numbers as the trained row of 05
    main = metric_values(metrics(run_dir, "05_scidocs_eval")["results"]["trained"])
    reference = metric_values(variants["specter"][main_seed]["results"])
    assert reference and all(main[key] == value for key, value in reference.items())
    lengths = {r["embedding"]["max_length"] for v in variants.values() for r in v.values()}
    assert lengths == {metrics(run_dir, "04_embed_papers")["embeddings"]["base"]["max_length"]}


@pytest.mark.notebooks
def test_smoke_every_notebook_read_the_same_specification(smoke_run, minilm_two_layers) -> None:
    """No two notebooks of one run read different values for one setting: each records the spec it read."""
    import yaml

    run_dir, _ = smoke_run
    written = yaml.safe_load((run_dir / SPEC_FILE).read_text())
    for name in NOTEBOOKS:
        assert metrics(run_dir, name)["spec"] == written, name
    assert written == load_spec("smoke", smoke_overrides(minilm_two_layers)).to_dict()


@pytest.mark.notebooks
def test_smoke_every_notebook_shows_a_table_or_a_figure(smoke_run) -> None:
    run_dir, _ = smoke_run
    for name in NOTEBOOKS:
        executed = nbformat.read(run_dir / name / f"{name}.ipynb", as_version=4)
        shown = [
            output
            for cell in code_cells(executed)
            for output in cell.outputs
            if "image/png" in output.get("data", {})
            or "<table" in str(output.get("data", {}).get("text/html", ""))
            or "|---" in str(output.get("data", {}).get("text/markdown", ""))
        ]
        assert shown, f"{name} shows no table or figure"
    curves = nbformat.read(run_dir / "03_train_specter" / "03_train_specter.ipynb", as_version=4)
    assert any("image/png" in o.get("data", {}) for c in code_cells(curves) for o in c.outputs)


@pytest.mark.notebooks
def test_smoke_report_copies_the_executed_notebooks(smoke_run, tmp_path) -> None:
    from specter_utils.report import write_report

    run_dir, _ = smoke_run
    out = write_report(run_dir, tmp_path / "reports" / "smoke", allow_mixed=True)  # the checkout may be dirty here
    assert sorted(p.stem for p in out.glob("*.ipynb")) == sorted(NOTEBOOKS)
    copied = nbformat.read(out / "05_scidocs_eval.ipynb", as_version=4)
    assert any(cell.outputs for cell in code_cells(copied))  # with its outputs
    index = (out / "README.md").read_text()
    assert "[05_scidocs_eval](05_scidocs_eval.ipynb)" in index and (out / "spec.yaml").exists()
    assert (out / "results.md").exists() and (out / "ablations.md").exists()
    assert sorted(p.stem for p in (out / "metrics").glob("*.json")) == sorted(NOTEBOOKS)
    record = json.loads((out / "pipeline.json").read_text())
    assert set(record["notebooks"]) == set(NOTEBOOKS) and record["machine"]["cores"] >= 1


@pytest.mark.notebooks
def test_smoke_notebooks_keep_their_logs_out(smoke_run) -> None:
    run_dir, _ = smoke_run
    for name in NOTEBOOKS:
        executed = nbformat.read(run_dir / name / f"{name}.ipynb", as_version=4)
        streams = [o for cell in code_cells(executed) for o in cell.outputs if o.output_type == "stream"]
        assert not streams, f"{name} keeps {len(streams)} stream outputs"
    train_log = (run_dir / "03_train_specter" / "03_train_specter.log").read_text()
    assert "loss" in train_log  # the training log went to the file


@pytest.mark.notebooks
def test_smoke_heads_beat_chance(smoke_run) -> None:
    run_dir, figures = smoke_run
    heads = metrics(run_dir, "08_classification_heads")
    n_classes = heads["frozen"]["trained"]["n_classes"]
    spec = load_spec("smoke")
    length, end_to_end_length = spec["embedding.max_length"], spec["heads.end_to_end.max_length"]
    assert length != end_to_end_length  # the preset keeps the frozen rows and the end-to-end ones apart
    frozen = [r for r in heads["rows"] if r["training"] == "frozen" and r["max_length"] == length]
    assert {r["head"] for r in frozen} == {"linear SVM (SCIDOCS)", "linear", "1x64"}
    assert {r["seed"] for r in frozen} == {None, 0, 1}
    for row in frozen:
        assert row["macro_f1"] > 100 / n_classes + 20, row
    runs = heads["end_to_end"]["runs"]
    assert [(r["head"], r["seed"]) for r in runs] == [("1x64", 0), ("1x64", 1)]
    assert all(Path(r["model_dir"], "modules.json").exists() for r in runs)  # sentence-transformers models
    for model, scores in heads["end_to_end"]["geometry"]["scores"]["tsne"].items():
        assert 0 <= scores["homogeneity"] <= 1 and 0 <= scores["completeness"] <= 1, model
    assert {"before", "1x64 seed 0", "1x64 seed 1"} == set(heads["end_to_end"]["geometry"]["scores"]["tsne"])
    assert (figures / f"heads_geometry_{run_dir.name}.png").stat().st_size > 0
    table = {(r["head"], r["training"], r["max_length"]) for r in heads["table"]}
    assert ("1x64", "end to end", end_to_end_length) in table and ("1x64", "frozen", end_to_end_length) in table
    # each classifier against its frozen reference, with an interval; no per-paper labels in the metrics file
    compared = {d["row"].split(": ", 1)[1] for d in heads["deltas"]}
    assert {"linear SVM (SCIDOCS), frozen vs linear, frozen", "1x64, end to end vs 1x64, frozen"} <= compared
    assert all(d["ci_low"] <= d["ci_high"] and d["metric"] == "macro-F1" for d in heads["deltas"])
    assert not any("test_predicted" in r or "test_labels" in r for r in heads["rows"])
