"""Every command fails the same way: one line ``specter-utils CMD: error: WHERE: WHAT``, exit 2, no traceback,
and nothing half-written. One test per class of bad input, then a sweep of malformed inputs.

All in-process (``cli.main``) on tiny synthetic inputs; no case loads a model except the train test that
checks nothing is written when its inputs fail after the model has loaded.
"""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from specter_utils.cli import main


# ---------------------------------------------------------------- helpers
def call(argv: list[str], capsys) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command (argparse's own exits included)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fails(argv: list[str], capsys, *words: str) -> str:
    """Assert the command fails with one error line (exit 2, no traceback) holding ``words``; return the line."""
    code, out, err = call(argv, capsys)
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if line.strip() and ": warning: " not in line]
    assert code == 2, (code, err)
    assert len(errors) == 1, err
    line = errors[0]
    command = argv[0] if argv[0] != "data" else f"data {argv[1]}"
    assert line.startswith(f"specter-utils {command}: error: "), line
    for word in words:
        assert word in line, (word, line)
    return line


def leftovers(folder: Path) -> list[str]:
    """Temporary files or folders of an atomic write left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".old")))


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict[str, Path]:
    """A tiny synthetic benchmark, its embeddings, mined triplets and assorted malformed files."""
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.embedding.io import EmbeddingSet, write_embeddings
    from specter_utils.io import read_json
    from specter_utils.train_config import SamplerConfig
    from specter_utils.triplets.sampler import mine_dir

    root = tmp_path_factory.mktemp("cli_errors")
    bench = root / "bench"
    build_benchmark(generate_synthetic_corpus(n_papers=120, n_topics=3, seed=1), bench, seed=1, n_queries=10)
    ids = sorted(read_json(bench / "scidocs" / "paper_metadata_view_cite_read.json"))
    ids += sorted(set(read_json(bench / "scidocs" / "paper_metadata_mag_mesh.json")) - set(ids))
    vectors = np.random.default_rng(0).normal(size=(len(ids), 8)).astype(np.float32)
    emb = root / "emb" / "e.jsonl"
    write_embeddings(emb, EmbeddingSet(ids, vectors, None, {"model": "random"}))
    mine_dir(bench / "train", root / "triplets", SamplerConfig(seed=0))
    paths = {"root": root, "bench": bench, "scidocs": bench / "scidocs", "train": bench / "train", "emb": emb}
    paths["triplets"] = root / "triplets"
    paths["meta"] = bench / "scidocs" / "paper_metadata_view_cite_read.json"
    paths["dir"] = root / "a_folder"
    paths["dir"].mkdir()
    paths["empty_model"] = root / "empty_model"
    paths["empty_model"].mkdir()
    paths["file"] = root / "a_file.txt"
    paths["file"].write_text("x\n")
    paths["exists_jsonl"] = root / "exists.jsonl"
    paths["exists_jsonl"].write_text("{}\n")
    paths["nonempty"] = root / "nonempty"
    (paths["nonempty"]).mkdir()
    (paths["nonempty"] / "keep.txt").write_text("mine\n")
    # .npy sidecars: corrupt, truncated, object dtype
    for name, payload in (("corrupt", b"not a numpy file at all"), ("truncated", None), ("object", None)):
        npy = root / "npy" / f"{name}.npy"
        npy.parent.mkdir(exist_ok=True)
        if payload is not None:
            npy.write_bytes(payload)
        elif name == "truncated":
            np.save(npy, vectors)
            npy.write_bytes(npy.read_bytes()[:200])
        else:
            np.save(npy, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        npy.with_suffix(".ids.txt").write_text("".join(f"{pid}\n" for pid in ids[:2]))
    # embeddings jsonl with forbidden ids
    (root / "null_id.jsonl").write_text(json.dumps({"paper_id": None, "embedding": [1.0, 2.0]}) + "\n")
    (root / "space_id.jsonl").write_text(json.dumps({"paper_id": "a b", "embedding": [1.0, 2.0]}) + "\n")
    # hep-th sources with a broken abstracts archive
    for name, payload in (
        ("hepth_text", b"this is plain text, not an archive\n"),
        ("hepth_truncated", None),
        ("hepth_badgz", b"\x1f\x8b\x08\x00garbage"),
    ):
        folder = root / name
        folder.mkdir()
        (folder / "cit-HepTh.txt").write_text("1001 1002\n1002 1003\n")
        if payload is None:
            good = shutil.make_archive(str(root / "good"), "gztar", root_dir=folder)
            payload = Path(good).read_bytes()[:40]
        (folder / "cit-HepTh-abstracts.tar.gz").write_bytes(payload)
    # SPECTER dirs with forbidden values
    for name, change in (
        ("count3", lambda d, m: d[next(iter(d))].update({next(iter(m)): {"count": 3}})),
        ("space_id", lambda d, m: m.update({"a b": {"paper_id": "a b", "title": "T", "abstract": ""}})),
        ("null_id", lambda d, m: m.update({"zz": {"paper_id": None, "title": "T", "abstract": ""}})),
    ):
        folder = root / f"specter_{name}"
        shutil.copytree(bench / "train", folder)
        data, meta = read_json(folder / "data.json"), read_json(folder / "metadata.json")
        change(data, meta)
        (folder / "data.json").write_text(json.dumps(data))
        (folder / "metadata.json").write_text(json.dumps(meta))
    # SCIDOCS dirs with forbidden values
    scidocs = bench / "scidocs"
    self_qrel = root / "scidocs_self"
    shutil.copytree(scidocs, self_qrel)
    query = (scidocs / "cite" / "test.qrel").read_text().split()[0]
    with open(self_qrel / "cite" / "test.qrel", "a") as handle:
        handle.write(f"{query} 0 {query} 0\n")
    one_class = root / "scidocs_one_class"
    shutil.copytree(scidocs, one_class)
    rows = (one_class / "mag" / "train.csv").read_text().splitlines()
    (one_class / "mag" / "train.csv").write_text("\n".join([rows[0], *(r.split(",")[0] + ",X" for r in rows[1:])]))
    for name, header, scores in (
        ("scidocs_propensity", True, ["high", 0.5]),
        ("scidocs_noheader", False, [0.9, 0.5]),
    ):
        folder = root / name
        (folder / "recomm").mkdir(parents=True)
        (folder / "paper_metadata_recomm.json").write_text(
            json.dumps({p: {"paper_id": p, "title": "T", "abstract": ""} for p in ("q", "a", "b")})
        )
        head = "pid,clicked_pid,similar_papers_avail_at_time\n" if header else ""
        for split in ("train", "test"):
            (folder / "recomm" / f"{split}.csv").write_text(f'{head}q,a,"a,b"\n')
        (folder / "recomm" / "propensity_scores.json").write_text(json.dumps({"scores": scores}))
    paths.update(
        {
            "scidocs_self": self_qrel,
            "scidocs_one_class": one_class,
            "scidocs_propensity": root / "scidocs_propensity",
            "scidocs_noheader": root / "scidocs_noheader",
        }
    )
    return paths


# ---------------------------------------------------------------- classes of the issue
def test_corrupt_truncated_and_plain_text_archives(work, tmp_path, capsys) -> None:
    for name in ("hepth_text", "hepth_truncated", "hepth_badgz"):
        out = tmp_path / name
        argv = ["build-benchmark", "--corpus", "hepth", "--src", str(work["root"] / name), "--out", str(out)]
        fails(argv, capsys, "cit-HepTh-abstracts.tar.gz", "not a readable .tar.gz archive")
        assert not out.exists()


def test_corrupt_gz_is_one_line(tmp_path, capsys) -> None:
    from specter_utils.data.download import gunzip_file
    from specter_utils.errors import DataError

    src = tmp_path / "cit-HepTh.txt.gz"
    src.write_bytes(b"\x1f\x8b\x08\x00broken")
    with pytest.raises(DataError, match="not a readable .gz file"):
        gunzip_file(src, tmp_path / "cit-HepTh.txt")
    assert not (tmp_path / "cit-HepTh.txt").exists()


@pytest.mark.parametrize("name", ["corrupt", "truncated", "object"])
def test_bad_npy_sidecar(work, tmp_path, capsys, name) -> None:
    npy = work["root"] / "npy" / f"{name}.npy"
    line = fails(["index", "--embeddings", str(npy), "--out", str(tmp_path / "i.npz")], capsys, str(npy))
    assert "not a readable .npy matrix" in line or "numeric matrix" in line
    assert not (tmp_path / "i.npz").exists()


def test_paths_that_are_directories(work, tmp_path, capsys) -> None:
    out = tmp_path / "e.jsonl"
    fails(["embed", "--metadata", str(work["dir"]), "--out", str(out)], capsys, "--metadata", "is a directory")
    fails(["evaluate", "--data-dir", str(work["scidocs"]), "--embeddings", str(work["dir"]), "--out", str(out)],
          capsys, "--embeddings", "is a directory")  # fmt: skip
    fails(["build-benchmark", "--corpus", "hepth", "--src", str(work["file"]), "--out", str(tmp_path / "b")], capsys)
    assert not out.exists() and not (tmp_path / "b").exists()


def test_out_that_exists_or_cannot_be_written(work, tmp_path, capsys, monkeypatch) -> None:
    meta = str(work["meta"])
    fails(["embed", "--metadata", meta, "--out", str(work["exists_jsonl"])], capsys, "file exists", "--overwrite")
    folder = tmp_path / "d.jsonl"
    folder.mkdir()
    fails(["embed", "--metadata", meta, "--out", str(folder)], capsys, "is a directory")
    fails(["mine", "--data-dir", str(work["train"]), "--out", str(work["nonempty"])], capsys, "--overwrite")
    fails(["mine", "--data-dir", str(work["train"]), "--out", str(work["nonempty"]), "--overwrite"], capsys,
          "did not write")  # fmt: skip
    assert (work["nonempty"] / "keep.txt").read_text() == "mine\n"  # --overwrite never deletes a foreign folder
    fails(["mine", "--data-dir", str(work["train"]), "--out", str(work["file"])], capsys, "is a file")
    real_access = __import__("os").access
    monkeypatch.setattr("os.access", lambda path, mode: False if Path(path) == tmp_path else real_access(path, mode))
    fails(["evaluate", "--data-dir", str(work["scidocs"]), "--embeddings", str(work["emb"]),
           "--out", str(tmp_path / "r.json")], capsys, "read-only")  # fmt: skip
    assert not (tmp_path / "r.json").exists()


def test_full_disk_keeps_the_old_embeddings_set(work, tmp_path, capsys, monkeypatch) -> None:
    """The disk fills while the sidecars are written: the earlier set stays whole, no temp file is left."""
    from specter_utils.embedding import io as emb_io

    out = tmp_path / "e.jsonl"
    argv = ["embed", "--baseline", "random", "--metadata", str(work["meta"]), "--out", str(out)]
    assert main(argv) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(before) == {"e.jsonl", "e.npy", "e.ids.txt", "e.meta.json"}

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(out.with_suffix(".npy")))

    monkeypatch.setattr(emb_io.np, "save", full)
    fails([*argv, "--overwrite", "--seed", "1"], capsys, "e.npy", "no space left on device")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_mixed_set_is_never_read_as_one(work, tmp_path) -> None:
    """A set interrupted between its renames: the meta's manifest no longer matches, readers notice."""
    from specter_utils.embedding.io import EmbeddingSet, read_embeddings, read_embeddings_fast, write_embeddings
    from specter_utils.errors import DataError

    out = tmp_path / "e.jsonl"
    write_embeddings(out, EmbeddingSet(["a", "b", "c"], np.eye(3, dtype=np.float32), None, {"model": "old"}))
    out.write_text(json.dumps({"paper_id": "z", "embedding": [1.0, 0.0, 0.0]}) + "\n")  # a new jsonl, old sidecars
    assert read_embeddings_fast(out).ids == ["z"]  # the jsonl is the truth, not the old matrix
    assert read_embeddings(out).info == {}  # the old meta does not describe it
    with pytest.raises(DataError, match="not one set"):
        (tmp_path / "e.ids.txt").write_text("a\nb\nc2\n")
        read_embeddings(out.with_suffix(".npy"))


