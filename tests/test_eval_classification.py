"""Classification: the fast solver reproduces GridSearchCV(LinearSVC) (same C, same F1) and liblinear's optimum."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC

from specter_utils.evaluation import svm
from specter_utils.evaluation.classification import PAPER_CS, SVM_VARIANTS, classify, fit_svm_path, select_c


def blobs(n: int, k: int, d: int, spread: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (k, d))
    y = rng.integers(0, k, n)
    X = centres[y] + rng.normal(0, spread, (n, d)) + 0.5
    labels = np.array([f"class-{c}" for c in y])
    return X.astype(np.float32), labels


def objective(W: np.ndarray, X: np.ndarray, Y: np.ndarray, C: float) -> np.ndarray:
    margins = Y * (np.hstack([X, np.ones((len(X), 1))]) @ W)
    return 0.5 * (W * W).sum(0) + C * (np.maximum(0, 1 - margins) ** 2).sum(0)


def test_separable_data_gives_f1_100():
    X, y = blobs(240, 4, 6, 0.05)
    result = classify(X[:160], y[:160], X[160:], y[160:])
    assert result.f1 == 100.0
    assert result.n_classes == 4 and set(result.cv_accuracy) == set(PAPER_CS)


def test_same_choice_and_f1_as_gridsearch_linearsvc():
    X, y = blobs(420, 3, 10, 1.6, seed=1)
    Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
    ref = GridSearchCV(
        LinearSVC(loss="squared_hinge", random_state=42, max_iter=100000, tol=1e-8),
        cv=3,
        param_grid={"C": np.logspace(-4, 2, 7)},
    ).fit(Xtr, ytr)
    ref_f1 = round(100 * f1_score(yte, ref.predict(Xte), average="macro"), 2)
    ours = classify(Xtr, ytr, Xte, yte)
    assert ours.best_c == pytest.approx(ref.best_params_["C"])
    assert abs(ours.f1 - ref_f1) <= 0.1
    ref_scores = dict(zip(ref.cv_results_["param_C"], ref.cv_results_["mean_test_score"], strict=True))
    for C, accuracy in ours.cv_accuracy.items():
        assert accuracy == pytest.approx(ref_scores[C], abs=0.01)


@pytest.mark.parametrize("gram", [False, True])
def test_weights_reach_liblinears_optimum(monkeypatch, gram):
    """Both inner solvers (CG over X, exact Gram Newton) reach the optimum liblinear converges to."""
    if gram:  # make the Gram path win the cost comparison from the first step
        monkeypatch.setattr(svm.PathSolver, "_worth_gram", lambda self, steps, active: True)
    else:
        monkeypatch.setattr(svm.PathSolver, "_worth_gram", lambda self, steps, active: False)
    X, y = blobs(600, 3, 8, 1.2, seed=2)
    Cs = (0.01, 1.0, 30.0)
    ours = fit_svm_path(X, y, Cs, tol=1e-8)
    classes = np.unique(y)
    Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    for C, W in zip(Cs, ours, strict=True):
        ref = LinearSVC(loss="squared_hinge", C=C, tol=1e-10, max_iter=100000, dual=False).fit(X, y)
        W_ref = np.vstack([ref.coef_.T, ref.intercept_[None, :]])
        assert np.allclose(W, W_ref, rtol=1e-3, atol=1e-3 * np.abs(W_ref).max())
        assert objective(W, X, Y, C).sum() <= objective(W_ref, X, Y, C).sum() * (1 + 1e-6)


def test_binary_task_uses_one_column_like_liblinear():
    X, y = blobs(200, 2, 5, 1.0, seed=3)
    W = fit_svm_path(X, y, (0.1,), tol=1e-8)[0]
    ref = LinearSVC(loss="squared_hinge", C=0.1, tol=1e-10, max_iter=100000, dual=False).fit(X, y)
    assert W.shape == (6, 1)
    assert np.allclose(W[:, 0], np.append(ref.coef_[0], ref.intercept_[0]), rtol=1e-3, atol=1e-4)


def test_c_selection_is_deterministic_and_first_on_ties():
    X, y = blobs(150, 3, 4, 0.01, seed=4)
    X = X * 100  # far-apart classes: every C separates perfectly, all CV accuracies tie at 1
    best, accuracy, _ = select_c(X, y)
    assert set(accuracy.values()) == {1.0}
    assert best == PAPER_CS[0]
    assert select_c(X, y)[:2] == (best, accuracy)


def test_lightning_variant_fits_no_intercept_at_tol_1e3():
    """The released SCIDOCS code's lightning LinearSVC: no intercept, tol 1e-3 (the default stays sklearn's)."""
    X, y = blobs(300, 3, 6, 1.0, seed=5)
    X = X + 3.0  # off-centre, so an intercept matters
    W = fit_svm_path(X, y, (0.1,), tol=1e-8, fit_intercept=False)[0]
    ref = LinearSVC(loss="squared_hinge", C=0.1, tol=1e-10, max_iter=100000, dual=False, fit_intercept=False).fit(X, y)
    assert W.shape == (6, 3)  # no bias row
    assert np.allclose(W, ref.coef_.T, rtol=1e-3, atol=1e-3 * np.abs(ref.coef_).max())
    default = classify(X[:200], y[:200], X[200:], y[200:])
    lightning = classify(X[:200], y[:200], X[200:], y[200:], variant="lightning")
    assert default.solver["variant"] == "sklearn" and default.solver["tol"] == 1e-4
    assert lightning.solver["variant"] == "lightning" and lightning.solver["tol"] == 1e-3
    assert SVM_VARIANTS["lightning"] == {"fit_intercept": False, "tol": 1e-3}
    with pytest.raises(ValueError, match="variant"):
        classify(X[:200], y[:200], X[200:], y[200:], variant="liblinear")


def test_c_by_macro_f1_is_refitted_beside_the_protocols_choice():
    """The same CV's macro-F1 choice: its C, its macro-F1 on the split and its classes predicted, beside accuracy's."""
    rng = np.random.default_rng(7)
    sizes = (300, 120, 40, 12, 8)  # unbalanced classes: accuracy and macro-F1 can choose different C
    centres = rng.normal(0, 1, (len(sizes), 8))
    y = np.repeat(np.arange(len(sizes)), sizes)
    X = (centres[y] + rng.normal(0, 1.2, (len(y), 8))).astype(np.float32)
    labels = np.array([f"class-{c}" for c in y])
    order = rng.permutation(len(y))
    X, labels = X[order], labels[order]
    Xtr, ytr, Xte, yte = X[:360], labels[:360], X[360:], labels[360:]
    protocol = classify(Xtr, ytr, Xte, yte)
    by_f1 = classify(Xtr, ytr, Xte, yte, scoring="f1_macro")
    assert protocol.solver["cv_scoring"] == "accuracy"
    assert protocol.best_c == select_c(Xtr, ytr)[0]
    assert protocol.by_macro_f1["C"] == select_c(Xtr, ytr, scoring="f1_macro")[0] == by_f1.best_c
    assert protocol.by_macro_f1["f1"] == by_f1.f1
    assert protocol.by_macro_f1["classes_predicted"] == len(set(by_f1.predictions.tolist())) == by_f1.classes_predicted
    assert protocol.classes_predicted == len(set(protocol.predictions.tolist()))
    assert protocol.as_dict()["by_macro_f1"]["cv_macro_f1"].keys() == protocol.as_dict()["cv_accuracy"].keys()
