"""Notebook 07's plumbing on tiny data: variant texts, co-citation triplets, seeds, Table 2 over seeds, the chart."""

from __future__ import annotations

import pytest

from specter_utils.data.records import Paper
from specter_utils.presentation.tables import ablation_table_seeds, seed_group_statistics, within_spread
from specter_utils.spec import load_spec
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.sampler import cocitation_graph
from specter_utils.workflow.ablations import ABLATIONS, PAPER_ROWS, REFERENCE, ablation_spec, paper_text_fields


def test_text_field_variants():
    papers = {"a": Paper("a", "Title A", "Abstract A.", authors=[], venue=None)}
    corpus = {"a": Paper("a", "Title A", "", authors=["Ann", "Bob"], venue="Phys. Rev. D")}
    assert paper_text_fields(papers, ["title", "abstract"]) is papers
    assert paper_text_fields(papers, ["title"])["a"].text(" [SEP] ") == "Title A [SEP] "
    venue = paper_text_fields(papers, ["title", "venue", "abstract"], corpus)["a"]
    assert venue.abstract == "Venue: Phys. Rev. D. Abstract A." and venue.title == "Title A"  # the order given
    assert paper_text_fields(papers, ["title", "abstract", "venue"], corpus)["a"].abstract.endswith("Phys. Rev. D.")
    authors = paper_text_fields(papers, ["title", "authors", "abstract"], corpus)["a"]
    assert authors.abstract == "Authors: Ann, Bob. Abstract A."
    assert paper_text_fields(papers, ["title", "venue", "abstract"])["a"].abstract == "Abstract A."  # no venue known
    for wrong in (["abstract"], ["title", "abstract", "abstract"], ["title", "keywords"]):
        with pytest.raises(ValueError, match="title"):
            paper_text_fields(papers, wrong)


def test_the_venue_and_author_rows_put_their_field_where_the_training_length_keeps_it():
    """At the CPU profile's 64 training wordpieces a field after a typical abstract would be cut off in training."""
    for name, field in (("venue", "venue"), ("author", "authors")):
        fields = ABLATIONS[name]["ablations.text_fields"]
        assert fields.index(field) < fields.index("abstract"), name


def test_cocitation_graph_and_mix():
    graph = {"r": {"a": 5, "b": 5, "x": 1}, "a": {"c": 5}, "s": {"b": 5, "d": 5}}
    co = cocitation_graph(graph)
    assert {p for p, n in co["a"].items() if n == 5} == {"b"}  # r cites a and b
    assert co["a"]["c"] == 1 and co["a"]["r"] == 1  # a cites c, r cites a: related, not co-cited
    assert {p for p, n in co["b"].items() if n == 5} == {"a", "d"}
    mix = cocitation_graph(graph, mix=True)
    assert mix["a"]["b"] == 5 and mix["a"]["c"] == 5  # co-cited and cited both positives
    assert mix["r"] == graph["r"]
    with pytest.raises(Exception, match="positives"):
        SamplerConfig(positives="views")


def test_mining_with_cocitation_positives():
    from specter_utils.data.specter_format import SpecterData
    from specter_utils.triplets.sampler import mine

    graph = {f"r{i}": {f"a{i}": 5, f"b{i}": 5, f"c{i}": 5} for i in range(4)}
    graph.update({f"a{i}": {f"x{i}": 5, f"y{i}": 5, f"z{i}": 1} for i in range(4)})
    ids = {pid for row in graph.items() for pid in (row[0], *row[1])}
    metadata = {pid: Paper(pid, f"title {pid}", "") for pid in ids}
    data = SpecterData(graph, metadata, {"train": [f"a{i}" for i in range(4)], "val": []})
    result = mine(data, SamplerConfig(positives="cocitation", seed=1))
    triplets = list(result.train.triplets)
    assert triplets and all(t.pos in {f"b{t.query[1]}", f"c{t.query[1]}"} for t in triplets)  # co-cited only
    citation = list(mine(data, SamplerConfig(seed=1)).train.triplets)
    assert {t.pos for t in citation} <= {f"{c}{i}" for i in range(4) for c in "xy"}  # cited only
    mixed = list(mine(data, SamplerConfig(positives="mix", seed=1)).train.triplets)
    assert {t.pos[0] for t in mixed} <= set("bcxy")