def test_empty_model_folder(work, tmp_path, capsys) -> None:
    out = tmp_path / "e.jsonl"
    fails(["embed", "--model", str(work["empty_model"]), "--metadata", str(work["meta"]), "--out", str(out)],
          capsys, "model folder is empty")  # fmt: skip
    fails(["train", "--triplets", str(work["triplets"]), "--metadata", str(work["train"] / "metadata.json"),
           "--base-model", str(work["empty_model"]), "--out", str(tmp_path / "run")], capsys, "empty")  # fmt: skip
    assert not out.exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["embed", "--metadata", "m.json", "--out", "o.jsonl", "--batch-size", "0"], "--batch-size"),
        (["embed", "--metadata", "m.json", "--out", "o.jsonl", "--max-length", "1"], "--max-length"),
        (["data", "synthetic", "--out", "o", "--topics", "0"], "--topics"),
        (["data", "synthetic", "--out", "o", "--papers", "-5"], "--papers"),
        (["build-benchmark", "--corpus", "synthetic", "--out", "o", "--n-queries", "0"], "--n-queries"),
        (["mine", "--data-dir", "d", "--out", "o", "--max-triplets", "-1"], "--max-triplets"),
        (["train", "--triplets", "t", "--metadata", "m", "--batch-size", "0"], "--batch-size"),
        (["search", "--index", "i.npz", "--paper-id", "x", "-k", "-2"], "-k"),
    ],
)
def test_out_of_range_numbers(argv, flag, capsys) -> None:
    line = fails(argv, capsys, flag)
    assert "at least" in line


