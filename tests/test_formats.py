"""SciRepEval's four formats: the folder's configs and files, each evaluator against SciRepEval's own code
(``evaluation/evaluator.py``, copied below as the reference), and ``evaluate`` end to end with the offline model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from sklearn.metrics import f1_score
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.svm import LinearSVC, LinearSVR
from test_cli_errors import call, fails  # one way to run a command and read its single error line

from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.scoring import score_tasks
from specter_utils.evaluation.formats.tasks import load_task_data, read_tasks
from specter_utils.presentation.formats import formats_table
from specter_utils.workflow.formats import ModelRun, detect_layout, score_formats

TOPICS = {
    "physics": "quantum particle boson gauge field lattice neutrino collider string symmetry".split(),
    "biology": "protein gene cell enzyme genome tissue neuron mutation receptor bacteria".split(),
    "economics": "market price inflation trade labor monetary tax wage demand auction".split(),
}
NAMES = list(TOPICS)


def write_folder(root: Path, n: int = 60, seed: int = 0) -> Path:
    """One task of each format over ``n`` synthetic papers in three topics."""
    rng = np.random.default_rng(seed)
    topic = {f"p{i}": NAMES[i % 3] for i in range(n)}
    papers = {}
    for pid, name in topic.items():
        words = rng.choice(TOPICS[name], size=8)
        papers[pid] = {"doc_id": pid, "title": f"{words[0]} {words[1]} and {words[2]}", "abstract": " ".join(words)}
    ids = list(papers)

    def supervised(name: str, label) -> None:
        (root / name / "test").mkdir(parents=True)
        (root / name / "meta.jsonl").write_text("".join(json.dumps(papers[p]) + "\n" for p in ids))
        for split, part in (("train", ids[:36]), ("test", ids[36:])):
            rows = "".join(f"{p},{label(p)}\n" for p in part)
            (root / name / "test" / f"{split}.csv").write_text("paper_id,label\n" + rows)

    supervised("topic", lambda p: topic[p])
    supervised("impact", lambda p: NAMES.index(topic[p]) * 10 + int(p[1:]) % 5)

    def ranking(name: str, queries: dict[str, object]) -> None:
        (root / name / "test").mkdir(parents=True)
        meta, qrels = [], []
        for k, (qid, query) in enumerate(queries.items()):
            query_topic = topic[qid] if qid in topic else NAMES[k % 3]
            candidates = [p for p in ids[6 + k : 6 + k + 12] if p != qid]
            meta.append({"doc_id": qid, "query": query, "candidates": [papers[c] for c in candidates]})
            qrels += [{"query_id": qid, "cand_id": c, "score": int(topic[c] == query_topic)} for c in candidates]
        (root / name / "meta.jsonl").write_text("".join(json.dumps(r) + "\n" for r in meta))
        (root / name / "test" / "test_qrel.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qrels))

    ranking("related", {p: papers[p] for p in ids[:6]})
    ranking("search", {f"q{k}": f"{NAMES[k % 3]}: {' '.join(TOPICS[NAMES[k % 3]][:3])}" for k in range(3)})
    configs = [
        {"name": "topic", "type": "classification", "data": {"meta": "topic/meta.jsonl", "test": "topic/test"},
         "metrics": ["f1_macro", "accuracy"], "description": "the paper's topic"},
        {"name": "impact", "type": "regression", "data": {"meta": "impact/meta.jsonl", "test": "impact/test"},
         "metrics": ["kendalltau", "pearsonr"]},
        {"name": "related", "type": "proximity", "data": {"meta": "related/meta.jsonl", "test": "related/test"},
         "metrics": ["map", "ndcg"]},
        {"name": "search", "type": "adhoc_search", "data": {"meta": "search/meta.jsonl", "test": "search/test"},
         "metrics": ["ndcg_cut_10"], "fields": ["title"]},
    ]  # fmt: skip
    (root / "tasks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in configs))
    return root


def topic_vectors(ids: list[str], topic_of, noise: float = 0.8, seed: int = 0) -> EmbeddingSet:
    """Vectors near one centre per topic."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 16))
    rows = [centres[NAMES.index(topic_of(i))] + noise * rng.normal(size=16) for i in ids]
    return EmbeddingSet(list(ids), np.asarray(rows, dtype=np.float32))


