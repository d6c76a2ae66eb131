"""The base model's citation-derived training data, read from its own folder (``studies.base_model_prior``, with
``experiments/base_model_prior.py`` as its command line)."""

import json
import os
import subprocess
import sys

from specter_utils.paths import REPO_ROOT
from specter_utils.studies import base_model_prior as prior


def _script(*args: str) -> subprocess.CompletedProcess:
    """The command line, run as a command with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(REPO_ROOT / "experiments" / "base_model_prior.py"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_shares_are_computed_from_the_model_folders_list(tmp_path):
    entries = [
        {"name": "S2ORC_citation_pairs.jsonl.gz", "lines": 30, "weight": 1},
        {"name": "specter_train_triples.jsonl.gz", "lines": 10, "weight": 1},
        {"name": "reddit.jsonl.gz", "lines": 60, "weight": 2},
    ]
    (tmp_path / "data_config.json").write_text(json.dumps(entries))
    rows = prior.citation_share(str(tmp_path))
    assert len(rows) == 3  # two citation sets and their total
    assert rows[-1].endswith("| 40 | 40.0% | 50.00% |") and "2 of 3 datasets" in rows[-1]


def test_the_offline_default_model_lists_citation_pairs():
    done = _script("minilm")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "S2ORC citation pairs (abstracts)" in out and "SPECTER's training triplets" in out


def test_a_folder_without_the_list_is_a_one_line_error(tmp_path):
    done = _script(str(tmp_path))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert err.count("\n") == 0 and "data_config.json" in err and str(tmp_path) in err


def test_a_copy_without_data_config_is_read_from_its_model_card(tmp_path):
    (tmp_path / "README.md").write_text(
        "| Dataset | Paper | Number of training tuples |\n|---|:---:|:---:|\n"
        "| [Reddit](https://x) comments | [paper](https://y) | 300 |\n"
        "| [S2ORC](https://github.com/allenai/s2orc) Citation pairs (Abstracts) | [paper](https://z) | 100 |\n"
    )
    rows = prior.citation_share(str(tmp_path))
    assert rows[0].endswith("| S2ORC citation pairs (abstracts) | 100 | 25.0% | not listed (model card only) |")
    assert "1 of 2 datasets" in rows[-1]