def test_one_class_train_split(work, tmp_path, capsys) -> None:
    fails(["evaluate", "--data-dir", str(work["scidocs_one_class"]), "--embeddings", str(work["emb"]),
           "--tasks", "mag", "--out", str(tmp_path / "r.json")], capsys, "mag/train.csv", "one class")  # fmt: skip
    assert not (tmp_path / "r.json").exists()


def test_non_numeric_propensity_score(work, tmp_path, capsys) -> None:
    fails(["evaluate", "--data-dir", str(work["scidocs_propensity"]), "--embeddings", str(work["emb"]),
           "--tasks", "recomm", "--out", str(tmp_path / "r.json")], capsys, "propensity_scores.json",
          "'high'")  # fmt: skip


def test_run_checks_notebooks_and_src_first(tmp_path, capsys, monkeypatch) -> None:
    fails(["run", "--notebooks", "99"], capsys, "--notebooks", "no notebook '99'")
    fails(["run", "--src", str(tmp_path / "missing")], capsys, "corpus not found")
    seen = {}

    def fake_run_pipeline(**kwargs):
        seen.update(kwargs)
        raise KeyError("stop here")

    monkeypatch.setattr("specter_utils.pipeline.run_pipeline", fake_run_pipeline)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    code, _, err = call(["run", "--data-dir", "corpus"], capsys)  # the old spelling, relative
    assert code == 2 and "--data-dir is deprecated" in err
    assert seen["data_dir"] == str(tmp_path / "corpus")  # absolute: notebooks run in another folder