def test_every_ablation_is_the_spec_plus_overrides_and_a_seed():
    spec = load_spec("smoke")
    for name, changes in ABLATIONS.items():
        assert set(changes) <= set(spec), name
    variant = ablation_spec(spec, "no_hard_negatives", seed=1)
    assert variant.seed == 1 and variant["mining.no_hard_negatives"] is True
    reference = ablation_spec(spec, REFERENCE, seed=2)
    assert {k for k in spec if reference[k] != spec[k]} == {"seed"}
    with pytest.raises(ValueError):
        ablation_spec(spec, REFERENCE)  # without a seed, the reference row is never retrained
    assert set(PAPER_ROWS) <= {REFERENCE, *ABLATIONS}
    from specter_utils.presentation.tables import PAPER_ABLATION_ROWS

    assert set(PAPER_ROWS.values()) <= set(PAPER_ABLATION_ROWS)  # every named paper row has its numbers
    assert PAPER_ABLATION_ROWS[PAPER_ROWS["cocitation"]] == (82.9, 84.3, 85.2, 36.6, 76.4)  # the paper's Table 3
    for preset in ("hepth", "scidocs"):  # the presets whose tables make claims: 3 seeds at least
        assert len(load_spec(preset)["ablations.seeds"]) >= 3, preset
    assert len(load_spec("smoke")["ablations.seeds"]) == 2  # the least that exercises the retrained reference seeds


def _results(cite: float, cocite: float, mag: float) -> dict:
    return {"cite": {"map": cite, "ndcg": cite}, "co-cite": {"map": cocite, "ndcg": cocite}, "mag": {"f1": mag}}


def test_table2_names_the_two_level_test_and_its_adjusted_p():
    test = {"diff": -31.0, "p": 0.0001, "p_adjusted": 0.0004, "method": "hierarchical bootstrap"}
    statistics = {
        "groups": {
            REFERENCE: seed_group_statistics([_results(80, 70, 60), _results(82, 72, 62)]),
            "no_abstract": seed_group_statistics([_results(50, 40, 30), _results(51, 41, 31)]),
        },
        "paired": {
            "rows": {"no_abstract": {"tasks": {"cite": {"versus": {REFERENCE: test}}}}},
            "method": "hierarchical bootstrap",
            "family": 4,
        },
        "seeds": {REFERENCE: [0, 1], "no_abstract": [0, 1]},
    }
    frame, text = ablation_table_seeds(statistics, REFERENCE, PAPER_ROWS)
    assert frame.loc["no_abstract", "paired test vs specter"] == "cite MAP -31.00, p < 0.001, adj. p < 0.001"
    assert "Holm-adjusted over the table's 4 comparisons" in text and "permutation" not in text


def test_table2_over_seeds_marks_differences_inside_the_spread():
    statistics = {
        "groups": {
            REFERENCE: seed_group_statistics([_results(80, 70, 60), _results(82, 72, 62), _results(84, 74, 64)]),
            "no_hard_negatives": seed_group_statistics(
                [_results(81, 71, 61), _results(83, 73, 63), _results(79, 69, 59)]
            ),
            "no_abstract": seed_group_statistics([_results(50, 40, 30), _results(51, 41, 31), _results(52, 42, 32)]),
        },
        "paired": {
            "rows": {
                "no_abstract": {"tasks": {"cite": {"versus": {REFERENCE: {"diff": -31.0, "p": 0.0001}}}}},
            }
        },
        "seeds": {REFERENCE: [0, 1, 2], "no_hard_negatives": [0, 1, 2], "no_abstract": [0, 1, 2]},
    }
    ref = statistics["groups"][REFERENCE]
    assert ref["CITE"]["mean"] == 77.0 and ref["CITE"]["sd"] == 2.0 and ref["CLS"]["mean"] == 62.0
    assert within_spread(statistics["groups"]["no_hard_negatives"]["all"], ref["all"])
    frame, text = ablation_table_seeds(statistics, REFERENCE, PAPER_ROWS)
    assert "inside the seed spread" in frame.loc["no_hard_negatives", "Δ all"]
    assert "inside" not in frame.loc["no_abstract", "Δ all"]
    assert "cite MAP -31.00, p < 0.001" in frame.loc["no_abstract", "paired test vs specter"]
    assert frame.loc["no_abstract", "paper (CLS / USR / CITE / REC / all)"] == "82.2 / 72.2 / 73.6 / 34.5 / 68.1"
    assert "USR" not in frame.columns  # only the groups this run has
    # the spread is marked, but the average is not tested: the reading (evaluation.hierarchical) decides
    assert "the average is not tested" in text and "±" in frame.loc[REFERENCE, "CITE"]


