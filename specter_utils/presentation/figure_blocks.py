"""The generated blocks of README.md and docs/results.md that show the embedding space and the README's two
images: Figure 2 (notebook 06's full space, then DBSCAN on the maps beside the paper's values) and the Table 1
chart, each read from the committed reports (``presentation.report_folder``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from specter_utils.analysis.geometry import PAPER_FIGURE2
from specter_utils.presentation import overview
from specter_utils.presentation.interpret import VERDICT, geometry_findings
from specter_utils.presentation.report_folder import (
    METRICS_DIR,
    Report,
    benchmark_of,
    figure2_rows,
    load_reports,
    training_length,
)
from specter_utils.presentation.tables import interval_text, mean_sd_text


# ---------------------------------------------------------------- Figure 2 (the full space, then DBSCAN on the maps)
def _figure2_where(report: Report, link_of: Mapping[str, str]) -> str:
    analysis = report.metrics.get("06_embedding_analysis") or {}
    source = f"{link_of[report.preset]}/{METRICS_DIR}/06_embedding_analysis.json"
    papers = f"{analysis['n_papers']:,}" if analysis.get("n_papers") is not None else "?"
    return f"[{benchmark_of(report).corpus}]({source}), {papers} `mag` papers of {analysis.get('n_classes')} classes"


def _grid_cell(grid: Mapping[str, int]) -> str:
    signs = list(grid.values())
    counts = ", ".join(f"{label} {signs.count(sign)}" for sign, label in ((1, "higher"), (-1, "lower"), (0, "none")))
    return f"{counts} (of {len(grid)})"


def figure2_block(reports: Iterable[Report], link_of: Mapping[str, str], compact: bool = False) -> str:
    """Every report with notebook 06's metrics: the full-space measures (paired over papers) first, then the
    paper's protocol (DBSCAN on the maps, over projection seeds and the eps grid) beside the paper's values, then
    one sentence per report, each difference read by the verdict rule (``interpret.geometry_findings``). With
    ``compact`` (the README): the full-space table only, each benchmark named by its preset too."""
    space_lines = [
        "| benchmark | measure (full space, cosine) | base | trained | trained − base [95% CI over papers], p | verdict |",
        "|---|---|---|---|---|---|",
    ]
    map_lines = [
        "| benchmark | projection | measure | base | trained | trained − base [95% CI over seeds] | verdict "
        "| verdicts over the eps grid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sentences = []
    for report in reports:
        rows = figure2_rows(report)
        if not rows:
            continue
        analysis = report.metrics["06_embedding_analysis"]
        where = _figure2_where(report, link_of)
        if compact:
            where = f"`{report.preset}`: {where}"
        findings = geometry_findings(analysis)
        space = analysis.get("space") or {}
        for f in (f for f in findings if f["kind"] == "space"):
            means = space["models"]
            what = f"{f['what']} (k = {space['k']})" if f["measure"] == "knn_agreement" else f["what"]
            space_lines.append(
                f"| {where} | {what} | {means['base'][f['measure']]:.3f} | {means['trained'][f['measure']]:.3f} "
                f"| {interval_text(f['test'], 3)} | {VERDICT[f['shown']]} |"
            )
        tested = {(f["method"], f["measure"]): f for f in findings if f["kind"] == "projection"}
        by_key = {(r["method"], r["model"]): r for r in rows}
        for method in dict.fromkeys(r["method"] for r in rows):
            base, trained = by_key.get((method, "base")), by_key.get((method, "trained"))
            if not base or not trained:
                continue
            for measure in ("homogeneity", "completeness"):
                f = tested.get((method, measure))
                seeds = f"{base['seeds']} projection seed{'s' if base['seeds'] != 1 else ''}"
                cells = (
                    f"{interval_text(f['test'], 2)} | {VERDICT[f['shown']]} | {_grid_cell(f['grid'])}"
                    if f and f["test"]["seeds"] > 1
                    else f"{trained[measure] - base[measure]:+.2f} | not tested ({seeds}) | "
                )
                map_lines.append(
                    f"| {where} | {method} | {measure} | {mean_sd_text(base, measure)} | {mean_sd_text(trained, measure)} "
                    f"| {cells} |"
                )
        name = f"**{benchmark_of(report).corpus}** ([`{report.preset}`]({link_of[report.preset]}))"
        if not findings:
            old = "one projection seed and no full-space measures (the report predates them): no direction is stated"
            sentences.append(f"- {name}: {old}.")
            continue
        in_space = [f"{f['what']} {VERDICT[f['shown']]}" for f in findings if f["kind"] == "space"]
        on_maps = [f"{f['what']} {VERDICT[f['shown']]}" for f in findings if f["kind"] == "projection"]
        space_shown = {f["shown"] for f in findings if f["kind"] == "space"}
        if space_shown == {1}:
            paper = (
                "the paper's direction (a more topic-homogeneous space after training) is confirmed in the full space"
            )
        elif space_shown == {-1}:
            paper = "the full space goes against the paper's direction (a more topic-homogeneous space after training)"
        else:
            paper = "the full space neither confirms nor contradicts the paper's direction as a whole"
        seeds = len(analysis.get("projection_seeds") or [])
        length = training_length(report)
        sentences.append(
            f"- {name}, trained against base{f' ({length})' if length else ''}: in the full space {', '.join(in_space)}, so {paper}; on the maps "
            f"(DBSCAN at the knee, {seeds} projection seeds) {', '.join(on_maps)}."
        )
    if compact and len(space_lines) > 2:
        lead = (
            "Trained against base in the full space (no projection): each model's mean over the papers, the "
            "difference paired paper by paper (95% bootstrap interval, p), higher or lower only where the "
            "Holm-adjusted p is under 0.05. The maps' DBSCAN scores beside the paper's: "
            "[docs/results.md](docs/results.md#figure-2-the-embedding-space-notebook-06)."
        )
        return "\n".join([lead, "", *space_lines])
    if len(space_lines) == 2 and len(map_lines) == 2:
        none = "No report holds notebook 06's metrics yet; the rows above are the paper's."
        return "\n".join([*map_lines, *_paper_figure2_rows(), "", none])
    return "\n".join(
        [
            "In the full space (no projection, no eps): each model's mean over the papers, and trained − base paired "
            "paper by paper (95% bootstrap interval and p; a report written before evaluation.hierarchical keeps a "
            "permutation p and reads as pending); the verdict is higher or lower only where the Holm-adjusted p "
            "(the full space and the maps at the knee one family) is under 0.05.",
            "",
            *space_lines,
            "",
            "The paper's protocol: DBSCAN (eps at the knee) on each t-SNE / UMAP map, mean ± sd over the projection "
            "seeds, trained − base paired by seed with its 95% interval over seeds and p (the seeds' bootstrap of "
            "evaluation.hierarchical); the verdict is higher or lower only where the Holm-adjusted p is under 0.05, "
            "at the knee and at each eps of the grid (eps / knee from 0.5 to 2, a family of its own).",
            "",
            *map_lines,
            *_paper_figure2_rows(),
            "",
            *sentences,
        ]
    )


def _paper_figure2_rows() -> list[str]:
    """The paper's values: SPECTER paper, Section 6 and Figure 2 (t-SNE of SCIDOCS MAG papers, DBSCAN), one map."""
    sci, spe = PAPER_FIGURE2["SciBERT"], PAPER_FIGURE2["SPECTER"]
    return [
        f"| SCIDOCS MAG (paper, Section 6 / Figure 2) | tsne | {m} | {sci[m]:.2f} (SciBERT) | {spe[m]:.2f} (SPECTER) "
        f"| {spe[m] - sci[m]:+.2f} | one map, not tested | |"
        for m in ("homogeneity", "completeness")
    ]


