"""The README as a guide: short, its Python blocks run, its quick start is what CI runs, its links resolve, and the
user-facing files keep to what was measured (no workshop words)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from specter_utils.paths import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
WORKSHOP = re.compile(r"development machine|runs/r[0-9]+/|17:1[0-9]|the next thing to measure|reported elsewhere", re.I)
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_readme_is_a_short_guide():
    assert len(README.splitlines()) <= 250
    assert (REPO_ROOT / "LICENSE").read_text(encoding="utf-8").startswith("Apache License")


def test_the_quick_start_is_two_commands_and_ci_runs_its_test_command():
    quick = README.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", quick, re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2 and commands[0].endswith("specter-utils run --preset demo")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for part in commands[1].split(" && "):  # the install and the test command, as CI runs them
        assert part.replace("pip install", "python3 -m pip install -q --disable-pip-version-check") in ci or part in ci


def test_the_cpu_only_line_is_pytorchs_own():
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in README
    pinned = re.search(r'"torch==([0-9.]+)"', (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")).group(1)
    assert f"torch=={pinned} --index-url" in README


@pytest.mark.slow
def test_every_python_block_of_the_readme_runs(tmp_path):
    """The blocks run in order, in one fresh interpreter (offline, the bundled model), as a reader pastes them."""
    code = "\n".join(_blocks("python"))
    assert "api.load_model" in code and "api.embed" in code and "api.search" in code
    script = tmp_path / "readme_blocks.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1.0" in done.stdout.splitlines()[-1]  # sentence-transformers alone gives api.embed's vector


@pytest.mark.parametrize(
    "path", ["README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md"))]
)
def test_links_to_files_resolve(path):
    source = REPO_ROOT / path
    broken = [
        target
        for target, _ in LINK.findall(source.read_text(encoding="utf-8"))
        if not target.startswith(("http://", "https://", "mailto:")) and not (source.parent / target).exists()
    ]
    assert not broken, f"{path}: {broken}"


def test_no_workshop_words_in_the_user_facing_docs():
    files = [REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md")]
    hits = [
        f"{p.relative_to(REPO_ROOT)}:{n}: {line.strip()[:80]}"
        for p in files
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if WORKSHOP.search(line)
    ]
    assert not hits, hits


MEASURE = re.compile(r"\b\d[\d,.]*\s?(docs/s|papers/s|ms|GB|MB|MiB|GiB|triplets/s)\b|\b\d+\.\d+x\b")
SOURCE = re.compile(
    r"bench/|measured/|measurements/|reports/|experiments/|generated:|pipeline\.json|\.jsonl?\b|not measured"
    r"|the paper",
    re.IGNORECASE,
)


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_measured_figure_in_the_docs_names_its_source(path):
    """A section of docs/ that gives a speed, a time per item, a size or a ratio names where it comes from: the
    bench/ script or measured file that wrote it, a committed report, a generated block, or the paper; or says
    that it was not measured."""
    sections = re.split(r"\n(?=#{2,4} )", path.read_text(encoding="utf-8"))
    unsourced = [
        f"{s.splitlines()[0][:60]}: {m.group(0)}" for s in sections if (m := MEASURE.search(s)) and not SOURCE.search(s)
    ]
    assert not unsourced, unsourced


IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_shows_two_images_and_no_wide_table():
    images = IMAGE.findall(README)
    assert len(images) >= 2 and all((REPO_ROOT / target).is_file() for target in images), images
    widths = [line.count("|") - 1 for line in README.splitlines() if line.startswith("|")]
    assert max(widths) <= 8


@pytest.mark.parametrize(
    "path", ["README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md"))]
)
def test_images_resolve(path):
    source = REPO_ROOT / path
    broken = [t for t in IMAGE.findall(source.read_text(encoding="utf-8")) if not (source.parent / t).is_file()]
    assert not broken, f"{path}: {broken}"


def test_install_and_quick_start_install_the_same_way_and_test_as_ci():
    cpu = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    install = README.split("## Install", 1)[1].split("## Quick start", 1)[0]
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert cpu in install and cpu in quick
    development = README.split("## Development", 1)[1]
    assert "`python -m pytest -q`" in development and "python -m pytest -q\n" in (REPO_ROOT / ".ci" / "run").read_text()


def test_scoring_cites_the_embedding_time_its_file_holds():
    from specter_utils.io import read_json

    embedded = read_json(REPO_ROOT / "reports" / "hepth" / "metrics" / "04_embed_papers.json")
    machine = read_json(REPO_ROOT / "reports" / "hepth" / "pipeline.json")["machine"]
    text = " ".join((REPO_ROOT / "docs" / "scoring.md").read_text(encoding="utf-8").split())
    assert f"embedded its benchmark's {embedded['papers']:,} papers" in text
    assert f"in {embedded['embeddings']['base']['seconds']} s (the base model)" in text
    assert machine["cpu"].split("(")[0] in text and ", ".join(machine["flags"]) in text
    for path in ("docs/running.md", "params/hepth.yaml"):
        assert f"{embedded['papers']:,} papers per model" in (REPO_ROOT / path).read_text(encoding="utf-8"), path


def test_the_demo_preset_states_the_split_its_report_has():
    from specter_utils.io import read_json

    mag = read_json(REPO_ROOT / "reports" / "demo" / "metrics" / "01_prepare_data.json")["benchmark"]["mag"]
    text = (REPO_ROOT / "params" / "demo.yaml").read_text(encoding="utf-8")
    assert f"({mag['train']} train, {mag['val']} val, {mag['test']} test" in text


def test_run_help_promises_a_time_only_for_presets_with_a_report(capsys):
    from specter_utils.commands.run import PRESET_HELP

    reported = sorted(p.parent.name for p in (REPO_ROOT / "reports").glob("*/pipeline.json"))
    assert f"committed report ({', '.join(reported)})" in " ".join(PRESET_HELP.split())


def test_spec_show_and_data_convert_help_read_plainly(capsys):
    from specter_utils.cli import main

    with pytest.raises(SystemExit):
        main(["spec", "show", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Print every setting of a run specification" in out
    with pytest.raises(SystemExit):
        main(["data", "convert", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--src SRC what to read." in out and "to give:" not in out