@pytest.fixture
def folder(tmp_path) -> Path:
    return write_folder(tmp_path / "scirepeval")


def _topic(pid: str) -> str:
    return NAMES[int(pid[1:]) % 3]


def _query_topic(qid: str) -> str:
    return NAMES[int(qid[1:]) % 3]


# ---------------------------------------------------------------- SciRepEval's code, the reference
def scirepeval_classify(x_train, x_test, y_train, multi_label: bool):
    """``SupervisedEvaluator.classify`` (sklearn fallback), seeded as the project seeds it."""
    Cs = np.logspace(-2, 2, 5)
    if multi_label:
        estimator = LinearSVC(max_iter=10000, loss="hinge", random_state=42)
        svm = OneVsRestClassifier(GridSearchCV(estimator=estimator, cv=3, param_grid={"C": Cs}), n_jobs=1)
    else:
        svm = GridSearchCV(estimator=LinearSVC(loss="squared_hinge", random_state=42), cv=3, param_grid={"C": Cs})
    svm.fit(x_train, y_train)
    return svm.predict(x_test)


def scirepeval_retrieval(embeddings: dict, qrels: dict) -> dict:
    """``IREvaluator.retrieval``."""
    run = {}
    for qid in qrels:
        if qid in embeddings:
            query = np.array([embeddings[qid]])
            cids = [cid for cid in qrels[qid] if cid in embeddings]
            cands = np.array([embeddings[cid] for cid in qrels[qid] if cid in embeddings])
            scores = euclidean_distances(cands, query).flatten()
            run[qid] = {cid: float(-scores[i]) for i, cid in enumerate(cids)}
    return run


def trec_mean(qrels: dict, run: dict, measure: str) -> float:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    values = [scores[measure] for scores in per_query.values()]
    return float(np.round(100 * pytrec_eval.compute_aggregated_measure(measure, values), 2))


# ---------------------------------------------------------------- evaluators against the reference
def test_each_format_matches_scirepeval_on_the_same_vectors(folder) -> None:
    tasks = read_tasks(folder)
    data = {t.name: load_task_data(t) for t in tasks}
    vectors = topic_vectors([f"p{i}" for i in range(60)], _topic)
    queries = topic_vectors(["q0", "q1", "q2"], _query_topic, seed=1)
    result = score_tasks(tasks, data, vectors, queries)
    scores = result["tasks"]
    lookup = vectors.as_dict()

    topic = data["topic"]
    x = lambda rows: np.array([lookup[p] for p, _ in rows], dtype=np.float64)  # noqa: E731
    preds = scirepeval_classify(x(topic.train), x(topic.test), [label for _, label in topic.train], False)
    expected = round(100 * f1_score([label for _, label in topic.test], preds, average="macro"), 2)
    assert scores["topic"]["metrics"]["f1_macro"] == pytest.approx(expected)
    assert scores["topic"]["score"] == scores["topic"]["metrics"]["f1_macro"] > 50

    impact = data["impact"]
    svr = GridSearchCV(LinearSVR(random_state=42), {"C": np.logspace(-4, 2, 7)}, cv=3)
    svr.fit(x(impact.train), [label for _, label in impact.train])
    from scipy.stats import kendalltau

    tau = kendalltau([label for _, label in impact.test], svr.predict(x(impact.test)))[0]
    assert scores["impact"]["metrics"]["kendalltau"] == pytest.approx(round(100 * tau, 2))

    related = data["related"]
    run = scirepeval_retrieval(lookup, related.qrels)
    for measure in ("map", "ndcg"):
        assert scores["related"]["metrics"][measure] == pytest.approx(trec_mean(related.qrels, run, measure))
    assert scores["related"]["main_score"] == "map"

    search = data["search"]
    joined = {**lookup, **queries.as_dict()}
    run = scirepeval_retrieval(joined, search.qrels)
    assert scores["search"]["score"] == pytest.approx(trec_mean(search.qrels, run, "ndcg_cut_10"))

    assert set(result["formats"]) == {"classification", "regression", "proximity", "adhoc_search"}
    assert result["formats"]["proximity"]["average"] == scores["related"]["metrics"]["map"]
    main = [scores[t]["score"] for t in ("topic", "impact", "related", "search")]
    assert result["average"] == pytest.approx(round(float(np.mean(main)), 2))
    table = formats_table(result)
    assert "| topic | classification | f1_macro |" in table and "| all tasks |" in table


