"""Why a linear SVM and another linear classifier on the same vectors disagree: the SVM protocol changed one
setting at a time.

SCIDOCS's SVM (``evaluation.classification``) differs from a linear head (``heads``) in several ways at
once: the head standardises each dimension, chooses its stopping point by validation macro-F1 and minimises
a softmax cross-entropy; the SVM sees the raw vectors, chooses ``C`` by 3-fold CV **accuracy** over
``logspace(-4, 2, 7)`` (as the original's ``GridSearchCV`` does: it scores lightning's ``LinearSVC`` by accuracy)
and fits one-vs-rest squared hinge without class weights. Each variant without class weights also reports the
same CV's choice by macro-F1 (``by_macro_f1``: its ``C``, macro-F1 and classes predicted). :func:`svm_variants`
scores the protocol and each single change (and their combination) on the same split, so a gap can be
attributed by measurement."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC

from specter_utils.evaluation.classification import PAPER_CS, classify

# name -> (standardise, class_weight, CV scoring, C grid)
WIDE_CS = tuple(float(c) for c in np.logspace(-4, 4, 9))
VARIANTS: dict[str, dict[str, Any]] = {
    "SCIDOCS protocol": {},
    "C by CV macro-F1": {"scoring": "f1_macro"},
    "standardised inputs": {"standardise": True},
    "class_weight balanced": {"class_weight": "balanced"},
    "C grid up to 1e4": {"Cs": WIDE_CS},
    "standardised + balanced + C by macro-F1": {"standardise": True, "class_weight": "balanced", "scoring": "f1_macro"},
}


def fit_variant(
    X_train: np.ndarray,
    y_train: Sequence[str],
    X_test: np.ndarray,
    y_test: Sequence[str],
    standardise: bool = False,
    class_weight: str | None = None,
    scoring: str = "accuracy",
    Cs: Sequence[float] = PAPER_CS,
) -> dict[str, Any]:
    """One SVM protocol: C by 3-fold CV ``scoring`` over ``Cs``, refit on train, scored on test. Without class
    weights by ``classification.classify``; with them, sklearn's ``GridSearchCV(LinearSVC)``, which supports them."""
    started = time.perf_counter()
    X_train, X_test = np.asarray(X_train, dtype=np.float32), np.asarray(X_test, dtype=np.float32)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if standardise:  # z-scores with the training split's statistics, as the heads standardise their input
        mean, scale = X_train.mean(axis=0), X_train.std(axis=0) + 1e-6
        X_train, X_test = (X_train - mean) / scale, (X_test - mean) / scale
    by_macro_f1: dict[str, Any] = {}
    if class_weight is None:
        result = classify(X_train, y_train, X_test, y_test, Cs=tuple(Cs), scoring=scoring)
        predicted, best_c, cv_score = result.predictions, result.best_c, result.cv_accuracy
        by_macro_f1 = {k: v for k, v in result.by_macro_f1.items() if k != "cv_macro_f1"}  # the same CV's other C
    else:
        predicted, best_c, cv_score = _sklearn_grid(X_train, y_train, X_test, class_weight, scoring, Cs)
    return {
        "macro_f1": round(100 * float(f1_score(y_test, predicted, average="macro")), 2),
        "accuracy": round(100 * float(accuracy_score(y_test, predicted)), 2),
        "C": float(best_c),
        "cv_score": {f"{c:g}": round(float(v), 4) for c, v in cv_score.items()},
        "cv_scoring": scoring,
        "classes_predicted": int(len(set(predicted))),
        "classes": int(len(set(y_train))),
        "by_macro_f1": by_macro_f1,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _sklearn_grid(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, class_weight: str, scoring: str, Cs: Sequence[float]
) -> tuple[np.ndarray, float, dict[float, float]]:
    svm = LinearSVC(loss="squared_hinge", random_state=42, class_weight=class_weight)
    grid = GridSearchCV(svm, {"C": list(Cs)}, cv=3, scoring=scoring)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        grid.fit(X_train, y_train)
    scores = dict(zip(Cs, grid.cv_results_["mean_test_score"], strict=True))
    return grid.predict(X_test), float(grid.best_params_["C"]), scores


def svm_variants(
    X_train: np.ndarray,
    y_train: Sequence[str],
    X_test: np.ndarray,
    y_test: Sequence[str],
    variants: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{variant: fit_variant(...)}`` for each of ``VARIANTS`` (or the names given)."""
    return {
        name: fit_variant(X_train, y_train, X_test, y_test, **VARIANTS[name]) for name in (variants or list(VARIANTS))
    }
