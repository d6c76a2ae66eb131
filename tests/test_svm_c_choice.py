"""The C-choice measurement: the protocol's C (CV accuracy) beside the same CV's macro-F1 choice, per split."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_eval_suite import tiny_scidocs

from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.embedding.io import write_embeddings
from specter_utils.evaluation.classification import classify
from specter_utils.paths import REPO_ROOT
from specter_utils.studies import svm_c_choice


def test_both_choices_per_split_match_classify(tmp_path):
    root = tmp_path / "scidocs"
    embeddings = tiny_scidocs(root)
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, embeddings)
    result = svm_c_choice.measure(root, path)
    assert result["benchmark"] == "SCIDOCS" and result["labels"] == "MAG" and result["classes"] == 3
    assert set(result["splits"]) == {"val", "test"}
    rows = read_scidocs_dir(root, ["mag"]).classification["mag"]
    X_train, _ = embeddings.lookup([pid for pid, _ in rows["train"]])
    X_test, _ = embeddings.lookup([pid for pid, _ in rows["test"]])
    y_train, y_test = [label for _, label in rows["train"]], [label for _, label in rows["test"]]
    direct = classify(X_train, y_train, X_test, y_test)
    test = result["splits"]["test"]
    assert test["by_accuracy"] == {"C": direct.best_c, "f1": direct.f1, "classes_predicted": direct.classes_predicted}
    assert test["by_macro_f1"]["C"] == direct.by_macro_f1["C"] and test["by_macro_f1"]["f1"] == direct.by_macro_f1["f1"]
    table = svm_c_choice.markdown(result)
    assert "| test | 18 |" in table and "C by CV accuracy (protocol)" in table and "C by CV macro-F1" in table

    out = tmp_path / "c.md"
    command = [sys.executable, str(REPO_ROOT / "experiments" / "svm_c_choice.py"), str(root), "--embeddings"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [*command, str(path), "--out", str(out)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text().strip() == table and json.loads(out.with_suffix(".json").read_text())["classes"] == 3
    done = subprocess.run(
        [*command, str(tmp_path / "none.jsonl")], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 2 and "svm_c_choice: error" in done.stderr and "Traceback" not in done.stderr