# ---------------------------------------------------------------- the README's two images
def figure2_pick(reports: Iterable[Report], root: Path) -> tuple[Report, Path] | None:
    """The report whose Figure 2 the README shows, and its image: of the reports whose notebook 06 wrote a figure
    still under ``root``, the one whose labels carry the most topic signal (the base model's full-space k-NN topic
    agreement, highest first), so the maps show classes a reader can see."""
    best: tuple[float, Report, Path] | None = None
    for report in reports:
        analysis = report.metrics.get("06_embedding_analysis") or {}
        agreement = (((analysis.get("space") or {}).get("models") or {}).get("base") or {}).get("knn_agreement")
        figure = root / str(analysis.get("figure") or "")
        if agreement is None or not analysis.get("figure") or not figure.is_file():
            continue
        if best is None or agreement > best[0]:
            best = (float(agreement), report, figure)
    return (best[1], best[2]) if best else None


def chart_points(reports: Iterable[Report]) -> list[overview.Point]:
    """The Table 1 chart's dots of every report with notebook 05's metrics."""
    points: list[overview.Point] = []
    for report in reports:
        evaluation = report.metrics.get("05_scidocs_eval") or {}
        points += overview.chart_points(report.preset, benchmark_of(report).corpus, evaluation)
    return points


def write_table1_chart(reports_root: str | Path) -> Path | None:
    """Draw the Table 1 chart from the reports to ``<repository>/figures/table1_map.png`` (None: no report has
    notebook 05's metrics, nothing is written)."""
    reports_root = Path(reports_root)
    points = chart_points(load_reports(reports_root) if reports_root.is_dir() else [])
    if not points:
        return None
    return overview.write_chart(overview.table1_chart(points), reports_root.parent / overview.CHART_FILE)


