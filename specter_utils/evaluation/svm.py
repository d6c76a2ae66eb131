"""The squared-hinge linear SVM solver behind :mod:`specter_utils.evaluation.classification`.

It minimises liblinear's primal problem (one-vs-rest, regularised intercept with ``intercept_scaling=1``,
liblinear's stopping rule ``||g|| <= tol * max(min(pos, neg), 1) / l * ||g(0)||``), but for every class of
every CV fold at once and along the ``C`` path with warm starts:

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
itself reaches in ``max_iter`` at large ``C``, where sklearn's fits stop early with a ConvergenceWarning."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

logger = logging.getLogger(__name__)

GRAM_REFACTOR_STEPS = 12  # refactorise a column's Newton matrix when CG over its old factor needs more steps
DEFAULT_TOL = 1e-4  # sklearn's LinearSVC default, passed to liblinear as eps


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


class PathSolver:
    """One-vs-rest squared-hinge SVMs for several column problems sharing ``X`` (float32, bias column last).

    Column ``j`` has labels ``Y[:, j]`` in {-1, +1} and uses only the rows where ``S[:, j]`` is true."""

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
        """``(I + 2C X_A'X_A) D = -G`` per column: CG over the Gram matrix, preconditioned by a Cholesky factor,
        recomputed when CG over the old one needed more than ``GRAM_REFACTOR_STEPS`` steps (about its cost)."""
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
        spent = {k: v - before[k] for k, v in self.stats.__dict__.items()}
        logger.debug("C=%g: %.2fs, %s, gram=%s", C, time.perf_counter() - started, spent, self.gram is not None)
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
