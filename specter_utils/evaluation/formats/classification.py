"""Classification, single- and multi-label, as SciRepEval's ``SupervisedEvaluator.classify``.

A linear SVM on the training split's vectors, C chosen from ``logspace(-2, 2, 5)`` by 3-fold ``GridSearchCV``;
single-label: ``LinearSVC(loss="squared_hinge")``; multi-label: one-vs-rest over ``GridSearchCV(LinearSVC(
loss="hinge", max_iter=10000))`` with the labels binarized over every label of both splits. Metrics are
scikit-learn's (``f1_macro`` is ``f1_score(average="macro")``), x 100, rounded to 2 decimals. The SVMs are
seeded (SciRepEval seeds only the single-label one) so that a score repeats. The result keeps each test paper's
true and predicted labels (``per_paper``; multi-label: lists of labels, with ``classes`` the binarized columns)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning, UndefinedMetricWarning
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.svm import LinearSVC

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.supervised import CV_FOLDS, RANDOM_STATE, covered_ids, per_paper, split_vectors
from specter_utils.evaluation.formats.tasks import CLASSIFICATION, EVALUATORS, FormatTask, SupervisedData

C_GRID = np.logspace(-2, 2, 5)
METRICS = {"f1": f1_score, "accuracy": accuracy_score, "precision": precision_score, "recall": recall_score}


def scirepeval_classifier(multi_label: bool, n_jobs: int = 1) -> Any:
    """SciRepEval's classifier: C by 3-fold grid search; one-vs-rest for multi-label."""
    if multi_label:
        svm = LinearSVC(loss="hinge", max_iter=10000, random_state=RANDOM_STATE)
        return OneVsRestClassifier(GridSearchCV(svm, {"C": C_GRID}, cv=CV_FOLDS, n_jobs=n_jobs), n_jobs=1)
    svm = LinearSVC(loss="squared_hinge", random_state=RANDOM_STATE)
    return GridSearchCV(svm, {"C": C_GRID}, cv=CV_FOLDS, n_jobs=n_jobs)


def classification_metric(name: str, y_true: Any, y_pred: Any) -> float:
    """``f1``, ``accuracy``, ``precision`` or ``recall``, with ``_<average>`` passed to scikit-learn, x 100."""
    base, _, average = name.partition("_")
    function = METRICS[base]
    try:
        value = function(y_true, y_pred, average=average) if average else function(y_true, y_pred)
    except ValueError as exc:  # e.g. f1 without an average on more than two classes
        raise DataError(f"metric {name!r}: {exc}") from None
    return float(np.round(100 * value, 2))


@EVALUATORS.register(CLASSIFICATION)
def evaluate(
    task: FormatTask,
    data: SupervisedData,
    embeddings: EmbeddingSet,
    classifier: Callable[[bool], Any] | None = None,
    n_jobs: int = 1,
    **_: Any,
) -> dict[str, Any]:
    """The task's metrics and coverage; ``classifier(multi_label)`` builds another estimator than SciRepEval's."""
    x_train, y_train, train_cover = split_vectors(data.train, embeddings, task.name, "training")
    x_test, y_test, test_cover = split_vectors(data.test, embeddings, task.name, "test")
    if task.multi_label:
        binarizer = MultiLabelBinarizer(classes=sorted({label for labels in y_train + y_test for label in labels}))
        y_train_fit, y_true = binarizer.fit_transform(y_train), binarizer.transform(y_test)
        labels = list(binarizer.classes_)
    else:
        y_train_fit, y_true = np.asarray(y_train), np.asarray(y_test)
        labels = sorted(set(y_train) | set(y_test))
        if len(set(y_train)) < 2:
            raise DataError(f"task {task.name!r}: the training split has fewer than two labels")
    model = classifier(task.multi_label) if classifier else scirepeval_classifier(task.multi_label, n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.filterwarnings("ignore", message=".*(least populated class|not present in all training).*")
        model.fit(x_train, y_train_fit)
        y_pred = model.predict(x_test)
        metrics = {name: classification_metric(name, y_true, y_pred) for name in task.measured}
    test_ids = covered_ids(data.test, embeddings)
    if task.multi_label:
        predicted = binarizer.inverse_transform(np.asarray(y_pred))
        papers = per_paper(test_ids, [list(y) for y in y_test], [list(y) for y in predicted], classes=labels)
    else:
        papers = per_paper(test_ids, [str(y) for y in y_test], [str(y) for y in y_pred])
    coverage = {"train": train_cover, "test": test_cover}
    return {"metrics": metrics, "coverage": coverage, "labels": len(labels), "per_paper": papers}