# ---------------------------------------------------------------- silent or wrong behaviour
def test_benchmark_rebuild_replaces_out_whole(tmp_path, capsys, monkeypatch) -> None:
    from specter_utils.data.synthetic import generate_synthetic_corpus

    small = generate_synthetic_corpus(n_papers=120, n_topics=3, seed=0)
    monkeypatch.setattr("specter_utils.workflow.prepare.load_corpus", lambda *args, **kwargs: small)
    out = tmp_path / "b"
    argv = ["build-benchmark", "--corpus", "synthetic", "--out", str(out), "--n-queries", "10"]
    assert main(argv) == 0
    stale = out / "scidocs" / "mesh" / "train.csv"
    stale.parent.mkdir()
    stale.write_text("pid,class_label\n")
    capsys.readouterr()
    fails(argv, capsys, "--overwrite")
    assert main([*argv, "--overwrite"]) == 0
    assert not stale.exists() and (out / "benchmark.json").exists()
    assert leftovers(tmp_path) == []


def test_failed_build_leaves_nothing(tmp_path, capsys, monkeypatch) -> None:
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.errors import DataError

    small = generate_synthetic_corpus(n_papers=60, n_topics=2, seed=0)
    monkeypatch.setattr("specter_utils.workflow.prepare.load_corpus", lambda *args, **kwargs: small)

    def half_then_fail(corpus, out_dir, **kwargs):
        (Path(out_dir) / "train").mkdir(parents=True)
        (Path(out_dir) / "train" / "data.json").write_text("{}")
        raise DataError("no paper has 3+ references with text")

    monkeypatch.setattr("specter_utils.workflow.prepare.build_benchmark", half_then_fail)
    fails(["build-benchmark", "--corpus", "synthetic", "--out", str(tmp_path / "b")], capsys, "3+ references")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_baseline_refuses_shard(work, tmp_path, capsys) -> None:
    out = tmp_path / "e.jsonl"
    fails(["embed", "--baseline", "random", "--metadata", str(work["meta"]), "--shard", "0/2", "--out", str(out)],
          capsys, "--shard")  # fmt: skip
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("specter_count3", ("data.json", "count 3", "5 (direct citation) or 1")),
        ("specter_space_id", ("metadata.json", "whitespace")),
        ("specter_null_id", ("metadata.json", "paper_id is null")),
    ],
)
def test_forbidden_values_in_specter_dirs(work, tmp_path, capsys, key, words) -> None:
    fails(["mine", "--data-dir", str(work["root"] / key), "--out", str(tmp_path / "t")], capsys, *words)
    assert not (tmp_path / "t").exists()