def test_a_row_with_its_own_reference_is_compared_with_that_row():
    from specter_utils.workflow.ablations import COMPARED_TO, ablation_deltas, compared_to

    assert COMPARED_TO["paper_no_hard_negatives"] == "paper_recipe" and set(COMPARED_TO) <= set(ABLATIONS)
    assert compared_to("paper_no_hard_negatives", {REFERENCE: {}, "paper_no_hard_negatives": {}}) == REFERENCE
    rows = {REFERENCE: {}, "paper_recipe": {}, "paper_no_hard_negatives": {}}
    assert compared_to("paper_no_hard_negatives", rows) == "paper_recipe"
    test = {"diff": -1.5, "ci_low": -2.0, "ci_high": -1.0, "p": 0.001, "queries": 400}
    statistics = {
        "groups": {
            REFERENCE: seed_group_statistics([_results(80, 70, 60), _results(82, 72, 62)]),
            "paper_recipe": seed_group_statistics([_results(76, 66, 60), _results(78, 68, 62)]),
            "paper_no_hard_negatives": seed_group_statistics([_results(70, 60, 60), _results(72, 62, 62)]),
        },
        "paired": {
            "references": [REFERENCE, "paper_recipe"],
            "rows": {
                "paper_recipe": {"tasks": {"cite": {"versus": {REFERENCE: {**test, "diff": -4.0}}}}},
                "paper_no_hard_negatives": {
                    "tasks": {"cite": {"versus": {REFERENCE: {**test, "diff": -10.0}, "paper_recipe": test}}}
                },
            },
        },
        "seeds": {name: [0, 1] for name in rows},
        "compared_to": {name: compared_to(name, rows) for name in rows if name != REFERENCE},
    }
    frame, text = ablation_table_seeds(statistics, REFERENCE, PAPER_ROWS)
    assert frame.loc["paper_no_hard_negatives", "paired test vs specter"] == "vs paper_recipe: cite MAP -1.50, p 0.001"
    assert frame.loc["paper_no_hard_negatives", "Δ all"].startswith("vs paper_recipe: -")
    assert frame.loc["paper_recipe", "paired test vs specter"] == "cite MAP -4.00, p 0.001"
    deltas = {(d.row, d.reference): d.diff for d in ablation_deltas(statistics)}
    assert deltas == {("paper_recipe", REFERENCE): -4.0, ("paper_no_hard_negatives", "paper_recipe"): -1.5}


def test_one_seed_has_no_spread_and_says_so():
    statistics = {
        "groups": {
            REFERENCE: seed_group_statistics([_results(80, 70, 60)]),
            "no_hard_negatives": seed_group_statistics([_results(81, 71, 61)]),
        },
        "seeds": {REFERENCE: [0], "no_hard_negatives": [0]},
    }
    assert statistics["groups"][REFERENCE]["CITE"]["sd"] is None
    assert not within_spread(statistics["groups"]["no_hard_negatives"]["all"], statistics["groups"][REFERENCE]["all"])
    frame, text = ablation_table_seeds(statistics, REFERENCE, PAPER_ROWS)
    assert "±" not in frame.loc[REFERENCE, "CITE"] and "One seed" in text and "not a finding" in text


