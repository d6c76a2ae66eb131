"""The `citeseer` and `arxiv` presets on small slices of their corpora, through the real notebooks 01 and 02.

Each preset keeps its own corpus kind (citeseer; tables: aligned one-column files with edges by row index) and
its own lengths; the overrides only shrink sizes (queries, triplets, baselines) and point ``data.src`` at a slice
written in tmp_path from the CiteSeer copy bundled with the package, so the tests read no large file.
Notebooks 01 (the reader, the benchmark) and 02 (mining, the leakage audit) are what differs between presets;
03-05 run the same code for every preset and the smoke run (tests/test_notebooks.py) covers them. Through 05,
each preset here took minutes of CPU even on these slices (a kernel per notebook, a model trained and two
embedded), too much for the suite.

- ``citeseer``: the papers reached from CiteSeer's most-cited paper along citations, as a CiteSeer folder;
- ``arxiv``: the same papers as arXiv-2023's layout (``ids``, ``titles``, ``labels`` and ``edges`` by row
  index, gzipped CSV), titles only, as the real files have them.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter, deque
from pathlib import Path

import pytest

from specter_utils.data.citeseer import CITES_FILE, TEXTS_FILE, bundled_dir, find_file, iter_citeseer_texts
from specter_utils.data.load import load_corpus
from specter_utils.pipeline import NOTEBOOKS, PipelineSetup, run_pipeline
from specter_utils.spec import load_spec

TOPICS = ("Agents", "AI", "DB", "HCI", "IR", "ML")  # CiteSeer's 6 classes: each slice keeps all of them
SLICE_PAPERS = 240  # papers of each slice: 40 per topic, above the small-corpus class minimum (10)
# Sizes only: each preset keeps its corpus kind, its lengths and its recipe.
SMALL = {
    "data.n_queries": 10,  # of 21 eligible cite queries
    "training.max_triplets": 32,  # one optimiser step (the notebooks after 02 read it; it must still resolve)
    "training.max_val_triplets": 8,
    "embedding.baselines": ["random"],
}
NOTEBOOKS_RUN = NOTEBOOKS[:2]


def citeseer_slice_keys(n_papers: int = SLICE_PAPERS) -> list[str]:
    """``n_papers`` keys of the bundled CiteSeer, as many per topic, each topic's reached breadth-first along
    citations from its most-cited papers: every topic is a class of the slice, and papers cite each other."""
    corpus = load_corpus("citeseer")
    labels = corpus.labels()
    neighbours: dict[str, set[str]] = {key: set() for key in corpus.papers}
    for citing, cited in corpus.edges:
        neighbours[citing].add(cited)
        neighbours[cited].add(citing)
    topics = sorted(set(labels.values()))
    keys: list[str] = []
    for topic in topics:
        members = sorted((k for k in corpus.papers if labels[k] == topic), key=lambda k: (-len(neighbours[k]), k))
        taken: list[str] = []
        for start in members:
            queue = deque([start] if start not in taken else [])
            while queue and len(taken) < n_papers // len(topics):
                key = queue.popleft()
                if key in taken:
                    continue
                taken.append(key)
                queue.extend(sorted(k for k in neighbours[key] if labels[k] == topic and k not in taken))
            if len(taken) == n_papers // len(topics):
                break
        keys.extend(taken)
    return keys


def write_citeseer_slice(folder: Path, keys: list[str]) -> Path:
    """A CiteSeer folder (the original text lines, ``CITED<TAB>CITING``) of ``keys`` and the citations among them."""
    folder.mkdir(parents=True)
    wanted = set(keys)
    texts = [
        f"{key}\n{text}\n{label}\n"
        for _, key, text, label in iter_citeseer_texts(find_file(bundled_dir(), TEXTS_FILE))
        if key in wanted
    ]
    (folder / TEXTS_FILE).write_text("".join(texts), encoding="utf-8")
    with gzip.open(find_file(bundled_dir(), CITES_FILE), "rt", encoding="utf-8") as handle:
        cites = [line.strip() for line in handle if line.strip()]
    cites = [line for line in cites if all(key in wanted for key in line.split("\t"))]
    (folder / CITES_FILE).write_text("".join(f"{line}\n" for line in cites), encoding="utf-8")
    return folder


def write_tables_slice(folder: Path, keys: list[str]) -> Path:
    """``keys`` in arXiv-2023's aligned layout: ids, titles, labels (one-column gzipped CSV), edges by row index."""
    corpus = load_corpus("citeseer")
    folder.mkdir(parents=True)
    row = {key: i for i, key in enumerate(keys)}
    labels = corpus.labels()

    def write(name: str, header: list[str], rows: list[list]) -> None:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        (folder / name).write_bytes(gzip.compress(text.getvalue().encode()))

    write("ids.csv.gz", ["ids"], [[key] for key in keys])
    write("titles.csv.gz", ["titles"], [[corpus.papers[key].title] for key in keys])
    write("labels.csv.gz", ["labels"], [[labels[key]] for key in keys])
    edges = [[row[a], row[b]] for a, b in corpus.edges if a in row and b in row]  # citing, cited
    write("edges.csv.gz", ["source", "target"], edges)
    return folder