def test_forbidden_values_in_scidocs_and_embeddings(work, tmp_path, capsys) -> None:
    out = str(tmp_path / "r.json")
    fails(["evaluate", "--data-dir", str(work["scidocs_self"]), "--embeddings", str(work["emb"]), "--tasks", "cite",
           "--out", out], capsys, "test.qrel", "its own candidate")  # fmt: skip
    fails(["evaluate", "--data-dir", str(work["scidocs_noheader"]), "--embeddings", str(work["emb"]),
           "--tasks", "recomm", "--out", out], capsys, "train.csv:1", "header")  # fmt: skip
    for name, words in (("null_id.jsonl", "not an id"), ("space_id.jsonl", "whitespace")):
        fails(["index", "--embeddings", str(work["root"] / name), "--out", str(tmp_path / "i.npz")], capsys, words)
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "i.npz").exists()


def test_triplets_missing_from_metadata_warn_with_counts(work, tmp_path, caplog) -> None:
    from specter_utils.data.specter_format import read_metadata
    from specter_utils.training.data import triplet_texts

    path = tmp_path / "train.jsonl"
    good = (work["triplets"] / "train.jsonl").read_text().splitlines()[:3]
    path.write_text("\n".join([*good, json.dumps({"query": "ghost", "pos": "p", "neg": "n", "kind": "easy"})]) + "\n")
    with caplog.at_level("WARNING"):
        texts = triplet_texts(path, read_metadata(work["train"] / "metadata.json"), " [SEP] ", drop_unknown=True)
    assert texts.without_metadata == 1
    assert "1 of 4 triplets dropped" in caplog.text and "ghost" in caplog.text


def test_n_queries_zero_names_the_real_cause(capsys) -> None:
    fails(["build-benchmark", "--corpus", "synthetic", "--out", "o", "--n-queries", "0"], capsys, "--n-queries")


def test_audit_last_line_names_the_other_overlaps(work, tmp_path, capsys) -> None:
    from specter_utils.benchmark.splits import benchmark_ids
    from specter_utils.data.scidocs import read_qrel
    from specter_utils.io import read_lines

    qrels = read_qrel(work["scidocs"] / "cite" / "test.qrel")
    groups = benchmark_ids(work["bench"])
    held = set().union(*(g.get(kind, set()) for g in groups.values() for kind in ("queries", "held_out")))
    candidate = next(c for docs in qrels.values() for c in docs if c not in held)  # a candidate, nothing held out
    query = read_lines(work["train"] / "train.txt")[0]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"query": query, "pos": query, "neg": candidate, "kind": "easy"}) + "\n")
    code, out, _ = call(["data", "audit", "--triplets", str(path), "--benchmark", str(work["bench"])], capsys)
    last = out.strip().splitlines()[-1]
    assert code == 0 and "no overlap" not in last and "candidate overlap: " in last


def test_max_class_papers_says_why_it_is_exceeded(capsys) -> None:
    from specter_utils.commands.build_benchmark import note_class_cap

    note_class_cap({"classes": 22, "train": 60, "val": 17, "test": 18}, 60)
    assert "95 papers, because each of its 22 classes keeps at least 3" in capsys.readouterr().err


def test_train_writes_nothing_when_its_inputs_fail(work, tmp_path, capsys) -> None:
    """A triplet naming an unknown paper: an error naming file, line and id, found before any write; with
    --drop-unknown, triplets whose papers are all missing leave nothing usable, also before any write."""
    triplets = tmp_path / "t"
    triplets.mkdir()
    (triplets / "train.jsonl").write_text(json.dumps({"query": "a", "pos": "b", "neg": "c", "kind": "easy"}) + "\n")
    run = tmp_path / "run"
    argv = ["train", "--triplets", str(triplets), "--metadata", str(work["train"] / "metadata.json"),
            "--out", str(run), "--max-length", "16", "--quiet"]  # fmt: skip
    fails(argv, capsys, "train.jsonl:1 (id 'a'): paper 'a' is not in the metadata")
    assert not run.exists()
    fails([*argv, "--drop-unknown"], capsys, "no usable triplets")
    assert not run.exists()