def multi_label_folder(tmp_path: Path) -> tuple[Path, list[str], dict, EmbeddingSet, np.random.Generator]:
    """One multi-label task ("fields": 48 papers, 32 train, "|"-joined labels, some papers with two) and vectors
    that carry each paper's labels; also the generator that drew them, for more draws."""
    root = tmp_path / "ml"
    (root / "fields" / "test").mkdir(parents=True)
    rng = np.random.default_rng(3)
    ids = [f"p{i}" for i in range(48)]
    labels = {
        p: sorted({NAMES[i % 3], NAMES[(i * 7) % 3]} if i % 4 == 0 else {NAMES[i % 3]}) for i, p in enumerate(ids)
    }
    (root / "fields" / "meta.jsonl").write_text("".join(json.dumps({"doc_id": p, "title": p}) + "\n" for p in ids))
    for split, part in (("train", ids[:32]), ("test", ids[32:])):
        rows = "".join(f"{p},{'|'.join(labels[p])}\n" for p in part)
        (root / "fields" / "test" / f"{split}.csv").write_text("paper_id,label\n" + rows)
    config = {"name": "fields", "type": "classification", "multi_label": True,
              "data": {"meta": "fields/meta.jsonl", "test": "fields/test"}, "metrics": ["f1_macro"]}  # fmt: skip
    (root / "tasks.jsonl").write_text(json.dumps(config) + "\n")
    vectors = EmbeddingSet(ids, rng.normal(size=(48, 8)).astype(np.float32))
    vectors.vectors[:, :3] += 2 * np.array([[name in labels[p] for name in NAMES] for p in ids])
    return root, ids, labels, vectors, rng


def test_multi_label_is_one_vs_rest_over_binarized_labels(tmp_path) -> None:
    """A "|"-joined label column, binarized over both splits' labels, scored as SciRepEval's multi-label SVM."""
    root, ids, labels, vectors, _ = multi_label_folder(tmp_path)
    result = score_formats(root, embeddings=vectors)
    binarizer = MultiLabelBinarizer(classes=NAMES)
    y_train, y_test = (
        binarizer.fit_transform([labels[p] for p in ids[:32]]),
        binarizer.transform([labels[p] for p in ids[32:]]),
    )
    x = vectors.vectors.astype(np.float64)
    preds = scirepeval_classify(x[:32], x[32:], y_train, True)
    assert result["tasks"]["fields"]["score"] == pytest.approx(round(100 * f1_score(y_test, preds, average="macro"), 2))
    assert result["tasks"]["fields"]["labels"] == 3


# ---------------------------------------------------------------- the folder's checks
def test_a_missing_file_is_named_before_anything_runs(folder, tmp_path, capsys) -> None:
    (folder / "impact" / "test" / "train.csv").unlink()
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(folder), "--out", str(tmp_path / "r.json")]
    fails(argv, capsys, "impact/test/train.csv", "missing file", "'impact'")
    with pytest.raises(DataError, match="train.csv"):
        read_tasks(folder)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"type": "ranking"}, ["not one of"]),
        ({"metrics": ["f1_macro", "auc"]}, ["'auc'"]),
        ({"data": {"meta": {"name": "allenai/scirepeval", "config": "fos"}, "test": "topic/test"}}, ["local files"]),
        ({"multi_label": "yes"}, ["multi_label"]),
    ],
)
def test_a_bad_task_line_is_one_error_naming_the_line(folder, tmp_path, capsys, change, words) -> None:
    lines = (folder / "tasks.jsonl").read_text().splitlines()
    first = {**json.loads(lines[0]), **change}
    (folder / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(folder), "--out", str(tmp_path / "r.json")]
    fails(argv, capsys, "tasks.jsonl:1", *words)


