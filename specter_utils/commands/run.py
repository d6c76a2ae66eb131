"""``specter-utils run``: the whole pipeline, the numbered notebooks executed in order with papermill."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specter_utils.commands.common import add_flag, add_quiet
from specter_utils.commands.spec import add_spec_arguments, resolve_spec_args, spec_name
from specter_utils.config import DEFAULT_PRESET
from specter_utils.errors import DataError

PRESET_HELP = (
    "Presets: smoke (the tests' tiny run), demo (the offline quick start on a CPU, on the bundled CiteSeer), hepth (the real hep-th corpus "
    "end to end on a CPU), citeseer (the topic showcase: CiteSeer's 6 topics end to end on a CPU), arxiv (the scale "
    "run: arXiv-2023, titles only, every paper embedded), general (hep-th and arXiv-2023 together: a model to start "
    "from: training.base_model), scidocs (the paper's setup, on a GPU); the README gives the measured time of each "
    "preset with a committed report (arxiv, citeseer, demo, hepth); general and scidocs have not been run as a "
    "whole, and smoke runs inside the tests, so none of them has a time; "
    "`specter-utils spec show --preset NAME` prints every setting of one with where it came from."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``run`` to the top-level parser."""
    from specter_utils.pipeline import NOTEBOOKS

    parser = subparsers.add_parser(
        "run",
        help="run the whole pipeline (notebooks 01-08) with a preset",
        description="Execute notebooks/01_prepare_data ... 08_classification_heads in order with papermill; every "
        "notebook reads its slice of the run specification params/<preset>.yaml (one file per preset, every setting "
        "once). Executed copies and metrics.json go to results/<run>/<notebook>/, the resolved specification to "
        "results/<run>/spec.yaml, figures to figures/ (PNG + PDF). Stops at the first failing cell and shows it. "
        + PRESET_HELP,
    )
    add_spec_arguments(parser, preset_default=DEFAULT_PRESET)
    parser.add_argument(
        "--report",
        action="store_true",
        help="afterwards, write reports/<preset>/ (specter-utils report): the executed notebooks without their logs, "
        "each notebook's metrics, the commit, the machine and each notebook's wall time; needs a checkout without "
        "uncommitted changes, so that the whole report comes from one commit",
    )
    add_flag(
        parser,
        "--src",
        "--data-dir",
        dest="src",
        default=None,
        help="real corpus for notebook 01: a hep-th folder (cit-HepTh.txt + abstracts), a CiteSeer folder, a tables "
        "folder or tables.json manifest, or one S2ORC, OpenAlex or generic record file (.jsonl, .jsonl.gz, .parquet; "
        "data/README.md), its kind detected from the path "
        "(default: the bundled CiteSeer for demo, ../shared/data/hepth for hepth); a relative path is taken from "
        "the current folder",
    )
    from specter_utils.vocabularies import CORPUS_KINDS

    parser.add_argument(
        "--corpus",
        choices=CORPUS_KINDS,
        default=None,
        help="the kind of --src when it cannot be detected (sets data.corpus; synthetic takes no --src). "
        "Labels: --set data.label_field=FIELD, --set data.multi_label=exactly-one",
    )
    parser.add_argument("--run", default=None, help="run name: results/<run>/ (default: the preset's name)")
    parser.add_argument(
        "--notebooks",
        nargs="+",
        default=None,
        metavar="NB",
        help=f"only these notebooks, by name or number (e.g. 05 06); known: {', '.join(NOTEBOOKS)}",
    )
    parser.add_argument("--results-dir", default=None, help="root of the run folders (default: results/)")
    parser.add_argument("--figures-dir", default=None, help="where figures go (default: figures/)")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel (default: python3: this interpreter)")
    parser.add_argument("--log-output", action="store_true", help="stream the notebooks' output to the terminal")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the run's seed (the setting 'seed': triplets, training order, baselines, t-SNE, heads); the same as "
        "--set seed=N (default: the specification's, 0)",
    )
    add_quiet(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the pipeline, print where everything is; on failure print the failing cell and return 1."""
    from specter_utils.executed import source_commit
    from specter_utils.paths import FIGURES_DIR, RESULTS_DIR
    from specter_utils.pipeline import NOTEBOOKS, PipelineError, PipelineSetup, run_pipeline
    from specter_utils.spec import parse_override
    from specter_utils.workflow.report import write_report

    if args.seed is not None:
        args.overrides = [*args.overrides, f"seed={args.seed}"]
    resolve_spec_args(args)  # checked: the specification resolves, with its overrides, before any notebook
    overrides = dict(parse_override(text) for text in args.overrides)
    preset = spec_name(args)
    for wanted in args.notebooks or ():
        if not any(nb == wanted or nb.startswith(f"{wanted}_") for nb in NOTEBOOKS):
            raise DataError(f"no notebook {wanted!r}; known: {', '.join(NOTEBOOKS)}", "--notebooks")
    commit = source_commit() if args.report else None
    if args.report and (commit is None or commit.endswith("+dirty")):
        raise DataError(
            "--report: the checkout has uncommitted changes (or is not a git checkout); a report comes from one "
            "commit, so commit first",
            "--report",
        )
    src = None
    if args.src is not None:  # checked here, not inside notebook 01; absolute, since notebooks run elsewhere
        path = Path(args.src).expanduser().absolute()
        if not path.exists():
            raise DataError(
                "--src: corpus not found (a corpus folder, a tables.json manifest or a record file)", args.src
            )
        src = str(path)
    try:
        result = run_pipeline(
            preset=preset,
            run=args.run,
            data_dir=src,
            notebooks=args.notebooks,
            overrides=overrides,
            corpus=args.corpus,
            setup=PipelineSetup(
                results_root=args.results_dir or RESULTS_DIR,
                figures_dir=args.figures_dir or FIGURES_DIR,
                kernel=args.kernel,
                log_output=args.log_output,
                progress_bar=sys.stderr.isatty() and not args.quiet,
            ),
        )
    except (KeyError, TypeError, ValueError) as exc:  # a --set key that does not exist, a wrong type or value,
        # or an option that does not apply (--src with --corpus synthetic)
        raise DataError(
            str(exc.args[0] if exc.args else exc), "--set" if isinstance(exc, KeyError | TypeError) else "--src"
        ) from None
    except PipelineError as exc:
        print(f"specter-utils run: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    if args.report:
        print(f"report: {write_report(result.run_dir, preset=Path(preset).stem)}")
    return 0
