"""How related each mined paper of a triplet is to its query (``studies.negative_relatedness``, with
``experiments/negative_relatedness.py`` as its command line)."""

import json
import os
import subprocess
import sys

import pytest

from specter_utils.paths import REPO_ROOT
from specter_utils.studies import negative_relatedness as nr
from specter_utils.triplets.sampler import cocitation_graph


def _script(*args: str) -> subprocess.CompletedProcess:
    """The command line, run as a command with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(REPO_ROOT / "experiments" / "negative_relatedness.py"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_each_role_is_measured_against_its_own_query():
    # q cites p and x; p cites h (so h is a hard negative of q); c cites q and h (h is co-cited with q)
    graph = {"q": {"p": 5, "x": 5, "h": 1}, "p": {"h": 5}, "c": {"q": 5, "h": 5}, "z": {"e": 5}}
    cocited = cocitation_graph(graph)
    assert cocited["q"]["h"] == 5 and cocited["q"].get("p") != 5  # a count-1 entry is not a citation
    triplets = [
        {"query": "q", "pos": "p", "neg": "h", "kind": "hard"},
        {"query": "q", "pos": "x", "neg": "e", "kind": "easy"},
    ]
    authors = {"q": {"ann"}, "h": {"ann", "bob"}, "p": {"cy"}}
    venues = {"q": "JHEP", "h": "JHEP", "e": "NPB", "p": "PRD"}
    result = nr.relatedness(triplets, cocited, authors, venues)
    assert result["hard negative"] == {
        "pairs": 1,
        "co_cited": 1.0,
        "pairs_both_with_authors": 1,
        "shares_author": 1.0,
        "pairs_both_with_venue": 1,
        "same_venue": 1.0,
    }
    assert result["easy negative"]["co_cited"] == 0.0 and result["easy negative"]["same_venue"] == 0.0
    assert result["positive"]["pairs"] == 2 and result["positive"]["shares_author"] == 0.0  # over q-p only
    assert result["easy negative"]["shares_author"] is None  # e has no authors: n/a, not 0%
    assert result["positive"]["pairs_both_with_venue"] == 1  # x has no venue
    text = nr.markdown(result, "a toy graph", "t.jsonl")
    assert "| hard negative | 1 | 100.0% | 100.0% (1) | 100.0% (1) |" in text
    assert "| easy negative | 1 | 0.0% | n/a | 0.0% (1) |" in text


def test_a_folder_that_is_not_a_run_is_a_one_line_error(tmp_path):
    done = _script(str(tmp_path))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert err.count("\n") == 0 and "pipeline.json" in err


@pytest.mark.parametrize(("line", "message"), [("{not json", "not a JSON line"), ('{"query": "q"}', "needs query")])
def test_a_bad_triplet_names_its_file_and_line(tmp_path, line, message):
    (tmp_path / "pipeline.json").write_text(json.dumps({"preset": "smoke", "overrides": {}}))
    triplets = tmp_path / "t.jsonl"
    triplets.write_text('{"query": "q", "pos": "p", "neg": "h"}\n' + line + "\n")
    done = _script(str(tmp_path), "--triplets", str(triplets))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert err.count("\n") == 0 and f"{triplets}:2" in err and message in err
