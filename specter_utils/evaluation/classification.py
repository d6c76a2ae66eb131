"""MAG / MeSH classification: linear SVM (squared hinge), ``C`` by 3-fold CV on train, macro-F1 on the split.

The protocol is the original's ``GridSearchCV(LinearSVC(loss="squared_hinge", random_state=42), cv=3,
param_grid={"C": logspace(-4, 2, 7)})``: stratified 3-fold split without shuffling, accuracy as the CV
score, the first best ``C`` on ties, refit on the whole train split. Accuracy is what the original scores with:
its ``GridSearchCV`` passes no ``scoring``, so each fold is scored by the estimator's ``score``, which for
lightning's ``LinearSVC`` (a ``ClassifierMixin``) is accuracy; the default here follows it.

Accuracy favours the large classes: on a benchmark with many unbalanced classes (hep-th's 22 journals) the ``C``
it chooses can predict only a few of them. The same CV also scores every ``C`` by macro-F1 (the metric
reported), and :func:`classify` refits at that second ``C`` too, so a reader sees both: the result's
``by_macro_f1`` holds its ``C``, its macro-F1 on the split and how many classes it predicts, beside the
protocol's.

The released SCIDOCS code imports ``LinearSVC`` from ``lightning.classification``, not from sklearn, and
that one differs in more than the solver: it fits **no intercept** and stops at **tol 1e-3** (sklearn /
liblinear: a regularised intercept, tol 1e-4). The default here is sklearn's (what docs/protocol.md states, and
what the tests compare with); ``classify(..., variant="lightning")`` (``SVM_VARIANTS``) drops the intercept
and uses tol 1e-3 as lightning does. Its tolerance is then applied through liblinear's primal stopping rule
below, not lightning's dual coordinate-descent rule, so the two stop at slightly different points."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support
from sklearn.model_selection import StratifiedKFold

from specter_utils.evaluation.svm import DEFAULT_TOL, PathSolver

PAPER_CS = tuple(float(c) for c in np.logspace(-4, 2, 7))  # the original's grid
CV_FOLDS = 3
# The two LinearSVCs: sklearn's (the default, docs/protocol.md) and lightning's (the released SCIDOCS code's import).
SVM_VARIANTS: dict[str, dict[str, Any]] = {
    "sklearn": {"fit_intercept": True, "tol": DEFAULT_TOL},
    "lightning": {"fit_intercept": False, "tol": 1e-3},
}


@dataclass
class ClassificationResult:
    """Macro-F1 x 100 (2 decimals) on the evaluated split, and how ``C`` was chosen."""

    f1: float
    best_c: float
    cv_accuracy: dict[float, float]  # the CV score of every C: accuracy unless solver["cv_scoring"] names another
    n_train: int
    n_eval: int
    n_classes: int
    seconds: float
    solver: dict[str, Any] = field(default_factory=dict)
    predictions: np.ndarray | None = field(default=None, repr=False)  # labels predicted for the evaluated split
    per_class: dict[str, dict[str, float]] = field(default_factory=dict)  # label -> f1 (x 100), support
    confusion: dict[str, Any] = field(default_factory=dict)  # {"labels": [...], "matrix": rows true, columns predicted}
    # the second choice of the same CV: C by mean fold macro-F1, its macro-F1 on the split, classes it predicts
    by_macro_f1: dict[str, Any] = field(default_factory=dict)

    @property
    def classes_predicted(self) -> int:
        """How many classes the protocol's SVM predicts for at least one paper of the split."""
        return 0 if self.predictions is None else len(set(np.asarray(self.predictions).tolist()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "f1": self.f1,
            "C": self.best_c,
            "classes_predicted": self.classes_predicted,
            "cv_accuracy": {f"{c:g}": round(a, 6) for c, a in self.cv_accuracy.items()},
            "by_macro_f1": self.by_macro_f1,
            "n_train": self.n_train,
            "n_eval": self.n_eval,
            "n_classes": self.n_classes,
            "seconds": round(self.seconds, 2),
            "solver": self.solver,
            "per_class": self.per_class,
            "confusion": self.confusion,
        }


def class_report(y_true: np.ndarray, y_pred: np.ndarray, labels: np.ndarray | list[str]) -> tuple[dict, dict]:
    """Per-class F1 (x 100, 2 decimals) with support and predicted count, and the confusion matrix
    (rows: true class, columns: predicted class, both in ``labels`` order)."""
    labels = [str(label) for label in labels]
    y_true, y_pred = np.asarray(y_true).astype(str), np.asarray(y_pred).astype(str)
    _, _, f1, support = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    predicted = {label: int(np.sum(y_pred == label)) for label in labels}
    per_class = {
        label: {"f1": round(100 * float(f), 2), "support": int(n), "predicted": predicted[label]}
        for label, f, n in zip(labels, f1, support, strict=True)
    }
    matrix = confusion_matrix(y_true, y_pred, labels=labels)
    return per_class, {"labels": labels, "matrix": matrix.tolist()}


# ---------------------------------------------------------------- protocol
def stratified_folds(y: np.ndarray, n_splits: int = CV_FOLDS) -> list[np.ndarray]:
    """Test-fold masks of sklearn's ``StratifiedKFold(n_splits)`` (no shuffling), as GridSearchCV uses."""
    rows = np.arange(len(y))
    return [np.isin(rows, test) for _, test in StratifiedKFold(n_splits=n_splits).split(np.zeros(len(y)), y)]


def _with_bias(X: np.ndarray, fit_intercept: bool = True) -> np.ndarray:
    """``X`` with a column of ones (liblinear's regularised intercept, ``intercept_scaling=1``) or as it is."""
    X = np.asarray(X, dtype=np.float32)
    if not fit_intercept:
        return X
    return np.hstack([X, np.ones((len(X), 1), dtype=np.float32)])


def _predict(Xb: np.ndarray, W: np.ndarray, classes: np.ndarray) -> np.ndarray:
    scores = Xb @ W.astype(np.float32)
    if len(classes) == 2:
        return classes[(scores[:, 0] > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


def _label_columns(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """±1 targets: one column per class (one-vs-rest), or one column for ``classes[1]`` when binary."""
    if len(classes) == 2:
        return np.where(y == classes[1], 1.0, -1.0).astype(np.float32)[:, None]
    return np.where(y[:, None] == classes[None, :], 1.0, -1.0).astype(np.float32)


def fit_svm_path(
    X: np.ndarray, y: np.ndarray, Cs: tuple[float, ...] = PAPER_CS, tol: float = DEFAULT_TOL, fit_intercept: bool = True
) -> list[np.ndarray]:
    """Weights (features + bias row unless ``fit_intercept=False``, one column per one-vs-rest class) of
    liblinear's squared-hinge SVM at each C."""
    classes = np.unique(y)
    Y = _label_columns(np.asarray(y), classes)
    solver = PathSolver(_with_bias(X, fit_intercept), Y, np.ones_like(Y, dtype=bool), tol)
    return [solver.solve(C) for C in sorted(Cs)]


CV_SCORINGS = ("accuracy", "f1_macro")  # accuracy: the protocol's (GridSearchCV's default); f1_macro: beside it


def cv_scores(
    X: np.ndarray, y: np.ndarray, Cs: tuple[float, ...] = PAPER_CS, tol: float = DEFAULT_TOL, fit_intercept: bool = True
) -> tuple[dict[str, dict[float, float]], dict[str, int]]:
    """Mean accuracy and mean macro-F1 over stratified 3 folds of every ``C`` (``{scoring: {C: score}}``), all folds
    solved together along the ``C`` path, and the solver's step counts."""
    y = np.asarray(y)
    classes = np.unique(y)
    Xb = _with_bias(X, fit_intercept)
    folds = stratified_folds(y)
    Y1 = _label_columns(y, classes)
    k = Y1.shape[1]
    Y = np.tile(Y1, (1, len(folds)))
    S = np.repeat(np.stack([~m for m in folds], axis=1), k, axis=1)
    solver = PathSolver(Xb, Y, S, tol)
    scores: dict[str, dict[float, float]] = {scoring: {} for scoring in CV_SCORINGS}
    for C in sorted(Cs):
        W = solver.solve(C)
        accuracy, macro_f1 = [], []
        for f, mask in enumerate(folds):
            pred = _predict(Xb[mask], W[:, f * k : (f + 1) * k], classes)
            accuracy.append(float(np.mean(pred == y[mask])))
            macro_f1.append(float(f1_score(y[mask], pred, average="macro")))
        scores["accuracy"][C] = float(np.mean(accuracy))
        scores["f1_macro"][C] = float(np.mean(macro_f1))
    return scores, solver.stats.as_dict()


def best_of(scores: dict[float, float], Cs: tuple[float, ...] = PAPER_CS) -> float:
    """GridSearchCV's choice: the highest mean score, the first of the grid order on ties."""
    return max(Cs, key=lambda c: (scores[c], -list(Cs).index(c)))


def select_c(
    X: np.ndarray,
    y: np.ndarray,
    Cs: tuple[float, ...] = PAPER_CS,
    tol: float = DEFAULT_TOL,
    fit_intercept: bool = True,
    scoring: str = "accuracy",
) -> tuple[float, dict[float, float], dict[str, int]]:
    """GridSearchCV's choice: mean ``scoring`` (accuracy, the protocol's) over stratified 3 folds, first best C;
    all folds solved together. ``scoring="f1_macro"`` scores each fold by macro-F1 instead."""
    if scoring not in CV_SCORINGS:
        raise ValueError(f"scoring must be one of {CV_SCORINGS}, got {scoring!r}")
    scores, stats = cv_scores(X, y, Cs, tol, fit_intercept)
    return best_of(scores[scoring], Cs), scores[scoring], stats


def classify(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    Cs: tuple[float, ...] = PAPER_CS,
    tol: float | None = None,
    variant: str = "sklearn",
    scoring: str = "accuracy",
) -> ClassificationResult:
    """The SCIDOCS classification protocol on arrays; macro-F1 x 100 rounded to 2 decimals. ``tol`` None: the
    ``variant``'s (``SVM_VARIANTS``). ``scoring`` chooses C (``accuracy``: the protocol's, or ``f1_macro``); the same
    CV's choice by macro-F1 is refitted too and kept in ``by_macro_f1``."""
    if variant not in SVM_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(SVM_VARIANTS)}, got {variant!r}")
    fit_intercept = SVM_VARIANTS[variant]["fit_intercept"]
    tol = SVM_VARIANTS[variant]["tol"] if tol is None else tol
    started = time.perf_counter()
    y_train, y_eval = np.asarray(y_train), np.asarray(y_eval)
    classes = np.unique(y_train)
    if len(classes) < 2:
        raise ValueError(f"classification needs at least 2 classes in train, got {len(classes)}")
    if scoring not in CV_SCORINGS:
        raise ValueError(f"scoring must be one of {CV_SCORINGS}, got {scoring!r}")
    scores, cv_stats = cv_scores(X_train, y_train, Cs, tol, fit_intercept)
    best_c, c_by_f1 = best_of(scores[scoring], Cs), best_of(scores["f1_macro"], Cs)
    Xb_eval = _with_bias(X_eval, fit_intercept)
    path = tuple(c for c in sorted(Cs) if c <= max(best_c, c_by_f1))  # both choices lie on one warm-started path
    weights = dict(zip(path, fit_svm_path(X_train, y_train, path, tol, fit_intercept), strict=True))
    pred = _predict(Xb_eval, weights[best_c], classes)
    pred_by_f1 = _predict(Xb_eval, weights[c_by_f1], classes)
    f1 = float(np.round(100 * f1_score(y_eval, pred, average="macro"), 2))
    per_class, confusion = class_report(y_eval, pred, classes)
    by_macro_f1 = {
        "C": c_by_f1,
        "f1": float(np.round(100 * f1_score(y_eval, pred_by_f1, average="macro"), 2)),
        "classes_predicted": len(set(pred_by_f1.tolist())),
        "cv_macro_f1": {f"{c:g}": round(v, 6) for c, v in scores["f1_macro"].items()},
    }
    return ClassificationResult(
        f1=f1,
        best_c=best_c,
        cv_accuracy=scores[scoring],
        n_train=len(y_train),
        n_eval=len(y_eval),
        n_classes=len(classes),
        seconds=time.perf_counter() - started,
        solver={"cv": cv_stats, "variant": variant, "tol": tol, "cv_scoring": scoring},
        predictions=pred,
        per_class=per_class,
        confusion=confusion,
        by_macro_f1=by_macro_f1,
    )
