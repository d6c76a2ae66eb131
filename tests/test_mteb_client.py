"""MTEB's own evaluators, run on local tasks through :mod:`evaluation.mteb_client`, agree with the project's.

Retrieval: MTEB's ``ndcg_at_10`` on a BEIR folder equals the project's BEIR scoring (``evaluation.beir``) of the
same model's vectors, and ``evaluate --model`` on the folder (the project's whole path, its own encoder) within
0.1 points.

Classification: MTEB fits its evaluator model (logistic regression, ``max_iter=100``, seeded) on undersampled
training sets; with ``samples_per_label`` above every label's training count and one experiment it fits on the
whole training split, which is a setting the project's classification scoring reproduces by taking the same
classifier (``evaluation.formats.classification.evaluate(classifier=...)``). MTEB's macro F1 then equals the
project's ``f1_macro`` (x 100) within 0.1 points. With MTEB's defaults (8 papers a label, 10 experiments) the two
differ by design: MTEB averages over small random training sets, SciRepEval (and the project) trains one SVM on
the whole split.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import installed
from sklearn.linear_model import LogisticRegression

from specter_utils.cli import main
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.beir import read_beir_dir, retrieval_metrics, retrieve
from specter_utils.evaluation.formats import classification
from specter_utils.evaluation.formats.tasks import load_task_data, read_tasks
from specter_utils.evaluation.mteb_client import (
    MTEB_SEED,
    load_model,
    local_classification_task,
    local_retrieval_task,
    run_mteb,
)

# mteb is imported by the tests that run it, not at collection (its import takes seconds on every worker)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not installed("mteb"),
        reason="mteb is not installed (pip install -e .[mteb]; the dev extra has it)",
    ),
]

TOPICS = {
    "physics": "quantum particle boson gauge field lattice neutrino collider string symmetry".split(),
    "biology": "protein gene cell enzyme genome tissue neuron mutation receptor bacteria".split(),
    "economics": "market price inflation trade labor monetary tax wage demand auction".split(),
}
NAMES = list(TOPICS)
MAX_LENGTH = 32


def write_beir(root: Path, seed: int = 0) -> Path:
    """24 documents in three topics, 6 queries of two topic words; a same-topic document is relevant (2 when it
    holds both query words)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    docs = {}
    for i in range(24):
        words = list(rng.choice(TOPICS[NAMES[i % 3]], size=6, replace=False))
        docs[f"d{i}"] = (NAMES[i % 3], words)
    queries = {f"q{k}": (NAMES[k % 3], list(rng.choice(TOPICS[NAMES[k % 3]], size=2, replace=False))) for k in range(6)}
    with open(root / "corpus.jsonl", "w") as handle:
        for doc_id, (_, words) in docs.items():
            handle.write(json.dumps({"_id": doc_id, "title": " ".join(words[:2]), "text": " ".join(words[2:])}) + "\n")
    with open(root / "queries.jsonl", "w") as handle:
        for query_id, (_, words) in queries.items():
            handle.write(json.dumps({"_id": query_id, "text": " ".join(words)}) + "\n")
    (root / "qrels").mkdir()
    lines = ["query-id\tcorpus-id\tscore"]
    for query_id, (topic, words) in queries.items():
        for doc_id, (doc_topic, doc_words) in docs.items():
            if doc_topic == topic:
                lines.append(f"{query_id}\t{doc_id}\t{2 if set(words) <= set(doc_words) else 1}")
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def write_classification(root: Path, seed: int = 0) -> Path:
    """A SciRepEval-format folder with one single-label task: 45 papers, 30 to train on, mixed topic words and
    a quarter of the labels swapped for another topic (so that no classifier is perfect)."""
    rng = np.random.default_rng(seed)
    (root / "topic" / "test").mkdir(parents=True)
    rows, labels = [], {}
    for i in range(45):
        topic = NAMES[i % 3]
        other = NAMES[(i + 1) % 3]
        words = list(rng.choice(TOPICS[topic], size=4)) + list(rng.choice(TOPICS[other], size=2))
        rng.shuffle(words)
        rows.append({"doc_id": f"p{i}", "title": " ".join(words[:3]), "abstract": " ".join(words[3:])})
        labels[f"p{i}"] = other if rng.random() < 0.25 else topic
    (root / "topic" / "meta.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = list(labels)
    for split, part in (("train", ids[:30]), ("test", ids[30:])):
        text = "paper_id,label\n" + "".join(f"{p},{labels[p]}\n" for p in part)
        (root / "topic" / "test" / f"{split}.csv").write_text(text)
    config = {"name": "topic", "type": "classification", "data": {"meta": "topic/meta.jsonl", "test": "topic/test"}}
    (root / "tasks.jsonl").write_text(json.dumps({**config, "metrics": ["f1_macro"]}) + "\n")
    return root


def test_mteb_and_the_project_agree_on_retrieval_and_classification(tmp_path, capsys) -> None:
    beir = write_beir(tmp_path / "beir")
    folder = write_classification(tmp_path / "scirepeval")
    model = load_model("minilm", MAX_LENGTH)
    sep = model.tokenizer.sep_token
    tasks = [
        local_retrieval_task(beir),
        local_classification_task(folder, "topic", sep=sep, samples_per_label=1000, n_experiments=1),
    ]
    out = tmp_path / "mteb"
    scores = run_mteb(model, tasks, out)
    assert set(scores) == {"LocalRetrieval", "Local_topic"}
    for name, record in scores.items():
        assert Path(record["file"]).is_file() and Path(record["file"]).parent.parent.name == "specter-utils__minilm"
        written = json.loads(Path(record["file"]).read_text())
        assert written["task_name"] == name
        assert written["scores"]["test"][0]["main_score"] == pytest.approx(record["main_score"])

    # retrieval: the project's BEIR scoring of the same model's vectors
    data = read_beir_dir(beir)
    query_ids = [q for q in data.queries if q in data.qrels]
    doc_ids = list(data.corpus)
    query_vectors = model.encode([data.queries[q] for q in query_ids])
    doc_vectors = model.encode([f"{title} {text}".strip() for title, text in data.corpus.values()])
    run = retrieve(query_ids, query_vectors, doc_ids, doc_vectors, model.similarity_fn_name or "cosine")
    ours = retrieval_metrics(data.qrels, run)
    mteb_retrieval = scores["LocalRetrieval"]
    assert mteb_retrieval["main_score"] == pytest.approx(mteb_retrieval["scores"]["ndcg_at_10"])
    assert 100 * abs(ours["ndcg_at_10"] - mteb_retrieval["main_score"]) <= 0.1
    assert 100 * abs(ours["map_at_100"] - mteb_retrieval["scores"]["map_at_100"]) <= 0.1
    assert 0.3 < ours["ndcg_at_10"] < 1  # the queries' words find their topic, not a trivial ranking

    # ... and through `evaluate --model` (the project's encoder and cache)
    result_file = tmp_path / "beir.json"
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(beir), "--max-length", str(MAX_LENGTH)]
    assert main([*argv, "--out", str(result_file), "--quiet"]) == 0
    capsys.readouterr()
    assert 100 * abs(json.loads(result_file.read_text())["ndcg_at_10"] - mteb_retrieval["main_score"]) <= 0.1

    # classification: the project's scoring with MTEB's classifier, on the whole training split
    (task,) = read_tasks(folder)
    papers = load_task_data(task)
    ids = list(papers.papers)
    vectors = model.encode([f"{papers.papers[p].title}{sep}{papers.papers[p].abstract}" for p in ids])
    embeddings = EmbeddingSet(ids, np.asarray(vectors, dtype=np.float32))
    ours_cls = classification.evaluate(
        task, papers, embeddings, classifier=lambda _: LogisticRegression(max_iter=100, random_state=MTEB_SEED)
    )
    mteb_f1 = scores["Local_topic"]["main_score"]
    assert mteb_f1 == pytest.approx(scores["Local_topic"]["scores"]["f1"])
    assert abs(ours_cls["metrics"]["f1_macro"] - 100 * mteb_f1) <= 0.1, (ours_cls, mteb_f1)
    assert 0.4 < mteb_f1 < 1  # mixed topic words: neither chance nor trivial