def overview_block(reports: list[Report], root: Path, target: str | Path) -> str:
    """The README's images, Figure 2's maps then the Table 1 chart, each with what it shows and where it comes
    from (links relative to ``target``)."""

    def link(path: Path) -> str:
        return os.path.relpath(path, Path(target).parent).replace(os.sep, "/")

    lines = []
    picked = figure2_pick(reports, root)
    if picked:
        report, figure = picked
        analysis = report.metrics["06_embedding_analysis"]
        agreement = analysis["space"]["models"]["base"]["knn_agreement"]
        corpus = benchmark_of(report).corpus
        lines += [
            f"![Figure 2, preset {report.preset} on {corpus}: t-SNE and UMAP maps of base and trained]({link(figure)})",
            "",
            f"*Figure 2 (notebook 06), preset `{report.preset}` on {corpus}: {analysis.get('n_papers', 0):,} papers "
            f"coloured by their {analysis.get('labelled_by', 'labels')} ({analysis.get('n_classes')} classes), "
            "base model left, trained right, t-SNE above and UMAP below, DBSCAN's scores over the projection seeds "
            "in each title. Shown because its labels carry the most topic signal of the committed reports (the base "
            f"model's k-NN topic agreement {agreement:.3f}, [metrics]({link(report.folder)}/{METRICS_DIR}/"
            "06_embedding_analysis.json)).*",
        ]
    points = chart_points(reports)
    if points:
        presets = list(dict.fromkeys(p.preset for p in points))
        without = [preset for preset in presets if not any(p.preset == preset and p.low is not None for p in points)]
        lines += [
            "",
            f"![Table 1 as a chart: cite and co-cite MAP against the base model per preset]({link(root / overview.CHART_FILE)})",
            "",
            "*Table 1 (notebook 05) per committed report: the trained model, TF-IDF-SVD and BM25 as their difference "
            "to the base model in MAP points, with the paired 95% interval over queries where the report kept one "
            "(hollow dot: none"
            + (f"; BM25 everywhere, and every row of {', '.join(f'`{p}`' for p in without)}" if without else "")
            + "). Drawn by `specter-utils report --readme` from each `reports/<preset>/metrics/05_scidocs_eval.json`.*",
        ]
    return "\n".join(lines).strip() or "No report holds notebook 05 or 06 metrics yet."
