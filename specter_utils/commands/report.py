"""``specter-utils report``: copy a run's executed notebooks, with their outputs, to ``reports/<preset>/``;
``--readme`` rewrites the generated blocks of README.md, docs/results.md and docs/benchmarks.md from the reports (``--check``: compare)."""

from __future__ import annotations

import argparse

from specter_utils.config import DEFAULT_PRESET
from specter_utils.errors import DataError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``report`` to the top-level parser."""
    parser = subparsers.add_parser(
        "report",
        help="copy a run's executed notebooks (with outputs) to reports/<preset>/",
        description="Copy results/<run>/<notebook>/<notebook>.ipynb of a finished run, with every table and figure, "
        "plus each notebook's metrics, the run's record (commit, machine, wall times), its spec.yaml and results tables, to reports/<preset>/ with a README index; the notebooks' logs stay in the run folder. A run whose notebooks ran at several commits is refused unless --allow-mixed, so the repository page "
        "shows the run without running anything. The source notebooks stay stripped. "
        "'specter-utils run --preset P --report' does the same at the end of a run.",
    )
    parser.add_argument(
        "--run",
        default=DEFAULT_PRESET,
        help=f"run name under the results folder (default: {DEFAULT_PRESET}, as for run)",
    )
    parser.add_argument("--results-dir", default=None, help="root of the run folders (default: results/)")
    parser.add_argument("--preset", default=None, help="report name (default: the run's preset)")
    parser.add_argument("--out", default=None, help="output folder (default: reports/<preset>/)")
    parser.add_argument(
        "--allow-mixed",
        action="store_true",
        help="write the report even when its notebooks ran at several commits or with uncommitted changes "
        "(its README then lists each notebook's commit)",
    )
    parser.add_argument(
        "--readme",
        action="store_true",
        help="instead of copying a run: rewrite the generated blocks of README.md, docs/results.md and docs/benchmarks.md "
        "(<!-- generated:NAME --> ... <!-- /generated:NAME -->) from the reports/<preset>/ folders",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="with --readme: change nothing; exit 2 naming the first file and block that differ from the reports",
    )
    parser.add_argument(
        "--root",
        default=None,
        help="with --readme: the repository whose README.md, docs/results.md, docs/benchmarks.md and reports/ are read "
        "(default: this repository)",
    )
    parser.set_defaults(func=run)


def run_readme(args: argparse.Namespace) -> int:
    from pathlib import Path

    from specter_utils.paths import REPO_ROOT
    from specter_utils.workflow.report import refresh_generated_blocks

    root = Path(args.root) if args.root else REPO_ROOT
    for name, changed in refresh_generated_blocks(root, check=args.check):
        print(f"{name}: " + (f"rewrote {', '.join(changed)}" if changed else "up to date"))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.readme:
        return run_readme(args)
    if args.check or args.root:
        raise DataError("needs --readme", "--check" if args.check else "--root")
    from specter_utils.paths import RESULTS_DIR
    from specter_utils.runs import resolve
    from specter_utils.workflow.report import write_report

    run_dir = resolve(args.results_dir or RESULTS_DIR) / args.run
    try:
        out = write_report(run_dir, args.out, args.preset, allow_mixed=args.allow_mixed)
    except FileNotFoundError as exc:
        raise DataError(str(exc), run_dir) from None
    print(f"wrote {out} ({len(list(out.glob('*.ipynb')))} executed notebooks)")
    return 0
