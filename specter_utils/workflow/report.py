"""The report stage: a finished run copied to ``reports/<preset>/``, and the generated blocks of the README and
docs rewritten (or checked) from the committed reports. ``specter-utils report`` and ``run --report`` call it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.paths import REPO_ROOT
from specter_utils.presentation.figure_blocks import write_table1_chart
from specter_utils.presentation.overview import CHART_FILE
from specter_utils.presentation.readme import check_file, preset_drift, update_file
from specter_utils.presentation.report_folder import load_reports
from specter_utils.report import write_report

__all__ = ["README_FILES", "refresh_generated_blocks", "write_report"]

README_FILES = ("README.md", "docs/results.md", "docs/benchmarks.md")  # the files whose generated blocks are ours


def refresh_generated_blocks(
    root: Path = REPO_ROOT, check: bool = False, warn: Callable[[str], None] = print
) -> Iterator[tuple[str, list[str]]]:
    """``(file, blocks rewritten)`` for each of :data:`README_FILES` under ``root``, from ``root/reports``; with
    ``check`` nothing is written, and a stale block or a report that drifted from its preset is a DataError."""
    if not root.is_dir():
        raise DataError("--root: no such folder", root)
    reports = load_reports(root / "reports") if (root / "reports").is_dir() else []
    for report in reports:  # a committed report must be what its preset runs today
        drift = preset_drift(report, root / "params")
        if drift:
            message = (
                f"ran other settings than preset {report.preset!r} gives today ({len(drift)}; first {drift[0]}); "
                f"regenerate it with 'specter-utils run --preset {report.preset} --report'"
            )
            if check:
                raise DataError(message, report.folder / "spec.yaml")
            warn(f"warning: {report.folder / 'spec.yaml'}: {message}")
    if check:  # the chart's pixels depend on the matplotlib build, so the check asks only that it is there
        if reports and not (root / CHART_FILE).is_file():
            raise DataError("missing; run 'specter-utils report --readme' to draw it", root / CHART_FILE)
    elif reports:
        chart = write_table1_chart(root / "reports")
        if chart is not None:
            yield str(chart.relative_to(root)), ["the Table 1 chart"]
    for name in README_FILES:
        path = root / name
        if check:
            stale = check_file(path, root / "reports")
            if stale:
                raise DataError(
                    f"generated block {stale[0]!r} differs from what reports/ give; "
                    "run 'specter-utils report --readme' to rewrite it",
                    path,
                )
            yield name, []
        else:
            yield name, update_file(path, root / "reports")