@pytest.fixture(scope="module")
def slice_keys() -> list[str]:
    return citeseer_slice_keys()


def run_preset(preset: str, src: Path, root: Path) -> Path:
    """Notebooks 01 and 02 of ``preset`` on ``src`` with the sizes shrunk; the run folder."""
    overrides = {**SMALL, "data.src": str(src)}
    spec = load_spec(preset, overrides)  # resolves: no key of SMALL is unknown to the preset
    assert spec["data.corpus"] == load_spec(preset)["data.corpus"]
    result = run_pipeline(
        preset,
        run=preset,
        notebooks=list(NOTEBOOKS_RUN),
        overrides=overrides,
        setup=PipelineSetup(root / "results", root / "figures", progress_bar=False, echo=lambda *_: None),
    )
    return result.run_dir


def check_run(run_dir: Path, preset: str, corpus: str, n_classes: int) -> None:
    """benchmark.json has the corpus and its classes; each notebook read the preset's specification."""
    benchmark = json.loads((run_dir / "01_prepare_data" / "benchmark" / "benchmark.json").read_text())
    assert benchmark["corpus"] == corpus and benchmark["counts"]["mag"]["classes"] == n_classes
    expected = load_spec(preset, SMALL).to_dict()
    for name in NOTEBOOKS_RUN:
        metrics = json.loads((run_dir / name / "metrics.json").read_text())
        assert metrics["spec"]["embedding"]["max_length"] == load_spec(preset)["embedding.max_length"], name
        assert metrics["spec"]["training"] == expected["training"], name
    mined = json.loads((run_dir / NOTEBOOKS_RUN[1] / "metrics.json").read_text())
    assert mined["train"]["triplets"]["total"] > 0 and mined["leakage"]["leak_free"] is True


@pytest.mark.notebooks
def test_citeseer_preset_on_a_slice(slice_keys, tmp_path) -> None:
    src = write_citeseer_slice(tmp_path / "citeseer", slice_keys)
    corpus = load_corpus("citeseer", src)
    assert len(corpus.papers) == SLICE_PAPERS and len(corpus.edges) > SLICE_PAPERS
    assert Counter(corpus.labels().values()) == Counter(dict.fromkeys(TOPICS, SLICE_PAPERS // 6))
    run_dir = run_preset("citeseer", src, tmp_path)
    check_run(run_dir, "citeseer", "citeseer", 6)


@pytest.mark.notebooks
def test_arxiv_preset_on_a_tables_slice(slice_keys, tmp_path) -> None:
    src = write_tables_slice(tmp_path / "arxiv", slice_keys)
    corpus = load_corpus("tables", src)
    assert corpus.info["layout"] == "aligned columns" and corpus.info["edges_by"] == "row"
    assert not any(paper.abstract for paper in corpus.papers.values())  # titles only, as arXiv-2023
    assert Counter(corpus.labels().values()) == Counter(dict.fromkeys(TOPICS, SLICE_PAPERS // 6))
    run_dir = run_preset("arxiv", src, tmp_path)
    check_run(run_dir, "arxiv", "tables", 6)
