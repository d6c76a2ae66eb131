"""Table 1's rows that are not embeddings (evaluation.rankers): BM25, in-degree and year on a hand-checkable benchmark,
their rendering beside the embedding rows, and the whole notebook-05 path on a synthetic benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from specter_utils.config import EvalConfig
from specter_utils.data.scidocs import ScidocsData, scidocs_record, write_scidocs_dir
from specter_utils.errors import DataError
from specter_utils.evaluation.rankers import (
    ranker_data,
    ranker_run,
    ranking_qrels,
    score_rankers,
    year_score,
)
from specter_utils.evaluation.ranking import trec_metrics
from specter_utils.presentation.structure import structure_sentences
from specter_utils.presentation.tables import comparison_table, render, with_rankers

# Who cites whom (citing -> cited). q1 is cite's query, q2 co-cite's: held-out queries, whose citations never count.
CITATIONS = {
    "x1": ["popular", "cited_by_query"],
    "x2": ["popular"],
    "x3": ["popular"],
    "q1": ["cited_by_query", "recent"],
    "q2": ["popular", "lonely", "recent"],
}
TEXTS = {
    "q1": "black hole entropy from string theory microstates",
    "q2": "lattice gauge theory on a computer",
    "popular": "renormalization of scalar fields in flat space",
    "cited_by_query": "counting black hole microstates and entropy in string theory",
    "recent": "cosmological constant in supergravity",
    "lonely": "supersymmetric quantum mechanics",
    "x1": "notes on dualities",
    "x2": "a review of anomalies",
    "x3": "instantons and monopoles",
}
YEARS = {"q1": 2000, "q2": 2000, "popular": 1995, "cited_by_query": 1999, "recent": 2001, "lonely": 1990}
YEARS.update(x1=1996, x2=1997, x3=1998)
CITE = {"q1": {"cited_by_query": 1, "popular": 0, "recent": 0, "lonely": 0}}
COCITE = {"q2": {"popular": 1, "lonely": 0, "recent": 0, "cited_by_query": 0}}


def write_benchmark(root: Path, graph: bool = True, years: bool = True) -> Path:
    cited_by: dict[str, list[str]] = {}
    for citing, cited in CITATIONS.items():
        for paper in cited:
            cited_by.setdefault(paper, []).append(citing)
    records = {
        pid: scidocs_record(
            pid,
            text.split(" ", 1)[0],
            text.split(" ", 1)[1],
            cited_by=cited_by.get(pid) if graph else None,
            references=CITATIONS.get(pid) if graph else None,
            year=YEARS[pid] if years else None,
        )
        for pid, text in TEXTS.items()
    }
    data = ScidocsData(root=root)
    data.ranking = {"cite": {"test": CITE, "val": CITE}, "cocite": {"test": COCITE, "val": COCITE}}
    data.metadata = {"view_cite_read": records}
    write_scidocs_dir(root, data)
    return root


@pytest.fixture()
def bench(tmp_path: Path) -> Path:
    return write_benchmark(tmp_path / "scidocs")


def ranking(bench: Path, ranker: str, task: str) -> list[str]:
    from specter_utils.evaluation.rankers import SCORERS

    data = ranker_data(bench)
    run, _ = ranker_run(ranking_qrels(bench)[task], SCORERS[ranker](data))
    (scores,) = run.values()
    return sorted(scores, key=lambda doc: (-scores[doc], doc))


def test_in_degree_counts_training_citations_only(bench: Path) -> None:
    data = ranker_data(bench)
    assert data.held_out == {"q1", "q2"}
    # popular: x1, x2, x3 (q2's citation is a held-out query's); cited_by_query: x1 only, not q1 (cite's query)
    degree = {pid: len(data.graph.cited_by.get(pid, ())) for pid in ("popular", "cited_by_query", "recent", "lonely")}
    assert degree == {"popular": 3, "cited_by_query": 1, "recent": 0, "lonely": 0}
    assert ranking(bench, "in-degree", "cite")[:2] == ["popular", "cited_by_query"]
    results = score_rankers(bench, ["in-degree"])["in-degree"]
    assert results["co-cite"]["map"] == 100.0  # popular, co-cite's relevant paper, is the most cited
    assert results["cite"]["map"] == 50.0  # the relevant paper second of four: AP 1/2


def test_bm25_ranks_the_lexical_match_first(bench: Path) -> None:
    assert ranking(bench, "bm25", "cite")[0] == "cited_by_query"
    result = score_rankers(bench, ["bm25"])["bm25"]
    assert result["cite"]["map"] == 100.0 and result["coverage"]["cite"]["candidates_missing"] == 0
    assert "bm25s" in result["config"]["description"] and result["config"]["text_free"] is False


def test_bm25_gives_bm25s_own_scores_to_the_last_bit(tmp_path: Path) -> None:
    """The candidates-only scorer against ``bm25s.BM25.get_scores`` over the whole index, on a synthetic benchmark:
    every held-out query's candidates (tokenized in one call), a paper that is no query (tokenized alone), a query
    whose words repeat (each occurrence adds its score) and one whose words no other paper has (0 for the others)."""
    import bm25s
    import numpy as np

    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.evaluation.rankers import _text, bm25_scorer

    build_benchmark(generate_synthetic_corpus(n_papers=200, seed=3), tmp_path / "bench", seed=0, n_queries=15)
    data = ranker_data(tmp_path / "bench" / "scidocs")
    ids = [pid for pid, paper in data.papers.items() if _text(paper)]
    other = next(pid for pid in ids if pid not in data.held_out)
    repeated, unknown = sorted(data.held_out)[0], sorted(data.held_out)[1]
    title = data.papers[repeated].title
    data.papers[repeated].abstract = f"{title} {title} {data.papers[repeated].abstract}"
    data.papers[unknown].title, data.papers[unknown].abstract = "zzzyx", "qqqwv"
    reference = bm25s.BM25()
    reference.index(bm25s.tokenize([_text(data.papers[pid]) for pid in ids], show_progress=False), show_progress=False)
    score = bm25_scorer(data)
    checked = 0
    for query in [*sorted(data.held_out), other]:
        if query not in data.papers:
            continue
        words = [w for w in bm25s.tokenize(_text(data.papers[query]), return_ids=False)[0] if w in reference.vocab_dict]
        expected = reference.get_scores(words) if words else np.zeros(len(ids), dtype=np.float32)
        candidates = sorted({*ids[::7], query})  # the query itself: every one of its words adds a score
        got = score(query, candidates)
        assert got == {pid: float(expected[ids.index(pid)]) for pid in candidates}, query  # exact equality
        checked += 1
    assert checked >= 10 and set(score(unknown, [p for p in ids if p != unknown]).values()) == {0.0}
    assert max(score(repeated, ids).values()) > 0


def test_year_ranks_the_most_recent_earlier_paper_first(bench: Path) -> None:
    # q1 (2000): cited_by_query 1999, popular 1995, lonely 1990, then recent 2001 (newer than the query)
    assert ranking(bench, "year", "cite") == ["cited_by_query", "popular", "lonely", "recent"]
    assert year_score(2000, 1999) > year_score(2000, 1990) > year_score(2000, 2001) > year_score(2000, 2005)


def test_metrics_come_from_the_same_trec_eval_code(bench: Path) -> None:
    from specter_utils.evaluation.rankers import SCORERS

    data = ranker_data(bench)
    for name in ("bm25", "in-degree", "year"):
        result = score_rankers(bench, [name], split="val")[name]
        for task, key in (("cite", "cite"), ("cocite", "co-cite")):
            qrels = ranking_qrels(bench, "val")[task]
            run, _ = ranker_run(qrels, SCORERS[name](data))
            assert result[key] == trec_metrics(qrels, run)[0]
        assert set(result["skipped"]) == set()  # no classification task in this folder
        assert result["details"]["cite"]["per_query_ap"] == {"q1": pytest.approx(result["cite"]["map"])}


def test_a_benchmark_without_graph_or_years_skips_those_rankers(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "plain", graph=False, years=False)
    results = score_rankers(root)
    assert "cite" in results["bm25"]
    assert "no citation" in results["in-degree"]["skipped"]["ranker"] and "cite" not in results["in-degree"]
    assert "year" in results["year"]["skipped"]["ranker"]
    with pytest.raises(DataError, match="unknown ranker"):
        score_rankers(root, ["pagerank"])


def test_table1_shows_ranker_rows_with_no_value_for_classification(bench: Path) -> None:
    rankers = score_rankers(bench)
    embedded = {
        "trained": {"mag": {"f1": 60.0}, "cite": {"map": 90.0, "ndcg": 95.0}, "co-cite": {"map": 80.0, "ndcg": 90.0}},
        "tfidf-svd": {"mag": {"f1": 50.0}, "cite": {"map": 70.0, "ndcg": 80.0}, "co-cite": {"map": 60.0, "ndcg": 70.0}},
        "random": {"mag": {"f1": 5.0}, "cite": {"map": 25.0, "ndcg": 50.0}, "co-cite": {"map": 25.0, "ndcg": 50.0}},
    }
    results = with_rankers(embedded, rankers)
    assert list(results) == ["trained", "tfidf-svd", "bm25", "random", "in-degree", "year"]
    frame = comparison_table(results, paper_rows=())
    assert frame.loc["trained", "avg"] == comparison_table(embedded, paper_rows=()).loc["trained", "avg"]
    _, text = render(results, paper_rows=())
    lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert lines["BM25"].startswith("| BM25 | — |") and lines["BM25"].endswith("| — |")  # MAG F1 and avg: no value
    assert "| text-free: in-degree | — | 50.00 |" in text and "text-free: year" in lines
    assert "| trained | 60.00 | 90.00 |" in text
    sentences = structure_sentences(results).splitlines()
    # on cite the year ranker is the best text-free row (AP 1), on co-cite in-degree (AP 1)
    assert sentences[0].startswith("- cite MAP: structure alone (`text-free: year`, no text) scores 100.00, +75.00")
    assert "+10.00 against the trained model (90.00): at or above the trained model" in sentences[0]
    assert sentences[1].startswith("- co-cite MAP: structure alone (`text-free: in-degree`, no text) scores 100.00")


def test_structure_sentence_measures_the_gap_from_random_to_trained() -> None:
    ranker = {"config": {"ranker": "in-degree", "text_free": True}, "cite": {"map": 50.0, "ndcg": 70.0}}
    results = {"trained": {"cite": {"map": 90.0}}, "random": {"cite": {"map": 25.0}}, "in-degree": ranker}
    sentence = structure_sentences(results)
    assert sentence == (
        "- cite MAP: structure alone (`text-free: in-degree`, no text) scores 50.00, +25.00 against random vectors "
        "(25.00), -40.00 against the trained model (90.00): 38% of the way from random to the trained model."
    )
    assert structure_sentences({"trained": {"cite": {"map": 90.0}}}) == ""


def test_notebook_05_path_on_a_synthetic_benchmark(tmp_path: Path) -> None:
    """workflow.evaluate.evaluate scores an embeddings folder and the rankers; the table and results.json carry them."""
    import json

    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.embedding.baselines import random_embeddings
    from specter_utils.embedding.io import write_embeddings
    from specter_utils.workflow.embed import papers_to_embed
    from specter_utils.workflow.evaluate import evaluate, write_results_table

    build_benchmark(generate_synthetic_corpus(n_papers=300, seed=1), tmp_path / "bench", seed=0)
    scidocs = tmp_path / "bench" / "scidocs"
    embeddings = tmp_path / "run" / "embeddings"
    write_embeddings(embeddings / "random.jsonl", random_embeddings(papers_to_embed(scidocs)))
    results = evaluate(EvalConfig(tasks=["mag", "cite", "cocite"]), scidocs, embeddings)
    assert list(results) == ["random", "bm25", "in-degree", "year"]
    for name in ("bm25", "in-degree", "year"):
        assert set(results[name]) >= {"cite", "co-cite"} and "mag" not in results[name]
        assert results[name]["skipped"]["mag"].endswith("ranking tasks only")
    # the synthetic corpus' citations follow its topics: structure alone beats random vectors on co-cite
    assert results["in-degree"]["co-cite"]["map"] > results["random"]["co-cite"]["map"]
    table = write_results_table(results, tmp_path / "run" / "05_scidocs_eval")
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    # the rankers' rows stand in the run's table, with no value in the classification column (ranking tasks only)
    assert "—" in rows["text-free: in-degree"] and "—" in rows["BM25"]
    written = json.loads((tmp_path / "run" / "05_scidocs_eval" / "results.json").read_text())
    assert written["in-degree"]["config"]["ranker"] == "in-degree"
    with pytest.raises(DataError, match="named like a ranker"):
        evaluate(EvalConfig(models=["random", "bm25"]), scidocs, embeddings)


def test_readme_table1_shows_ranker_rows(tmp_path: Path) -> None:
    """The README's results block: ranker rows under their labels, "—" where they have no value, a skipped ranker
    left out."""
    from specter_utils.io import write_json
    from specter_utils.presentation import blocks, report_folder

    row = {"mag": {"f1": 40.0}, "cite": {"map": 50.0}, "co-cite": {"map": 51.0}}
    ranker = {"cite": {"map": 60.0}, "co-cite": {"map": 70.0}, "config": {"ranker": "in-degree", "text_free": True}}
    skipped = {"skipped": {"ranker": "no years"}, "config": {"ranker": "year", "text_free": True}}
    folder = tmp_path / "toy"
    results = {"trained": row, "in-degree": ranker, "year": skipped}
    write_json(folder / "metrics" / "05_scidocs_eval.json", {"split": "test", "results": results})
    block = blocks.table1_block(report_folder.load_report(folder), "reports/toy")
    assert "| text-free: in-degree | — | 60.00 | 70.00 |" in block and "| trained | 40.00 | 50.00 | 51.00 |" in block
    assert "text-free: year" not in block


def test_scidocs_layout_without_graph_gets_bm25_only(tmp_path: Path) -> None:
    """The original SCIDOCS layout (every task, metadata with text but no citations; years only on the
    recommendation papers): BM25 ranks cite, co-cite, co-view and co-read; in-degree and year are skipped."""
    from test_eval_suite import tiny_scidocs

    tiny_scidocs(tmp_path)
    results = score_rankers(tmp_path)
    assert {"co-view", "co-read", "cite", "co-cite"} <= set(results["bm25"])
    assert {"mag", "mesh", "recomm"} == set(results["bm25"]["skipped"])
    assert "real SCIDOCS" in results["in-degree"]["skipped"]["ranker"]
    assert "no publication year" in results["year"]["skipped"]["ranker"]


@pytest.mark.slow
def test_hepth_structure_alone_scores_far_above_random(hepth_benchmark) -> None:
    """On the real hep-th benchmark the text-free in-degree row is far above random's ~25 MAP on both tasks."""
    _, bench = hepth_benchmark
    results = score_rankers(bench / "scidocs")
    for task in ("cite", "co-cite"):
        assert results["in-degree"][task]["map"] > 55 and results["bm25"][task]["map"] > 60
        assert results["year"][task]["map"] > 30
        assert results["bm25"]["coverage"][task]["candidates_missing"] == 0


def test_score_embeddings_adds_ranker_rows_to_one_result(tmp_path: Path) -> None:
    """One embeddings file scored with rankers: the result keeps the suite's keys, the rankers under "rankers", and
    its table shows them as rows."""
    from test_eval_suite import tiny_scidocs

    from specter_utils.workflow.evaluate import SuiteOptions, score_embeddings

    embeddings = tiny_scidocs(tmp_path)
    result = score_embeddings(tmp_path, embeddings, SuiteOptions(tasks=["mag", "cite"]), rankers=["bm25", "year"])
    assert set(result["rankers"]) == {"bm25", "year"} and "cite" in result["rankers"]["bm25"]
    assert "co-view" not in result["rankers"]["bm25"]  # only the tasks asked for
    _, text = render(result, paper_rows=())
    assert "| ours |" in text and "| BM25 | — |" in text and "text-free: year" not in text  # year: skipped