def test_chart_draws_each_row_as_its_difference_beside_the_papers(tmp_path):
    from matplotlib.container import ErrorbarContainer

    from specter_utils.presentation import figures as plots
    from specter_utils.presentation.tables import PAPER_ABLATION_ROWS, TABLE2_COLUMNS

    groups = {
        REFERENCE: seed_group_statistics([_results(80, 70, 60), _results(82, 72, 62)]),
        "no_hard_negatives": seed_group_statistics([_results(78, 69, 60), _results(80, 70, 61)]),
        "paper_recipe": seed_group_statistics([_results(70, 60, 50), _results(71, 61, 51)]),
        "paper_no_hard_negatives": seed_group_statistics([_results(75, 65, 55), _results(76, 66, 56)]),
    }
    statistics = {
        "groups": groups,
        "seeds": {name: [0, 1] for name in groups},
        "compared_to": {
            "no_hard_negatives": REFERENCE,
            "paper_recipe": REFERENCE,
            "paper_no_hard_negatives": "paper_recipe",
        },
    }
    fig = plots.ablation_seed_chart(statistics, PAPER_ROWS)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["CLS", "CITE", "all"]
    for ax in panels:
        column = ax.get_title()
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 3  # one per row but the reference
        colours = [bar.lines[0].get_color() for bar in bars]
        assert len(set(colours)) == 3
        x = {colour: bar.lines[0].get_xdata()[0] for colour, bar in zip(colours, bars, strict=True)}
        against = {"no_hard_negatives": REFERENCE, "paper_recipe": REFERENCE, "paper_no_hard_negatives": "paper_recipe"}
        for colour, name in zip(colours, against, strict=True):  # each row against the row it is tested against
            assert x[colour] == pytest.approx(groups[name][column]["mean"] - groups[against[name]][column]["mean"])
        assert bars[0].has_xerr and not bars[0].has_yerr
        diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
        index = TABLE2_COLUMNS.index(column)
        paper = PAPER_ABLATION_ROWS["no hard negatives"][index] - PAPER_ABLATION_ROWS["SPECTER"][index]
        assert [d.get_xdata()[0] for d in diamonds] == pytest.approx([paper, paper])  # paper_recipe has no paper row
        assert [d.get_color() for d in diamonds] == [colours[0], colours[2]]  # a row keeps its colour
        written_values = {t.get_text() for t in ax.texts}  # every point carries its value
        for name in against:
            diff = groups[name][column]["mean"] - groups[against[name]][column]["mean"]
            spread = max(groups[name][column]["sd"], groups[against[name]][column]["sd"])
            assert f"{diff:+.2f} ± {spread:.2f}" in written_values
        assert f"{paper:+.1f}" in written_values
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    assert labels == [
        "no_hard_negatives (2 seeds)",
        "paper_recipe (2 seeds)",
        "paper_no_hard_negatives vs paper_recipe (2 seeds)",
    ]
    written = plots.save_figure(fig, tmp_path / "figs" / "table2_run.v1")
    assert [p.name for p in written] == ["table2_run.v1.png", "table2_run.v1.pdf"]
    assert all(p.stat().st_size > 0 for p in written)


def test_chart_of_one_group_has_one_panel_and_one_seed_has_no_bar():
    from matplotlib.container import ErrorbarContainer

    from specter_utils.presentation import figures as plots

    cite_only = {"cite": {"map": 80.0}, "co-cite": {"map": 70.0}}
    lower = {"cite": {"map": 78.0}, "co-cite": {"map": 69.0}}
    statistics = {
        "groups": {REFERENCE: seed_group_statistics([cite_only]), "no_abstract": seed_group_statistics([lower])},
        "seeds": {REFERENCE: [0], "no_abstract": [0]},
    }
    fig = plots.ablation_seed_chart(statistics, PAPER_ROWS)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["CITE"]  # "all" would repeat CITE
    (bar,) = [c for c in panels[0].containers if isinstance(c, ErrorbarContainer)]
    assert not bar.has_xerr and bar.lines[0].get_xdata()[0] == pytest.approx(-1.5)
    assert "-1.50" in [t.get_text() for t in panels[0].texts]  # one seed: the value without a spread
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["no_abstract (1 seed)"]
    with pytest.raises(ValueError, match="no row"):
        plots.ablation_seed_chart({"groups": {REFERENCE: statistics["groups"][REFERENCE]}}, PAPER_ROWS)