# ---------------------------------------------------------------- one vocabulary, one error path
def test_old_spellings_are_deprecated_aliases(capsys) -> None:
    from specter_utils.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(
        ["train", "--triplets", "T", "--metadata", "M", "--per-device-batch-size", "8", "--max-seq-length", "64",
         "--precision", "fp32", "--max-train-triplets", "10"]
    )  # fmt: skip
    assert (args.batch_size, args.max_length, args.dtype, args.max_triplets) == (
        8,
        64,
        "fp32",
        10,
    )
    err = capsys.readouterr().err
    assert err.count("is deprecated") == 4 and "use --batch-size" in err and "use --max-length" in err
    help_text = parser._subparsers._group_actions[0].choices["train"].format_help()
    assert "--per-device-batch-size" not in help_text and "--batch-size" in help_text
    args = parser.parse_args(["train", "--triplets", "T", "--metadata", "M", "--quiet", "--dtype", "bfloat16"])
    assert args.progress_bar is False and args.dtype == "bfloat16"
    from specter_utils.commands.train import config_from_args

    assert config_from_args(args).dtype == "bf16"  # embed's spelling of the value is accepted


def test_help_writes_defaults_one_way(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 32)" in text and "(default: 512)" in text and "(default 32)" not in text


def test_unexpected_error_is_one_line_and_debug_shows_it(work, tmp_path, capsys, monkeypatch) -> None:
    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("specter_utils.commands.index.run", broken)
    argv = ["index", "--embeddings", str(work["emb"]), "--out", str(tmp_path / "i.npz")]
    fails(argv, capsys, "unexpected ZeroDivisionError: division by zero", "rerun with --debug")
    with pytest.raises(ZeroDivisionError):
        main([*argv, "--debug"])


