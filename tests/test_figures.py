"""The notebooks' charts say what they show: the loss that trained, a chance line, the benchmark's name."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from specter_utils.layout import BENCHMARK_FILE, TRAIN_CONFIG_FILE  # noqa: E402
from specter_utils.presentation import figures  # noqa: E402

LOG = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5, "eval_loss": 1.6, "eval_val_cosine_accuracy": 0.8}]


@pytest.mark.parametrize(
    ("config", "axis"),
    [
        ({"loss": "mnrl-citation"}, "in-batch softmax loss (MNRL, citation-masked)"),
        ({"loss": "mnrl"}, "in-batch softmax loss (MNRL)"),
        ({"loss": "triplet", "triplet_margin": 1.0}, "triplet loss (margin 1)"),
        ({"loss": "triplet", "triplet_margin": 0.5}, "triplet loss (margin 0.5)"),
    ],
)
def test_the_loss_axis_names_the_loss_that_trained(tmp_path, config, axis):
    (tmp_path / TRAIN_CONFIG_FILE).write_text(json.dumps(config))
    fig = figures.training_curves(LOG, train_dir=tmp_path)
    assert fig.axes[0].get_ylabel() == axis
    plt.close(fig)


def test_a_run_without_its_config_does_not_claim_a_loss(tmp_path):
    fig = figures.training_curves(LOG, train_dir=tmp_path)
    assert "triplet" not in fig.axes[0].get_ylabel() and "MNRL" not in fig.axes[0].get_ylabel()
    plt.close(fig)


def test_the_heads_chart_has_a_chance_line_a_legend_and_the_benchmark():
    index = pd.MultiIndex.from_tuples(
        [("base", 256, 1800, "linear", "frozen"), ("base", 256, 1800, "linear SVM", "frozen")],
        names=["encoder", "max_length", "train_papers", "head", "training"],
    )
    table = pd.DataFrame({"mean": [30.0, 25.0], "std": [1.0, float("nan")]}, index=index)
    fig = figures.heads_chart(table, n_classes=22, benchmark="hepth")
    ax = fig.axes[0]
    chance = [line for line in ax.get_lines() if line.get_label().startswith("chance")]
    assert len(chance) == 1 and chance[0].get_xdata()[0] == pytest.approx(100 / 22)
    assert ax.get_xlim()[0] <= 100 / 22
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "chance: 1/22 classes" in legend and "frozen head" in legend
    assert ax.get_title().startswith("hepth benchmark")
    plt.close(fig)


def test_the_results_chart_names_a_built_benchmark_and_its_labels(tmp_path):
    scidocs = tmp_path / "benchmark" / "scidocs"
    scidocs.mkdir(parents=True)
    info = {"corpus": "hepth", "corpus_info": {"name": "hepth", "label_field": "venue"}}
    (scidocs.parent / BENCHMARK_FILE).write_text(json.dumps(info))
    result = {"mag": {"f1": 30.0}, "cite": {"map": 80.0, "ndcg": 90.0}, "config": {"data_dir": str(scidocs)}}
    fig = figures.results_chart({"trained": result})
    ax = fig.axes[0]
    assert ax.get_title().startswith("hepth benchmark") and "SCIDOCS metrics" not in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "journal F1"
    plt.close(fig)
