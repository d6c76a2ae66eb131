"""MAG / MeSH classification: linear SVM (squared hinge), ``C`` by 3-fold CV on train, macro-F1 on the split.

The protocol is the original's ``GridSearchCV(LinearSVC(loss="squared_hinge", random_state=42), cv=3,
param_grid={"C": logspace(-4, 2, 7)})``: stratified 3-fold split without shuffling, accuracy as the CV
score, the first best ``C`` on ties, refit on the whole train split.

The released SCIDOCS code imports ``LinearSVC`` from ``lightning.classification``, not from sklearn, and
that one differs in more than the solver: it fits **no intercept** and stops at **tol 1e-3** (sklearn /
liblinear: a regularised intercept, tol 1e-4). The default here is sklearn's (what docs/protocol.md states, and
what the tests compare with); ``classify(..., variant="lightning")`` (``SVM_VARIANTS``) drops the intercept
and uses tol 1e-3 as lightning does. Its tolerance is then applied through liblinear's primal stopping rule
below, not lightning's dual coordinate-descent rule, so the two stop at slightly different points.

The solver minimises liblinear's primal problem (one-vs-rest, regularised intercept with
``intercept_scaling=1``, liblinear's stopping rule ``||g|| <= tol * max(min(pos, neg), 1) / l * ||g(0)||``),
but for every class of every CV fold at once and along the ``C`` path with warm starts:

- a Newton method on ``0.5 ||w||^2 + C sum max(0, 1 - y w.x)^2`` with one column per (fold, class), so
  a pass over ``X`` is one dense matrix product (BLAS) instead of one sparse loop per class and fold;
- while many points are active (small ``C``) each Newton system is solved by conjugate gradients over
  ``X``, preconditioned with ``I + 2 C (|A| / n) X'X`` (one eigendecomposition);
- once CG over ``X`` would cost more than building them (large ``C``: few active points, hundreds of
  CG steps), it keeps each column's active-set Gram matrix ``X_A'X_A`` (updated with the points that
  enter or leave) and solves the Newton systems by CG over that matrix, preconditioned by a Cholesky
  factor that is recomputed when it has gone stale;
- an exact line search on the piecewise-quadratic objective.

It reaches liblinear's optimum (tests compare the weights) at tighter tolerances than liblinear
itself reaches in ``max_iter`` at large ``C``, where sklearn's fits stop early with a ConvergenceWarning.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support
from sklearn.model_selection import StratifiedKFold

logger = logging.getLogger(__name__)

PAPER_CS = tuple(float(c) for c in np.logspace(-4, 2, 7))  # the original's grid
CV_FOLDS = 3
GRAM_REFACTOR_STEPS = 12  # refactorise a column's Newton matrix when CG over its old factor needs more steps
DEFAULT_TOL = 1e-4  # sklearn's LinearSVC default, passed to liblinear as eps
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "f1": self.f1,
            "C": self.best_c,
            "cv_accuracy": {f"{c:g}": round(a, 6) for c, a in self.cv_accuracy.items()},
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


# ---------------------------------------------------------------- the solver
@dataclass
class _Stats:
    newton: int = 0
    cg: int = 0
    gram_rows: int = 0
    cholesky: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"newton_steps": self.newton, "cg_steps": self.cg, "gram_row_updates": self.gram_rows}


class _GramState:
    """Per-column Gram matrices ``X_A' X_A`` and ``X_A' y_A`` of the active sets, updated incrementally (float64)."""

    def __init__(self, X64: np.ndarray, Y: np.ndarray, active: np.ndarray, stats: _Stats) -> None:
        self.X64, self.Y = X64, Y
        self.active = np.zeros_like(active)
        d, k = X64.shape[1], active.shape[1]
        self.gram = np.zeros((k, d, d))
        self.xty = np.zeros((d, k))
        self.stats = stats
        self.update(active)

    def update(self, active: np.ndarray) -> None:
        for col in range(active.shape[1]):
            added = np.flatnonzero(active[:, col] & ~self.active[:, col])
            removed = np.flatnonzero(self.active[:, col] & ~active[:, col])
            if len(added) + len(removed) == 0:
                continue
            rows_now = np.flatnonzero(active[:, col])
            if len(added) + len(removed) > len(rows_now):  # cheaper to rebuild
                rows = self.X64[rows_now]
                self.gram[col] = rows.T @ rows
                self.xty[:, col] = rows.T @ self.Y[rows_now, col]
                self.stats.gram_rows += len(rows_now)
            else:
                for index, sign in ((added, 1.0), (removed, -1.0)):
                    if len(index):
                        rows = self.X64[index]
                        self.gram[col] += sign * (rows.T @ rows)
                        self.xty[:, col] += sign * (rows.T @ self.Y[index, col])
                self.stats.gram_rows += len(added) + len(removed)
        self.active = active.copy()

    def matvec(self, V: np.ndarray) -> np.ndarray:
        """``X_A_j' X_A_j V[:, j]`` for every column j."""
        return np.matmul(self.gram, V.T[:, :, None])[:, :, 0].T


