"""``specter-utils data``: help, convert on (a subset of) the real hep-th files, stats, errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

import pytest

from specter_utils.cli import main
from specter_utils.data.scidocs import read_qrel
from specter_utils.data.specter_format import read_specter_dir


def test_data_help_runs_as_a_command():
    out = subprocess.run(
        [sys.executable, "-m", "specter_utils", "data", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for sub in ("convert", "stats", "download", "synthetic", "audit"):
        assert sub in out


@pytest.mark.parametrize("sub", ["convert", "stats", "download", "synthetic", "audit"])
def test_every_subcommand_has_help(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["data", sub, "--help"])
    assert exc.value.code == 0
    assert "usage: specter-utils data " + sub in capsys.readouterr().out


@pytest.fixture(scope="module")
def hepth_subset(hepth_src, tmp_path_factory):
    """The first 1,500 real .abs files and the real edges among them, in the SNAP layout."""
    out = tmp_path_factory.mktemp("hepth_subset")
    ids = set()
    with (
        tarfile.open(hepth_src / "cit-HepTh-abstracts.tar.gz") as src,
        tarfile.open(out / "cit-HepTh-abstracts.tar.gz", "w:gz") as dst,
    ):
        for member in src:
            if not member.name.endswith(".abs"):
                continue
            dst.addfile(member, io.BytesIO(src.extractfile(member).read()))
            ids.add(str(int(member.name.rsplit("/", 1)[1][:-4])))
            if len(ids) == 1_500:
                break
    lines = ["# subset of cit-HepTh.txt"]
    for line in (hepth_src / "cit-HepTh.txt").read_text().splitlines():
        parts = line.split()
        if not line.startswith("#") and parts[0] in ids and parts[1] in ids:
            lines.append(line)
    (out / "cit-HepTh.txt").write_text("\n".join(lines) + "\n")
    return out, len(lines) - 1


def test_convert_hepth(hepth_subset, tmp_path, capsys):
    src, n_edges = hepth_subset
    assert n_edges > 400
    code = main(["data", "convert", "--format", "hepth", "--src", str(src), "--out", str(tmp_path), "--seed", "3"])
    assert code == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "--format is deprecated; use --corpus" in captured.err  # the old spelling still works
    assert f"1,500 papers, {n_edges:,} edges" in printed
    data = read_specter_dir(tmp_path)
    assert len(data.metadata) == 1_500
    self_citations = sum(
        1 for line in (src / "cit-HepTh.txt").read_text().splitlines()[1:] if len(set(line.split())) == 1
    )
    assert sum(1 for c in data.graph.values() for n in c.values() if n == 5) == n_edges - self_citations
    assert data.info == {**data.info, "corpus": "hepth", "synthetic": False, "seed": 3}
    assert len(data.splits["val"]) == round(0.1 * len(data.graph))
    assert f"queries {len(data.graph):,}" in printed
    assert main(["data", "stats", str(src)]) == 0
    stats_out = capsys.readouterr().out
    assert "(hepth)" in stats_out and "papers: 1,500" in stats_out and f"edges: {n_edges:,}" in stats_out


def test_convert_s2orc_sample_fails_clearly(shared_data, tmp_path, capsys):
    code = main(["data", "convert", "--format", "s2orc", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no SPECTER queries" in err and "sample.jsonl" in err
    assert not (tmp_path / "out").exists()


def test_stats_prints_counts(shared_data, capsys):
    assert main(["data", "stats", str(shared_data / "specter_sample")]) == 0
    out = capsys.readouterr().out
    assert "queries: 20" in out and "queries_without_metadata: 20" in out and "papers: 379" in out
    assert main(["data", "stats", "--json", str(shared_data / "s2orc" / "sample.jsonl")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "s2orc" and stats["counts"]["papers"] == 1_000


def test_stats_on_bad_path_is_a_clean_error(tmp_path, capsys):
    assert main(["data", "stats", str(tmp_path)]) == 2
    assert "unrecognised folder" in capsys.readouterr().err


@pytest.fixture(scope="module")
def synthetic_benchmark(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic") / "bench"
    assert main(["data", "synthetic", "--out", str(out), "--papers", "120", "--topics", "3", "--seed", "1"]) == 0
    return out


def test_synthetic_writes_a_labelled_benchmark(synthetic_benchmark):
    out = synthetic_benchmark
    assert json.loads((out / "corpus.json").read_text())["synthetic"] is True
    assert json.loads((out / "benchmark.json").read_text())["synthetic"] is True
    train = read_specter_dir(out / "train")
    assert train.graph and all(p.extras.get("synthetic") is True for p in train.metadata.values())
    assert (out / "scidocs" / "cite" / "test.qrel").exists()


def test_audit_exits_1_on_leakage(synthetic_benchmark, tmp_path, capsys):
    held_out = next(iter(read_qrel(synthetic_benchmark / "scidocs" / "cite" / "test.qrel")))
    train = read_specter_dir(synthetic_benchmark / "train")
    query = next(iter(train.graph))
    clean, leaky = tmp_path / "clean.jsonl", tmp_path / "leaky.jsonl"
    clean.write_text(json.dumps({"query": query, "pos": query, "neg": query, "kind": "easy"}) + "\n")
    leaky.write_text(json.dumps({"query": held_out, "pos": query, "neg": query, "kind": "easy"}) + "\n")
    assert main(["data", "audit", "--triplets", str(clean), "--benchmark", str(synthetic_benchmark)]) == 0
    assert main(["data", "audit", "--triplets", str(leaky), "--benchmark", str(synthetic_benchmark)]) == 1
    assert "LEAKAGE: the triplets touch held-out benchmark queries (1 paper)" in capsys.readouterr().out
