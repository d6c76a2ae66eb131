"""One dialect across commands: read every command's flags from the parser itself."""

from __future__ import annotations

import argparse
import json

import pytest

from specter_utils.cli import build_parser, main


def _commands(parser: argparse.ArgumentParser, name: str = ""):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield name, parser
        return
    for sub, child in subs[0].choices.items():
        yield from _commands(child, f"{name} {sub}".strip())


COMMANDS = dict(_commands(build_parser()))


def _visible(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings if a.help != argparse.SUPPRESS}


def test_threads_have_one_name_everywhere() -> None:
    for name, parser in COMMANDS.items():
        flags = _visible(parser)
        assert not [f for f in flags if f in ("--n-jobs", "--jobs", "--num-threads", "--workers")], name
    assert {name for name, p in COMMANDS.items() if "--threads" in _visible(p)} >= {"evaluate", "index", "search"}


def test_resumable_commands_take_resume_and_no_resume_alike() -> None:
    for name, parser in COMMANDS.items():
        flags = _visible(parser)
        if "--resume" in flags or "--no-resume" in flags:
            assert "--resume" in flags and "--no-resume" in flags, name
            assert flags["--resume"] is flags["--no-resume"], name  # one BooleanOptionalAction


def test_metadata_takes_one_or_several_files_everywhere() -> None:
    takers = {name: _visible(p)["--metadata"] for name, p in COMMANDS.items() if "--metadata" in _visible(p)}
    assert {"train", "embed", "index"} <= set(takers)
    assert all(action.nargs == "+" for action in takers.values()), {n: a.nargs for n, a in takers.items()}


@pytest.mark.parametrize("name", ["train", "embed", "evaluate", "run"])
def test_commands_that_draw_progress_take_quiet(name) -> None:
    assert "--quiet" in _visible(COMMANDS[name])


def test_the_old_thread_spelling_still_works_with_a_warning(capsys) -> None:
    args = build_parser().parse_args(
        ["evaluate", "--embeddings", "e.jsonl", "--data-dir", "d", "--out", "r.json", "--n-jobs", "2"]
    )
    assert args.n_jobs == 2 and "--n-jobs is deprecated" in capsys.readouterr().err
    args = build_parser().parse_args(
        ["evaluate", "--embeddings", "e.jsonl", "--data-dir", "d", "--out", "r.json", "--threads", "2"]
    )
    assert args.n_jobs == 2


def test_train_merges_several_metadata_files_and_refuses_a_paper_in_two(tmp_path, capsys) -> None:
    from specter_utils.errors import DataError
    from specter_utils.workflow.train import merged_metadata

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"p1": {"title": "One", "abstract": ""}}))
    b.write_text(json.dumps([{"paper_id": "p2", "title": "Two", "abstract": "x"}]))
    merged = merged_metadata([str(a), str(b)], tmp_path / "out")
    assert set(json.loads(merged.read_text())) == {"p1", "p2"}
    b.write_text(json.dumps([{"paper_id": "p1", "title": "Again"}]))
    with pytest.raises(DataError, match="paper in two --metadata files"):
        merged_metadata([str(a), str(b)], tmp_path / "out2")
    (tmp_path / "train.jsonl").write_text("")  # a triplets folder, so the check reaches the paper files
    missing = tmp_path / "missing.json"
    assert (
        main(["train", "--triplets", str(tmp_path), "--metadata", str(a), str(missing), "--out", str(tmp_path / "o")])
        == 2
    )
    assert "missing.json" in capsys.readouterr().err


def test_train_help_shows_what_a_bare_call_uses_on_this_machine() -> None:
    import dataclasses
    import re

    from specter_utils.devices import device_profile
    from specter_utils.spec import train_config
    from specter_utils.train_config import TrainConfig

    parser = COMMANDS["train"]
    parser.format_help()
    bare = train_config(device=device_profile())
    checked = 0
    for action in parser._actions:
        if action.dest not in {f.name for f in dataclasses.fields(TrainConfig)} - {"profile", "recipe"}:
            continue
        shown = re.search(r"default(?: here)?: ([^;)]+)", action.help)
        if shown:
            assert shown.group(1) == str(getattr(bare, action.dest)), (action.dest, action.help)
            checked += 1
    assert checked > 20
    assert f"the {device_profile()} profile" in parser.description


def test_spec_show_explain_says_when_a_comment_gives_the_default_s_reason(capsys) -> None:
    assert main(["spec", "show", "--preset", "demo", "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    seeds = next(i for i, line in enumerate(lines) if line.strip().startswith("seeds: [0]"))
    assert "[that is the default, [0, 1, 2]; here preset demo sets [0]]" in lines[seeds - 1]
    at_default = next(i for i, line in enumerate(lines) if line.strip().endswith("# default"))
    assert "that is the default" not in lines[at_default - 1]
