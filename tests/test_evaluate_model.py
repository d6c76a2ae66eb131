"""``evaluate --model``: any model scored in one command on a BEIR (MTEB) or a SCIDOCS folder, with a cache.

Tiny folders generated here and a random 2-layer BERT (conftest), so each call takes a second or two.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_cli_errors import call  # one way to run a command and read its exit code and output

from specter_utils.evaluation.beir import read_beir_dir, retrieval_metrics, retrieve, similarity_scores

WORDS = "quark gluon lattice string brane boson fermion neutrino cosmology inflation axion entropy".split()


def write_beir(root: Path, n_docs: int = 14, n_queries: int = 4, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as handle:
        for i in range(n_docs):
            words = rng.choice(WORDS, size=6)
            handle.write(json.dumps({"_id": f"d{i}", "title": " ".join(words[:2]), "text": " ".join(words[2:])}) + "\n")
    with open(root / "queries.jsonl", "w") as handle:
        for q in range(n_queries):
            handle.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choice(WORDS, size=3))}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    for q in range(n_queries):
        for d in rng.choice(n_docs, size=3, replace=False):
            lines.append(f"q{q}\td{d}\t1")
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def fails(argv: list[str], capsys, *words: str) -> str:
    code, out, err = call(argv, capsys)
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert len(errors) == 1, err
    assert errors[0].startswith("specter-utils evaluate: error: "), errors[0]
    for word in words:
        assert word in errors[0], (word, errors[0])
    return errors[0]


def cached_vectors(cache: Path, part: str) -> tuple[list[str], np.ndarray]:
    (npy,) = cache.glob(f"*-{part}.npy")
    ids = npy.with_suffix(".ids.txt").read_text().split()
    return ids, np.load(npy)


def test_beir_ndcg_equals_pytrec_eval_on_the_same_vectors(tmp_path, capsys, random_tiny_model):
    import pytrec_eval

    from specter_utils.embedding.encoder import load_encoder

    beir = write_beir(tmp_path / "beir")
    out, cache = tmp_path / "r.json", tmp_path / "cache"
    argv = ["evaluate", "--model", str(random_tiny_model), "--data-dir", str(beir), "--max-length", "32"]
    code, stdout, _ = call([*argv, "--out", str(out), "--cache-dir", str(cache), "--quiet"], capsys)
    assert code == 0, stdout
    result = json.loads(out.read_text())
    assert {"ndcg_at_10", "map_at_100", "recall_at_100"} <= set(result)

    # the vectors: the model on MTEB's text (title + " " + text; the query's text), no separator token
    data = read_beir_dir(beir)
    doc_ids, doc_vectors = cached_vectors(cache, "corpus")
    query_ids, query_vectors = cached_vectors(cache, "queries")
    encoder = load_encoder(str(random_tiny_model), None, 32, "cpu", "float32")
    texts = [f"{data.corpus[d][0]} {data.corpus[d][1]}" for d in doc_ids]
    assert np.allclose(encoder.model.encode(texts), doc_vectors, atol=1e-5)
    assert np.allclose(encoder.model.encode([data.queries[q] for q in query_ids]), query_vectors, atol=1e-5)

    # pytrec_eval on the full ranking by cosine, independently of the command's top-k run
    scores = similarity_scores(query_vectors, doc_vectors, "cosine")
    run = {q: {d: float(scores[i, j]) for j, d in enumerate(doc_ids)} for i, q in enumerate(query_ids)}
    per_query = pytrec_eval.RelevanceEvaluator(data.qrels, {"ndcg_cut.10"}).evaluate(run)
    expected = float(np.mean([s["ndcg_cut_10"] for s in per_query.values()]))
    assert result["ndcg_at_10"] == pytest.approx(expected, abs=1e-5)
    assert 0 < result["ndcg_at_10"] <= 1

    # a second call embeds nothing: every vector comes from the cache
    out2 = tmp_path / "r2.json"
    assert call([*argv, "--out", str(out2), "--cache-dir", str(cache), "--quiet"], capsys)[0] == 0
    again = json.loads(out2.read_text())
    assert again["ndcg_at_10"] == result["ndcg_at_10"]
    assert all(e["embedded_now"] == 0 for e in again["config"]["embeddings"].values())


def test_retrieve_keeps_top_k_and_drops_the_query_itself():
    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(30, 4)), rng.normal(size=(3, 4))
    doc_ids = [f"d{i}" for i in range(30)]
    run = retrieve(["d0", "q1", "q2"], queries, doc_ids, docs, "dot", top_k=5)
    assert all(len(r) == 5 for r in run.values())
    assert "d0" not in run["d0"]
    full = queries[1] @ docs.T
    assert list(run["q1"]) == [doc_ids[j] for j in np.argsort(-full)[:5]]
    qrels = {"q1": {doc_ids[int(np.argmax(full))]: 1}}
    assert retrieval_metrics(qrels, run)["ndcg_at_10"] == 1.0


def test_prompts_from_the_sentence_transformers_config(tmp_path, random_tiny_model):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    from specter_utils.evaluation.model_eval import ModelRun, evaluate_model_beir

    transformer = Transformer(str(random_tiny_model))
    model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")])
    folder = tmp_path / "st_model"
    model.save(str(folder))
    config_path = folder / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config["prompts"] = {"query": "query: ", "document": "passage: "}
    config_path.write_text(json.dumps(config))

    beir = write_beir(tmp_path / "beir")
    cache = tmp_path / "cache"
    result = evaluate_model_beir(ModelRun(str(folder), max_length=32, progress=False), beir, cache)
    assert result["config"]["prompts"] == {"query": "query: ", "document": "passage: "}
    data = read_beir_dir(beir)
    query_ids, query_vectors = cached_vectors(cache, "queries")
    loaded = SentenceTransformer(str(folder))
    loaded.max_seq_length = 32
    expected = loaded.encode([f"query: {data.queries[q]}" for q in query_ids])
    assert np.allclose(expected, query_vectors, atol=1e-5)
    plain = loaded.encode([data.queries[q] for q in query_ids])
    assert not np.allclose(plain, query_vectors, atol=1e-5)


def test_scidocs_layout_embeds_only_the_papers_the_tasks_read(tmp_path, capsys, random_tiny_model, monkeypatch):
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.scidocs import papers_needed
    from specter_utils.data.synthetic import generate_synthetic_corpus

    bench = tmp_path / "bench"
    build_benchmark(generate_synthetic_corpus(n_papers=90, n_topics=3, seed=2), bench, seed=2, n_queries=8)
    scidocs, cache, out = bench / "scidocs", tmp_path / "cache", tmp_path / "r.json"
    monkeypatch.chdir(tmp_path)  # a relative --data-dir is relative to the working directory
    argv = ["evaluate", "--model", str(random_tiny_model), "--data-dir", "bench/scidocs", "--cache-dir", str(cache)]
    code, stdout, _ = call([*argv, "--tasks", "cite", "--max-length", "24", "--out", str(out), "--quiet"], capsys)
    assert code == 0, stdout
    result = json.loads(out.read_text())
    record = result["config"]["model"]
    assert record["embedded_now"] == len(papers_needed(scidocs, "test", ["cite"]))
    assert record["max_length"] == 24 and record["length_source"] == "given"
    assert "cite" in result and "mag" not in result
    # more tasks later: only the papers the cache lacks are embedded
    out2 = tmp_path / "r2.json"
    code, _, _ = call([*argv, "--max-length", "24", "--out", str(out2), "--quiet"], capsys)
    assert code == 0
    again = json.loads(out2.read_text())["config"]["model"]
    assert again["from_cache"] == record["papers"]
    assert again["embedded_now"] == len(papers_needed(scidocs, "test")) - record["papers"]
    # the scores are those of the plain evaluate on the cached file
    out3 = tmp_path / "r3.json"
    (jsonl,) = cache.glob("*-papers.jsonl")
    code, _, _ = call(["evaluate", "--data-dir", str(scidocs), "--embeddings", str(jsonl), "--out", str(out3)], capsys)
    assert code == 0
    assert json.loads(out3.read_text())["cite"] == json.loads(out2.read_text())["cite"]


# ---------------------------------------------------------------- bad input: one line naming the file
@pytest.fixture
def beir(tmp_path) -> Path:
    return write_beir(tmp_path / "beir")


def _argv(beir: Path, tmp_path: Path) -> list[str]:
    return ["evaluate", "--model", "minilm", "--data-dir", str(beir), "--out", str(tmp_path / "r.json")]


@pytest.mark.parametrize("missing", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
def test_beir_folder_missing_a_file(beir, tmp_path, capsys, missing):
    (beir / missing).unlink()
    fails(_argv(beir, tmp_path), capsys, missing, "missing")
    assert not (tmp_path / "r.json").exists()


def test_qrels_naming_unknown_ids(beir, tmp_path, capsys):
    qrels = beir / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q0\tnot-a-doc\t1\n")
    fails(_argv(beir, tmp_path), capsys, "qrels/test.tsv", "not-a-doc", "corpus.jsonl")
    qrels.write_text("query-id\tcorpus-id\tscore\nghost\td1\t1\n")
    fails(_argv(beir, tmp_path), capsys, "qrels/test.tsv:2", "ghost", "queries.jsonl")


def test_empty_queries_file(beir, tmp_path, capsys):
    (beir / "queries.jsonl").write_text("")
    fails(_argv(beir, tmp_path), capsys, "queries.jsonl", "empty")


def test_embeddings_files_with_a_beir_folder_are_refused(beir, tmp_path, capsys):
    emb = tmp_path / "e.jsonl"
    emb.write_text('{"paper_id": "d0", "embedding": [1.0]}\n')
    argv = ["evaluate", "--data-dir", str(beir), "--embeddings", str(emb), "--out", str(tmp_path / "r.json")]
    fails(argv, capsys, "BEIR", "--model")