# ---------------------------------------------------------------- the sweep
def _sweep_cases() -> list[tuple[str, list[str], tuple[str, ...]]]:
    """(id, argv with {placeholders}, words of the error line). ``{new}`` is an output path that must stay absent."""
    e, s, m = "{emb}", "{scidocs}", "{meta}"
    ev = ["evaluate", "--data-dir", s, "--embeddings", e, "--out", "{new}"]
    emb = ["embed", "--metadata", m, "--out", "{new}.jsonl"]
    mine = ["mine", "--data-dir", "{train}", "--out", "{new}"]
    train = ["train", "--triplets", "{triplets}", "--metadata", "{train}/metadata.json", "--out", "{new}"]
    return [
        ("embed-batch-0", [*emb, "--batch-size", "0"], ("--batch-size", "at least 1")),
        ("embed-batch-text", [*emb, "--batch-size", "many"], ("--batch-size", "expected an integer")),
        ("embed-maxlen-1", [*emb, "--max-length", "1"], ("--max-length", "at least 2")),
        ("embed-chunk-neg", [*emb, "--chunk-size", "-5"], ("--chunk-size",)),
        ("embed-dtype", [*emb, "--dtype", "fp64"], ("--dtype", "invalid choice")),
        ("embed-out-suffix", ["embed", "--metadata", m, "--out", "{new}.txt"], ("must end in .jsonl",)),
        ("embed-out-exists", ["embed", "--metadata", m, "--out", "{exists_jsonl}"], ("--overwrite",)),
        ("embed-meta-dir", ["embed", "--metadata", "{dir}", "--out", "{new}.jsonl"], ("is a directory",)),
        ("embed-meta-missing", ["embed", "--metadata", "{root}/nope.json", "--out", "{new}.jsonl"], ("not found",)),
        ("embed-no-meta", ["embed", "--out", "{new}.jsonl"], ("--metadata",)),
        ("embed-ids-dir", [*emb, "--ids", "{dir}"], ("--ids", "is a directory")),
        ("embed-empty-model", [*emb, "--model", "{empty_model}"], ("model folder is empty",)),
        ("embed-baseline-unknown", [*emb, "--baseline", "doc2vec"], ("unknown baseline",)),
        ("embed-baseline-shard", [*emb, "--baseline", "sif", "--shard", "0/2"], ("--shard",)),
        ("embed-shard-bad", [*emb, "--shard", "3/2"], ("--shard",)),
        ("embed-merge-missing", ["embed", "--merge", "{root}/p.jsonl", "--out", "{new}.jsonl"], ("not found",)),
        (
            "eval-data-missing",
            ["evaluate", "--data-dir", "{root}/nope", "--embeddings", e, "--out", "{new}"],
            ("folder not found",),
        ),  # fmt: skip
        ("eval-data-file", ["evaluate", "--data-dir", "{file}", "--embeddings", e, "--out", "{new}"], ("is a file",)),
        ("eval-emb-dir", ["evaluate", "--data-dir", s, "--embeddings", "{dir}", "--out", "{new}"], ("directory",)),
        ("eval-emb-none", ["evaluate", "--data-dir", s, "--out", "{new}"], ("--embeddings",)),
        (
            "eval-npy-corrupt",
            ["evaluate", "--data-dir", s, "--embeddings", "{root}/npy/corrupt.npy", "--out", "{new}"],
            ("corrupt.npy", ".npy"),
        ),  # fmt: skip
        (
            "eval-npy-object",
            ["evaluate", "--data-dir", s, "--embeddings", "{root}/npy/object.npy", "--out", "{new}"],
            ("object.npy",),
        ),  # fmt: skip
        ("eval-out-exists", ["evaluate", "--data-dir", s, "--embeddings", e, "--out", "{file}"], ("--overwrite",)),
        ("eval-out-dir", ["evaluate", "--data-dir", s, "--embeddings", e, "--out", "{dir}"], ("is a directory",)),
        ("eval-threads-0", [*ev, "--threads", "0"], ("--threads",)),
        ("eval-split", [*ev, "--split", "train"], ("--split", "invalid choice")),
        ("eval-task-unknown", [*ev, "--tasks", "nope"], ("unknown task",)),
        ("eval-compare-unknown", [*ev, "--compare", "BERTX"], ("unknown paper rows",)),
        (
            "eval-self-qrel",
            ["evaluate", "--data-dir", "{scidocs_self}", "--embeddings", e, "--out", "{new}"],
            ("its own candidate",),
        ),  # fmt: skip
        (
            "eval-null-id",
            ["evaluate", "--data-dir", s, "--embeddings", "{root}/null_id.jsonl", "--out", "{new}"],
            ("not an id",),
        ),  # fmt: skip
        ("mine-missing", ["mine", "--data-dir", "{root}/nope", "--out", "{new}"], ("folder not found",)),
        ("mine-not-specter", ["mine", "--data-dir", "{dir}", "--out", "{new}"], ("no data.json",)),
        ("mine-max-negative", [*mine, "--max-triplets", "-1"], ("--max-triplets", "at least 0")),
        ("mine-max-alias", [*mine, "--max-train-triplets", "-1"], ("at least 0",)),
        ("mine-hard-ratio", [*mine, "--hard-ratio", "1.5"], ("--hard-ratio", "[0, 1]")),
        ("mine-per-query-0", [*mine, "--triplets-per-query", "0"], ("--triplets-per-query",)),
        ("mine-out-file", ["mine", "--data-dir", "{train}", "--out", "{file}"], ("is a file",)),
        ("mine-count-3", ["mine", "--data-dir", "{root}/specter_count3", "--out", "{new}"], ("count 3",)),
        ("mine-scincl-ratio", [*mine, "--strategy", "scincl", "--hard-ratio", "0.5"], ("specter and spectroid",)),
        (
            "bench-n-0",
            ["build-benchmark", "--corpus", "synthetic", "--out", "{new}", "--n-queries", "0"],
            ("--n-queries",),
        ),  # fmt: skip
        (
            "bench-class-neg",
            ["build-benchmark", "--corpus", "synthetic", "--out", "{new}", "--max-class-papers", "-1"],
            ("--max-class-papers",),
        ),  # fmt: skip
        (
            "bench-pool-text",
            ["build-benchmark", "--corpus", "synthetic", "--out", "{new}", "--negative-pool", "x"],
            ("--negative-pool",),
        ),  # fmt: skip
        ("bench-out-file", ["build-benchmark", "--corpus", "synthetic", "--out", "{file}"], ("is a file",)),
        (
            "bench-out-foreign",
            ["build-benchmark", "--corpus", "synthetic", "--out", "{nonempty}", "--overwrite"],
            ("did not write",),
        ),  # fmt: skip
        (
            "bench-tar-text",
            ["build-benchmark", "--corpus", "hepth", "--src", "{root}/hepth_text", "--out", "{new}"],
            ("not a readable .tar.gz",),
        ),  # fmt: skip
        (
            "convert-val-frac",
            ["data", "convert", "--format", "hepth", "--out", "{new}", "--val-fraction", "1.5"],
            ("--val-fraction",),
        ),  # fmt: skip
        (
            "convert-fracs-sum",
            [
                "data",
                "convert",
                "--format",
                "hepth",
                "--out",
                "{new}",
                "--val-fraction",
                "0.6",
                "--test-fraction",
                "0.5",
            ],
            ("no training queries",),
        ),  # fmt: skip
        (
            "convert-tar-gz",
            ["data", "convert", "--format", "hepth", "--src", "{root}/hepth_badgz", "--out", "{new}"],
            ("not a readable .tar.gz",),
        ),  # fmt: skip
        ("synthetic-topics-0", ["data", "synthetic", "--out", "{new}", "--topics", "0"], ("--topics",)),
        (
            "synthetic-papers-few",
            ["data", "synthetic", "--out", "{new}", "--papers", "25", "--topics", "5"],
            ("--papers",),
        ),  # fmt: skip
        ("stats-missing", ["data", "stats", "{root}/nope"], ("no such file",)),
        (
            "stats-reader-flag",
            ["data", "stats", "{scidocs}", "--unknown-papers", "drop"],
            ("--unknown-papers applies to citeseer and tables corpora only, not scidocs",),
        ),  # fmt: skip
        (
            "audit-bench-missing",
            ["data", "audit", "--triplets", "{triplets}", "--benchmark", "{root}/nope"],
            ("--benchmark",),
        ),  # fmt: skip
        ("train-batch-0", [*train, "--batch-size", "0"], ("--batch-size",)),
        ("train-maxlen-1", [*train, "--max-length", "1"], ("--max-length",)),
        ("train-lr-neg", [*train, "--learning-rate", "-1"], ("--learning-rate",)),
        ("train-warmup", [*train, "--warmup-ratio", "1"], ("--warmup-ratio",)),
        (
            "train-triplets-missing",
            ["train", "--triplets", "{root}/nope", "--metadata", m, "--out", "{new}"],
            ("--triplets", "folder not found"),
        ),  # fmt: skip
        (
            "train-triplets-empty",
            ["train", "--triplets", "{dir}", "--metadata", m, "--out", "{new}"],
            ("no train.jsonl",),
        ),  # fmt: skip
        (
            "train-meta-dir",
            ["train", "--triplets", "{triplets}", "--metadata", "{dir}", "--out", "{new}"],
            ("--metadata", "is a directory"),
        ),  # fmt: skip
        ("train-out-file", ["train", "--triplets", "{triplets}", "--metadata", m, "--out", "{file}"], ("is a file",)),
        ("index-out-suffix", ["index", "--embeddings", e, "--out", "{new}.txt"], ("must end in .npz",)),
        ("index-emb-dir", ["index", "--embeddings", "{dir}", "--out", "{new}.npz"], ("is a directory",)),
        ("index-threads-0", ["index", "--embeddings", e, "--out", "{new}.npz", "--threads", "0"], ("--threads",)),
        (
            "index-npy-truncated",
            ["index", "--embeddings", "{root}/npy/truncated.npy", "--out", "{new}.npz"],
            ("truncated.npy",),
        ),  # fmt: skip
        ("index-space-id", ["index", "--embeddings", "{root}/space_id.jsonl", "--out", "{new}.npz"], ("whitespace",)),
        ("search-k-0", ["search", "--index", "{new}.npz", "--paper-id", "x", "-k", "0"], ("-k",)),
        ("search-no-index", ["search", "--index", "{root}/none.npz", "--paper-id", "x"], ("none.npz",)),
        ("search-maxlen", ["search", "--index", "{new}.npz", "--text", "x", "--max-length", "0"], ("--max-length",)),
        ("compare-resamples", ["compare", "--data-dir", s, "--row", "a", e, "--resamples", "5"], ("--resamples",)),
        ("compare-row-dir", ["compare", "--data-dir", s, "--row", "a", "{dir}"], ("is a directory",)),
        ("compare-data-missing", ["compare", "--data-dir", "{root}/nope", "--row", "a", e], ("folder not found",)),
        ("run-notebook-99", ["run", "--notebooks", "99"], ("no notebook '99'",)),
        ("run-src-missing", ["run", "--src", "{root}/nope"], ("corpus not found",)),
        ("run-set-unknown", ["run", "--set", "training.nope=1", "--notebooks", "01"], ("training.nope",)),
        ("run-preset", ["run", "--preset", "nope"], ("--preset", "invalid choice")),
        ("report-missing", ["report", "--run", "nope", "--results-dir", "{root}/nope"], ("no executed notebooks",)),
    ]


SWEEP = _sweep_cases()


def test_the_sweep_has_at_least_40_cases() -> None:
    assert len(SWEEP) >= 40 and len({case for case, _, _ in SWEEP}) == len(SWEEP)


@pytest.mark.parametrize(("argv", "words"), [(argv, words) for _, argv, words in SWEEP], ids=[c for c, _, _ in SWEEP])
def test_sweep_of_malformed_inputs(work, tmp_path, capsys, argv, words) -> None:
    """Every malformed input: one error line, exit 2, no traceback, and no output left behind."""
    new = tmp_path / "out"
    paths = {key: str(value) for key, value in work.items()} | {"new": str(new)}
    fails([arg.format(**paths) for arg in argv], capsys, *words)
    assert not any(tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())
