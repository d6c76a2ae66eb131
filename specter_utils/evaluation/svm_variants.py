"""Why a linear SVM and another linear classifier on the same vectors disagree: the SVM protocol changed one
setting at a time.

SCIDOCS's SVM (``evaluation.classification``) differs from a linear head (``heads``) in several ways at
once: the head standardises each dimension, chooses its stopping point by validation macro-F1 and minimises
a softmax cross-entropy; the SVM sees the raw vectors, chooses ``C`` by 3-fold CV **accuracy** over
``logspace(-4, 2, 7)`` and fits one-vs-rest squared hinge without class weights. :func:`svm_variants`
scores the protocol and each single change (and their combination) on the same split, with sklearn's
``LinearSVC`` inside ``GridSearchCV`` (the original's classifier), so a gap can be attributed by measurement.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from specter_utils.evaluation.classification import PAPER_CS

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
    """One SVM protocol: ``GridSearchCV(LinearSVC, cv=3)`` over ``Cs`` by ``scoring``, refit on train, test scores."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    started = time.perf_counter()
    svm = LinearSVC(loss="squared_hinge", random_state=42, class_weight=class_weight, max_iter=5000)
    model = make_pipeline(StandardScaler(), svm) if standardise else make_pipeline(svm)
    grid = GridSearchCV(model, {"linearsvc__C": list(Cs)}, cv=3, scoring=scoring)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        grid.fit(np.asarray(X_train), np.asarray(y_train))
    predicted = grid.predict(np.asarray(X_test))
    return {
        "macro_f1": round(100 * float(f1_score(y_test, predicted, average="macro")), 2),
        "accuracy": round(100 * float(accuracy_score(y_test, predicted)), 2),
        "C": float(grid.best_params_["linearsvc__C"]),
        "cv_score": {
            f"{c:g}": round(float(s), 4) for c, s in zip(Cs, grid.cv_results_["mean_test_score"], strict=True)
        },
        "cv_scoring": scoring,
        "classes_predicted": int(len(set(predicted))),
        "classes": int(len(set(y_train))),
        "seconds": round(time.perf_counter() - started, 1),
    }


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