def _line_search(
    W: np.ndarray, D: np.ndarray, F: np.ndarray, Z: np.ndarray, Y: np.ndarray, S: np.ndarray, C: float
) -> np.ndarray:
    """Exact minimiser ``t`` of the (convex, piecewise-quadratic) objective along ``D``, per column."""
    wd = np.einsum("ij,ij->j", W, D, dtype=np.float64)
    dd = np.einsum("ij,ij->j", D, D, dtype=np.float64)

    def derivatives(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ft = F + t.astype(F.dtype) * Z
        active = S & (Y * Ft < 1)
        first = wd + t * dd - 2 * C * np.einsum("ij,ij->j", active * Z, Y - Ft, dtype=np.float64)
        second = dd + 2 * C * np.einsum("ij,ij->j", active * Z, Z, dtype=np.float64)
        return first, second

    lo = np.zeros_like(wd)
    hi = np.ones_like(wd)
    first_hi, _ = derivatives(hi)
    for _ in range(60):  # grow the bracket until the derivative is non-negative at hi
        grow = first_hi < 0
        if not grow.any():
            break
        lo = np.where(grow, hi, lo)
        hi = np.where(grow, 2 * hi, hi)
        first_hi, _ = derivatives(hi)
    t = np.where(first_hi == 0, hi, np.minimum(hi, 1.0))
    for _ in range(50):
        first, second = derivatives(t)
        lo = np.where(first < 0, t, lo)
        hi = np.where(first > 0, t, hi)
        newton = t - first / np.where(second > 0, second, 1.0)
        inside = (newton > lo) & (newton < hi)
        new_t = np.where(inside, newton, 0.5 * (lo + hi))
        new_t = np.where(first == 0, t, new_t)
        if np.all(np.abs(new_t - t) <= 1e-12 * np.maximum(np.abs(t), 1.0)):
            return new_t
        t = new_t
    return t


class _PathSolver:
    """One-vs-rest squared-hinge SVMs for several column problems sharing ``X`` (float32, bias column last).

    Column ``j`` has labels ``Y[:, j]`` in {-1, +1} and uses only the rows where ``S[:, j]`` is true.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray, S: np.ndarray, tol: float = DEFAULT_TOL, max_iter: int = 1000):
        self.X, self.Y, self.S = X, Y, S
        self.tol, self.max_iter = tol, max_iter
        self.stats = _Stats()
        n_used = S.sum(axis=0)
        n_pos = (S & (Y > 0)).sum(axis=0)
        # liblinear: stop when ||g|| <= eps * max(min(pos, neg), 1) / l * ||g(w=0)||, g(0) = -2C X'y
        self.rel_stop = tol * np.maximum(np.minimum(n_pos, n_used - n_pos), 1) / n_used
        self.xty_norm = np.linalg.norm((X.T @ (Y * S)).astype(np.float64), axis=0)
        self.n_rows = int(S.any(axis=1).sum())
        self.X64 = X.astype(np.float64)
        eig, Q = np.linalg.eigh(self.X64.T @ (self.X64 * S.any(axis=1)[:, None]))  # shared CG preconditioner
        self.eig, self.Q = np.maximum(eig, 0.0), Q
        self.W = np.zeros((X.shape[1], Y.shape[1]), dtype=np.float64)
        self.gram: _GramState | None = None

    # -- conjugate gradients over X (small C: most points active, the shared preconditioner fits)
    def _pass_gradient(self, C: float, F: np.ndarray, active: np.ndarray) -> np.ndarray:
        R = (active * (self.Y - F)).astype(np.float32)
        return self.W - 2 * C * (self.X.T @ R).astype(np.float64)

    def _cg_direction(self, C: float, G: np.ndarray, active: np.ndarray, todo: np.ndarray) -> tuple[np.ndarray, int]:
        """Truncated preconditioned CG for ``(I + 2C X_A'X_A) D = -G`` (relative residual 0.1, as TRON)."""
        # I + 2C X_A'X_A ~ I + 2C (|A_j| / n) X'X: the active set's share of the shared Gram matrix
        share = active.sum(axis=0) / self.n_rows
        scale = 1.0 / (1.0 + 2 * C * share[None, :] * self.eig[:, None])
        mask = active.astype(np.float32)

        def precondition(R: np.ndarray) -> np.ndarray:
            return self.Q @ (scale * (self.Q.T @ R))

        def hess(V: np.ndarray) -> np.ndarray:
            XV = self.X @ V.astype(np.float32)
            return V + 2 * C * (self.X.T @ (mask * XV)).astype(np.float64)

        return _pcg(hess, precondition, np.where(todo, -G, 0.0), 0.1, self.X.shape[1] * 2)

    # -- exact Gram matrices (large C: few points active, CG over X would need hundreds of steps)
    def _worth_gram(self, cg_steps: int, active: np.ndarray) -> bool:
        n, d = self.X.shape
        k = active.shape[1]
        cg_cost = cg_steps * 4.0 * n * d * k
        gram_cost = float(active.sum()) * d * d + k * d**3 / 3
        return cg_cost > gram_cost

    def _gram_direction(
        self, C: float, G: np.ndarray, todo: np.ndarray, factors: dict[int, Any]
    ) -> tuple[np.ndarray, int]:
        """``(I + 2C X_A'X_A) D = -G`` per column: CG over the Gram matrix, preconditioned by a Cholesky factor.

        A column's factor is recomputed when CG over its old factor needed more than
        ``GRAM_REFACTOR_STEPS`` steps (a factorisation costs about that many CG steps).
        """
        assert self.gram is not None
        d = G.shape[0]
        D = np.zeros_like(G)
        total = 0
        for col in np.flatnonzero(todo):
            gram = self.gram.gram[col]
            factor, last_steps = factors.get(col, (None, GRAM_REFACTOR_STEPS + 1))
            if last_steps > GRAM_REFACTOR_STEPS:
                H = 2 * C * gram
                H[np.diag_indices(d)] += 1.0
                factor = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
                self.stats.cholesky += 1

            def hess(v: np.ndarray, gram: np.ndarray = gram) -> np.ndarray:
                return v + 2 * C * (gram @ v)

            def precondition(r: np.ndarray, factor: Any = factor) -> np.ndarray:
                return scipy.linalg.cho_solve(factor, r, check_finite=False)

            D[:, col : col + 1], steps = _pcg(hess, precondition, -G[:, col : col + 1], 1e-2, 3 * GRAM_REFACTOR_STEPS)
            factors[col] = (factor, steps)
            total += steps
        return D, total

    def solve(self, C: float) -> np.ndarray:
        """Minimise every column's objective at ``C``, warm-started from the previous solution."""
        started = time.perf_counter()
        before = dict(self.stats.__dict__)
        F = self.X @ self.W.astype(np.float32)
        stop = self.rel_stop * 2 * C * self.xty_norm
        factors: dict[int, Any] = {}  # column -> (Cholesky factor at this C, CG steps it needed last)
        cg_steps = 0
        for _ in range(self.max_iter):
            active = self.S & (self.Y * F < 1)
            if self.gram is None and self._worth_gram(cg_steps, active):
                self.gram = _GramState(self.X64, self.Y.astype(np.float64), active, self.stats)
            if self.gram is not None:
                self.gram.update(active)
                G = self.W - 2 * C * (self.gram.xty - self.gram.matvec(self.W))
            else:
                G = self._pass_gradient(C, F, active)
            todo = np.linalg.norm(G, axis=0) > stop
            if not todo.any():
                break
            self.stats.newton += 1
            if self.gram is not None:
                D, cg_steps = self._gram_direction(C, G, todo, factors)
            else:
                D, cg_steps = self._cg_direction(C, G, active, todo)
            self.stats.cg += cg_steps
            Z = self.X @ D.astype(np.float32)
            t = _line_search(self.W, D, F, Z, self.Y, self.S, C)
            t[~todo] = 0.0
            step = t * D
            if np.all(np.abs(step).max(axis=0) <= 1e-10 * np.maximum(np.abs(self.W).max(axis=0), 1e-12)):
                break  # no progress possible at this precision
            self.W += step
            F += (t.astype(np.float32) * Z).astype(np.float32)
        logger.debug(
            "C=%g: %.2fs, %s, gram=%s",
            C,
            time.perf_counter() - started,
            {k: v - before[k] for k, v in self.stats.__dict__.items()},
            self.gram is not None,
        )
        return self.W.copy()


def _pcg(hess: Any, precondition: Any, B: np.ndarray, rel_tol: float, max_steps: int) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradients for every column of ``H X = B`` at once; returns ``X`` and the steps."""
    X = np.zeros_like(B)
    R = B.copy()
    stop = rel_tol * np.linalg.norm(R, axis=0)
    Zp = precondition(R)
    P = Zp.copy()
    rz = np.einsum("ij,ij->j", R, Zp)
    steps = 0
    while steps < max_steps:
        steps += 1
        HP = hess(P)
        php = np.einsum("ij,ij->j", P, HP)
        alpha = np.where(php > 0, rz / np.where(php > 0, php, 1.0), 0.0)
        X += alpha * P
        R -= alpha * HP
        if np.all(np.linalg.norm(R, axis=0) <= stop):
            break
        Zp = precondition(R)
        rz_new = np.einsum("ij,ij->j", R, Zp)
        beta = np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
        P = Zp + beta * P
        rz = rz_new
    return X, steps


# ---------------------------------------------------------------- protocol
def stratified_folds(y: np.ndarray, n_splits: int = CV_FOLDS) -> list[np.ndarray]:
    """Test-fold masks of sklearn's ``StratifiedKFold(n_splits)`` (no shuffling), as GridSearchCV uses."""

    masks = []
    for _, test_index in StratifiedKFold(n_splits=n_splits).split(np.zeros(len(y)), y):
        mask = np.zeros(len(y), dtype=bool)
        mask[test_index] = True
        masks.append(mask)
    return masks


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
    X: np.ndarray,
    y: np.ndarray,
    Cs: tuple[float, ...] = PAPER_CS,
    tol: float = DEFAULT_TOL,
    fit_intercept: bool = True,
) -> list[np.ndarray]:
    """Weights (features + bias row unless ``fit_intercept=False``, one column per one-vs-rest class) of
    liblinear's squared-hinge SVM at each C."""
    classes = np.unique(y)
    Y = _label_columns(np.asarray(y), classes)
    solver = _PathSolver(_with_bias(X, fit_intercept), Y, np.ones_like(Y, dtype=bool), tol)
    return [solver.solve(C) for C in sorted(Cs)]


CV_SCORINGS = ("accuracy", "f1_macro")  # accuracy: the protocol's (GridSearchCV's default); f1_macro: a diagnostic


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
    y = np.asarray(y)
    classes = np.unique(y)
    Xb = _with_bias(X, fit_intercept)
    folds = stratified_folds(y)
    Y1 = _label_columns(y, classes)
    k = Y1.shape[1]
    Y = np.tile(Y1, (1, len(folds)))
    S = np.repeat(np.stack([~m for m in folds], axis=1), k, axis=1)
    solver = _PathSolver(Xb, Y, S, tol)
    accuracy: dict[float, float] = {}
    for C in sorted(Cs):
        W = solver.solve(C)
        fold_scores = []
        for f, mask in enumerate(folds):
            pred = _predict(Xb[mask], W[:, f * k : (f + 1) * k], classes)
            if scoring == "accuracy":
                fold_scores.append(float(np.mean(pred == y[mask])))
            else:
                fold_scores.append(float(f1_score(y[mask], pred, average="macro")))
        accuracy[C] = float(np.mean(fold_scores))
    best = max(Cs, key=lambda c: (accuracy[c], -list(Cs).index(c)))  # first of the grid order on ties
    return best, accuracy, solver.stats.as_dict()


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
    """The SCIDOCS classification protocol on arrays; macro-F1 x 100 rounded to 2 decimals.

    Args:
        tol: the stopping tolerance; None: the variant's (sklearn 1e-4, lightning 1e-3).
        variant: ``sklearn`` (regularised intercept, the default) or ``lightning`` (no intercept), see
            ``SVM_VARIANTS`` and the module docstring.
        scoring: the CV score that chooses C: ``accuracy`` (the protocol) or ``f1_macro`` (a diagnostic).
    """

    if variant not in SVM_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(SVM_VARIANTS)}, got {variant!r}")
    fit_intercept = SVM_VARIANTS[variant]["fit_intercept"]
    tol = SVM_VARIANTS[variant]["tol"] if tol is None else tol
    started = time.perf_counter()
    y_train, y_eval = np.asarray(y_train), np.asarray(y_eval)
    classes = np.unique(y_train)
    if len(classes) < 2:
        raise ValueError(f"classification needs at least 2 classes in train, got {len(classes)}")
    best_c, accuracy, cv_stats = select_c(X_train, y_train, Cs, tol, fit_intercept, scoring)
    path = [c for c in sorted(Cs) if c <= best_c]
    W = fit_svm_path(X_train, y_train, tuple(path), tol, fit_intercept)[-1]
    pred = _predict(_with_bias(X_eval, fit_intercept), W, classes)
    f1 = float(np.round(100 * f1_score(y_eval, pred, average="macro"), 2))
    per_class, confusion = class_report(y_eval, pred, classes)
    return ClassificationResult(
        f1=f1,
        best_c=best_c,
        cv_accuracy=accuracy,
        n_train=len(y_train),
        n_eval=len(y_eval),
        n_classes=len(classes),
        seconds=time.perf_counter() - started,
        solver={"cv": cv_stats, "variant": variant, "tol": tol, "cv_scoring": scoring},
        predictions=pred,
        per_class=per_class,
        confusion=confusion,
    )
