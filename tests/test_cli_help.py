"""One dialect on the command line: every help text reads as finished sentences, the same task names in every
command, one seed default, ``--quiet`` where a command shows progress, one default for the run name."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

from specter_utils.cli import build_parser, main
from specter_utils.config import DEFAULT_PRESET, RUN_SEED
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.tasks import BY_NAME

# a help text cut off mid-sentence ends on a word that needs another after it, or on an opening bracket or comma
DANGLING = re.compile(
    r"(\b(a|an|the|of|to|and|or|whose|with|for|in|on|by|from|at|as|than|its|their|is|are|if|when|which)|[,(:;\[-])$",
    re.IGNORECASE,
)

INTERVAL = re.compile(r"[\[(][-\d.e+]+, *[-\d.e+inf]+[\])]")  # a range such as (0, 1] or [0, 1)


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of the command line, by command (``data convert`` and ``spec show`` included)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(f"{name} {sub}".strip(), subparser)

    walk("", build_parser())
    return found


PARSERS = _parsers()


def _option_helps(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    formatter = parser._get_formatter()
    helps = []
    for action in parser._actions:
        if action.help in (None, argparse.SUPPRESS) or not action.option_strings:
            continue
        text = formatter._expand_help(action) if "%" in formatter._get_help_string(action) else action.help
        helps.append((action.option_strings[-1], " ".join(str(text).split())))
    return helps


@pytest.mark.parametrize("command", sorted(PARSERS), ids=lambda c: c or "specter-utils")
def test_help_texts_end_their_sentences(command):
    parser = PARSERS[command]
    cut = [(flag, text[-40:]) for flag, text in _option_helps(parser) if DANGLING.search(text.rstrip(". "))]
    assert not cut, cut
    unbalanced = [
        flag for flag, text in _option_helps(parser) if (plain := INTERVAL.sub("", text)).count("(") != plain.count(")")
    ]
    assert not unbalanced
    shown = parser.format_help()
    assert "%%" not in shown and "(default: )" not in shown and "--no-no-" not in shown


def test_evaluate_and_compare_accept_and_print_the_same_task_names(tmp_path, capsys):
    rng = np.random.default_rng(0)
    papers = [f"p{i}" for i in range(12)]
    for name in ("cite", "cocite"):
        lines = [f"q{q} 0 p{(q + j) % 12} {int(j < 2)}" for q in range(4) for j in range(5)]
        (tmp_path / name).mkdir()
        (tmp_path / name / "test.qrel").write_text("\n".join(lines) + "\n")
    ids = papers + [f"q{q}" for q in range(4)]
    for row in ("a", "b"):
        write_embeddings(
            tmp_path / f"{row}.jsonl", EmbeddingSet(ids, rng.normal(size=(len(ids), 8)).astype(np.float32))
        )
    rows = ["--row", "a", str(tmp_path / "a.jsonl"), "--row", "b", str(tmp_path / "b.jsonl")]
    for spelling in (["cite", "co-cite"], ["cite", "cocite"]):  # evaluate's names and the folder names
        assert main(["compare", "--data-dir", str(tmp_path), *rows, "--tasks", *spelling, "--resamples", "100"]) == 0
        out = capsys.readouterr().out
        assert "co-cite MAP" in out and "cocite" not in out
    assert "co-cite" in PARSERS["evaluate"].format_help() and BY_NAME["cocite"].key == "co-cite"


def test_one_seed_default_and_one_run_name_default():
    for command in ("mine", "train", "embed", "compare", "data convert", "data synthetic", "build-benchmark"):
        seed = next(a for a in PARSERS[command]._actions if "--seed" in a.option_strings)
        assert seed.default in (None, RUN_SEED), command  # None: the config field's default, RUN_SEED
    report_run = next(a for a in PARSERS["report"]._actions if "--run" in a.option_strings)
    assert report_run.default == DEFAULT_PRESET
    for command in ("run", "train", "embed", "evaluate"):  # the commands that show progress
        assert any("--quiet" in a.option_strings for a in PARSERS[command]._actions), command


def test_flags_made_from_settings_show_their_whole_declared_help():
    """A flag generated from a setting of ``specter_utils/config.py`` carries its declaration's help whole, never a
    prefix of it (a help cut at a length or a first clause ends mid-sentence)."""
    import dataclasses

    from specter_utils import corpus_config, train_config

    checked = 0
    for command, cls in (
        ("mine", train_config.SamplerConfig),
        ("train", train_config.TrainConfig),
        ("build-benchmark", corpus_config.CorpusConfig),
    ):
        declared = {f.name: f.metadata["help"] for f in dataclasses.fields(cls) if f.metadata.get("help")}
        for action in PARSERS[command]._actions:
            if action.dest in declared and action.help and action.help.startswith(declared[action.dest][:20]):
                checked += 1
                assert declared[action.dest].replace("%", "%%") in action.help, (command, action.dest)
    assert checked > 20