def test_a_finished_row_is_reused_only_with_the_same_settings(tmp_path):
    from specter_utils.io import write_json
    from specter_utils.workflow.ablations import ROW_FILE, ablation_settings, finished_ablation

    spec = load_spec("smoke")
    variant = ablation_spec(spec, "no_hard_negatives", seed=1)
    out = tmp_path / "no_hard_negatives" / "seed1"
    assert finished_ablation(variant, out) is None  # never run
    out.mkdir(parents=True)
    embeddings = out / "embeddings.jsonl"
    embeddings.write_text('{"paper_id": "a", "embedding": [0.0]}\n')
    row = {"seed": 1, "embedding_file": str(embeddings), "results": _results(80.0, 79.0, 70.0)}
    write_json(out / ROW_FILE, {"settings": ablation_settings(variant), "row": row})
    reused = finished_ablation(variant, out)
    assert reused["results"] == row["results"] and reused["reused"].endswith(ROW_FILE)
    # another grid (more variants, other seeds) shares the row; any setting of the row itself does not
    wider = spec.with_overrides({"ablations.variants": ["no_hard_negatives", "cocitation"], "ablations.seeds": [1]})
    assert finished_ablation(ablation_spec(wider, "no_hard_negatives", seed=1), out) is not None
    changed = spec.with_overrides({"training.learning_rate": 1e-4})
    assert finished_ablation(ablation_spec(changed, "no_hard_negatives", seed=1), out) is None
    # settings no row reads (the other notebooks', Table 1's extra rows) leave it the same row
    for key, value in (
        ("analysis.knn", 5),
        ("heads.n_seeds", 1),
        ("evaluation.rankers", ["bm25"]),
        ("evaluation.time_split", True),
    ):
        other = spec.with_overrides({key: value})
        assert finished_ablation(ablation_spec(other, "no_hard_negatives", seed=1), out) is not None, key
    for key, value in (
        ("evaluation.split", "val"),
        ("embedding.max_length", spec["embedding.max_length"] + 1),
    ):  # these make the row
        other = spec.with_overrides({key: value})
        assert finished_ablation(ablation_spec(other, "no_hard_negatives", seed=1), out) is None, key
    assert finished_ablation(ablation_spec(spec, "no_hard_negatives", seed=2), out) is None
    embeddings.unlink()  # the row's embeddings are gone: it runs again
    assert finished_ablation(variant, out) is None


def test_a_table2_budget_of_its_own_trains_every_row_on_it():
    from specter_utils.errors import DataError
    from specter_utils.workflow.ablations import ablation_budget, reuses_main_model

    spec = load_spec("smoke")
    assert ablation_budget(spec) == spec["training.max_triplets"] and reuses_main_model(spec)
    assert ablation_spec(spec, "no_hard_negatives", seed=1)["training.max_triplets"] == spec["training.max_triplets"]
    own = spec.with_overrides({"ablations.max_triplets": 32})
    assert ablation_budget(own) == 32 and not reuses_main_model(own)  # the run seed's reference row is retrained too
    for name, seed in (("no_hard_negatives", 1), ("paper_recipe", 0), (REFERENCE, own.seed)):
        assert ablation_spec(own, name, seed)["training.max_triplets"] == 32, name
    same = spec.with_overrides({"ablations.max_triplets": spec["training.max_triplets"]})
    assert reuses_main_model(same)  # the main budget stated explicitly: the main model is still the reference
    statistics = {
        "groups": {REFERENCE: seed_group_statistics([_results(80.0, 79.0, 70.0)])},
        "seeds": {REFERENCE: [0]},
        "max_triplets": 32,
    }
    assert "trained on 32 triplets" in ablation_table_seeds(statistics, REFERENCE)[1]
    # a row trained on N triplets is the same row whether N came from the main budget or from Table 2's own
    from specter_utils.workflow.ablations import ablation_settings

    main = spec.with_overrides({"training.max_triplets": 32})
    assert ablation_settings(ablation_spec(own, "no_hard_negatives", 1)) == ablation_settings(
        ablation_spec(main, "no_hard_negatives", 1)
    )
    with pytest.raises(DataError, match="ablations.max_triplets"):
        spec.with_overrides({"ablations.max_triplets": -1})
