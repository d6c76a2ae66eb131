"""Regression, as SciRepEval's ``SupervisedEvaluator.regression``: ``LinearSVR`` with C chosen from
``logspace(-4, 2, 7)`` by 3-fold ``GridSearchCV`` on the training split; Kendall's tau and Pearson's r
(scipy) x 100, R2 x 100 and the mean squared error as is, rounded as SciRepEval rounds them. The result keeps
each test paper's true and predicted value (``per_paper``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import kendalltau, pearsonr
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import mean_squared_error, r2_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVR

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.formats.supervised import CV_FOLDS, RANDOM_STATE, covered_ids, per_paper, split_vectors
from specter_utils.evaluation.formats.tasks import EVALUATORS, REGRESSION, FormatTask, SupervisedData

C_GRID = np.logspace(-4, 2, 7)


def _statistic(function: Callable[..., Any]) -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda y_true, y_pred: float(tuple(function(y_true, y_pred))[0])


METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kendalltau": _statistic(kendalltau),
    "pearsonr": _statistic(pearsonr),
    "r2": lambda y_true, y_pred: float(r2_score(y_true, y_pred)),
    "mse": lambda y_true, y_pred: float(mean_squared_error(y_true, y_pred)),
}


def scirepeval_regressor(n_jobs: int = 1) -> GridSearchCV:
    return GridSearchCV(LinearSVR(random_state=RANDOM_STATE), {"C": C_GRID}, cv=CV_FOLDS, n_jobs=n_jobs)


def regression_metric(name: str, y_true: np.ndarray, y_pred: np.ndarray) -> float | None:
    """One metric as SciRepEval reports it (x 100 and 2 decimals but the MSE); None when undefined
    (constant predictions have no correlation)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message=".*constant.*")
        value = METRICS[name](y_true, y_pred)
    if not np.isfinite(value):
        return None
    return value if name == "mse" else float(np.round(100 * value, 2))


@EVALUATORS.register(REGRESSION)
def evaluate(
    task: FormatTask, data: SupervisedData, embeddings: EmbeddingSet, n_jobs: int = 1, **_: Any
) -> dict[str, Any]:
    x_train, y_train, train_cover = split_vectors(data.train, embeddings, task.name, "training")
    x_test, y_test, test_cover = split_vectors(data.test, embeddings, task.name, "test")
    model = scirepeval_regressor(n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, np.asarray(y_train))
    y_pred = model.predict(x_test)
    y_true = np.asarray(y_test)
    metrics = {name: regression_metric(name, y_true, y_pred) for name in task.measured}
    papers = per_paper(covered_ids(data.test, embeddings), list(y_true), list(y_pred))
    return {"metrics": metrics, "coverage": {"train": train_cover, "test": test_cover}, "per_paper": papers}