def test_embeddings_file_needs_query_vectors_for_adhoc_search(folder, tmp_path, capsys) -> None:
    papers = tmp_path / "papers.jsonl"
    write_embeddings(papers, topic_vectors([f"p{i}" for i in range(60)], _topic))
    out = tmp_path / "r.json"
    argv = ["evaluate", "--embeddings", str(papers), "--data-dir", str(folder), "--out", str(out)]
    fails(argv, capsys, "--query-embeddings", "'search'")
    assert not out.exists()
    code, printed, _ = call([*argv, "--tasks", "topic", "related", "--quiet"], capsys)
    assert code == 0 and set(json.loads(out.read_text())["tasks"]) == {"topic", "related"}
    queries = tmp_path / "queries.jsonl"
    write_embeddings(queries, topic_vectors(["q0", "q1", "q2"], _query_topic, seed=1))
    code, printed, _ = call([*argv, "--query-embeddings", str(queries), "--quiet", "--overwrite"], capsys)
    result = json.loads(out.read_text())
    assert code == 0 and set(result["formats"]) == {"classification", "regression", "proximity", "adhoc_search"}
    assert "| search | ad hoc search | ndcg_cut_10 |" in printed


def test_scidocs_flags_are_refused_on_a_scirepeval_folder(folder, tmp_path, capsys) -> None:
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(folder), "--out", str(tmp_path / "r.json")]
    fails([*argv, "--svm", "lightning"], capsys, "--svm", "SCIDOCS")
    fails([*argv, "--split", "val"], capsys, "--split")


def test_a_folder_of_no_known_layout_is_one_error(tmp_path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(empty), "--out", str(tmp_path / "r.json")]
    fails(argv, capsys, "tasks.jsonl", "paper_metadata_*.json", "corpus.jsonl")
    with pytest.raises(DataError):
        detect_layout(empty)


# ---------------------------------------------------------------- end to end with the offline model
def test_evaluate_model_on_every_format(folder, tmp_path, capsys) -> None:
    out = tmp_path / "formats.json"
    argv = ["evaluate", "--model", "minilm", "--data-dir", str(folder), "--max-length", "32", "--out", str(out)]
    code, printed, err = call(argv, capsys)
    assert code == 0, err
    result = json.loads(out.read_text())
    assert [row["task"] for row in result["table"]] == ["topic", "impact", "related", "search"]
    for name, task in result["tasks"].items():
        assert 0 <= task["score"] <= 100, (name, task)
    assert result["tasks"]["topic"]["score"] > 60  # the topic words separate the papers
    assert result["tasks"]["search"]["coverage"]["queries_evaluated"] == 3
    model = result["config"]["model"]
    assert model["embeddings"]["scirepeval-title-abstract"]["papers"] == 60
    assert model["embeddings"]["queries"]["papers"] == 3
    assert model["embeddings"]["scirepeval-title"]["papers"] == 14  # search embeds its candidates' titles alone
    assert "| all tasks |" in printed
    # a second call reads every vector from the cache
    code, printed, _ = call([*argv, "--quiet", "--overwrite"], capsys)
    again = json.loads(out.read_text())
    assert code == 0 and again["tasks"] == result["tasks"]
    assert all(r["embedded_now"] == 0 for r in again["config"]["model"]["embeddings"].values())


def test_adhoc_queries_take_the_query_prompt_and_papers_the_document_prompt(folder, tmp_path, random_tiny_model):
    """A model whose sentence-transformers config has prompts: "query: " before each ad hoc query text,
    "passage: " before each paper."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    from specter_utils.embedding.io import read_embeddings

    transformer = Transformer(str(random_tiny_model))
    model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")])
    model_dir = tmp_path / "st_model"
    model.save(str(model_dir))
    config_path = model_dir / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config_path.write_text(json.dumps({**config, "prompts": {"query": "query: ", "document": "passage: "}}))
    cache = tmp_path / "cache"
    result = score_formats(
        folder, model=ModelRun(str(model_dir), max_length=32, progress=False), tasks=["search"], cache_dir=cache
    )
    record = result["config"]["model"]
    assert record["prompts"] == {"query": "query: ", "document": "passage: "}
    queries = read_embeddings(record["embeddings"]["queries"]["file"])
    texts = {q: p.title for q, p in load_task_data(read_tasks(folder, ["search"])[0]).queries.items()}
    loaded = SentenceTransformer(str(model_dir))
    loaded.max_seq_length = 32
    expected = loaded.encode([f"query: {texts[q]}" for q in queries.ids])
    assert np.allclose(expected, queries.vectors, atol=1e-5)
    assert not np.allclose(loaded.encode([texts[q] for q in queries.ids]), queries.vectors, atol=1e-5)
    titles = read_embeddings(record["embeddings"]["scirepeval-title"]["file"])
    assert titles.titles and all(title.startswith("passage: ") for title in titles.titles)
