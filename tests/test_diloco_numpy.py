"""DiLoCo against a plain numpy loop of its definition, on quadratics built here from explicit matrices.

The problem: worker i holds f_i(x) = 1/2 x^T A_i x - b_i^T x with its own dense symmetric positive definite
A_i (heterogeneous curvature and optimum); full gradients A_i x - b_i, no noise, so the run is deterministic.
The loop below shares nothing with the library but the arrays: it writes H inner SGD steps per worker, the
pseudo-gradients Delta_i = x - x_i, optionally top-k with error feedback per worker (the residual kept by the
worker, ties broken by the lower index), their mean, and the outer Nesterov step of torch.optim.SGD
(nesterov=True): b <- g (first) or mu b + g, x <- x - lr (g + mu b).

Tolerance: both sides compute the same sums in possibly different orders (the mean over workers, the
matrix products); each reordering changes a coordinate by a few ulps of its magnitude (here <= 10), and
the runs are contractions over 120 inner steps, so 1e-11 absolute is rounding (a wrong step, sign or
momentum convention differs by more than 1e-3, checked by the control below).
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm.models import Problem
from simcomm.optim import build_method, run

ROUNDING = 1e-11


def _quadratics(n=4, d=12, seed=7):
    g = np.random.default_rng(seed)
    A = np.empty((n, d, d))
    for i in range(n):
        Q, _ = np.linalg.qr(g.standard_normal((d, d)))
        A[i] = (Q * np.geomspace(1.0, 0.05, d)) @ Q.T
        A[i] = (A[i] + A[i].T) / 2
    B = 2.0 * g.standard_normal((n, d))
    x_star = np.linalg.solve(A.mean(axis=0), B.mean(axis=0))

    def value_rows(X):
        X = np.atleast_2d(X)
        quad = np.einsum("bd,nde,be->bn", X, A, X)
        return (0.5 * quad - X @ B.T).mean(axis=1)

    def grad(X, idx):
        return np.einsum("bde,be->bd", A[idx], X) - B[idx]

    def full_grad(X):
        return np.atleast_2d(X) @ A.mean(axis=0) - B.mean(axis=0)

    f_star = float(value_rows(x_star[None])[0])
    x0 = x_star + g.standard_normal(d)
    problem = Problem("explicit_quadratics", n, d, 1.0, 0.05, x_star, f_star, 0.0, x0, grad, value_rows, full_grad)
    return problem, A, B


def _numpy_diloco(A, B, x0, steps, *, H, lr, outer_lr, mu, k=None, outer_nesterov=True):
    """The definition, written out with numpy only."""
    n, d = B.shape
    x = x0.copy()
    workers = [x.copy() for _ in range(n)]
    residual = [np.zeros(d) for _ in range(n)]
    buf = None
    xs = [x.copy()]
    for s in range(1, steps + 1):
        for i in range(n):
            workers[i] = workers[i] - lr * (A[i] @ workers[i] - B[i])
        if s % H == 0:
            sent = []
            for i in range(n):
                delta = x - workers[i]
                if k is not None:
                    p = delta + residual[i]
                    keep = sorted(range(d), key=lambda j: (-abs(p[j]), j))[:k]
                    m = np.zeros(d)
                    m[keep] = p[keep]
                    residual[i] = p - m
                    delta = m
                sent.append(delta)
            g = sum(sent) / n
            if outer_nesterov:
                buf = g if buf is None else mu * buf + g
                x = x - outer_lr * (g + mu * buf)
            else:
                x = x - outer_lr * g
            workers = [x.copy() for _ in range(n)]
        xs.append(x.copy())
    return np.array(xs)


@pytest.mark.parametrize("k", [None, 3], ids=["uncompressed", "top3_ef"])
def test_diloco_matches_a_plain_numpy_loop(k):
    problem, A, B = _quadratics()
    steps, H = 120, 6
    settings = dict(H=H, lr=0.1, outer="nesterov", outer_lr=0.7, outer_momentum=0.9)
    if k is not None:
        settings.update(compressor=f"top_k(k={k})", feedback="ef")
    tr = run(problem, build_method("diloco", **settings), steps, rng=0, record_every=1)
    want = _numpy_diloco(A, B, problem.x0, steps, H=H, lr=0.1, outer_lr=0.7, mu=0.9, k=k)
    assert tr.x.shape[-1] == problem.d
    np.testing.assert_allclose(tr.x[0], want[-1], rtol=0, atol=ROUNDING)
    gaps = problem.value(want) - problem.f_star
    np.testing.assert_allclose(tr.f_gap[0], gaps, rtol=0, atol=ROUNDING)
    # the run moved far beyond rounding (to its heterogeneity floor): the comparison is not vacuous
    assert gaps[-1] < 0.6 * gaps[0] and np.abs(want[-1] - want[0]).max() > 1.0


@pytest.mark.parametrize("k", [None, 3], ids=["uncompressed", "top3_ef"])
def test_the_numpy_loop_tells_the_outer_conventions_apart(k):
    # control: outer plain SGD instead of Nesterov (a plausible mistake of convention) is far from the run
    problem, A, B = _quadratics()
    settings = dict(H=6, lr=0.1, outer="nesterov", outer_lr=0.7, outer_momentum=0.9)
    if k is not None:
        settings.update(compressor=f"top_k(k={k})", feedback="ef")
    tr = run(problem, build_method("diloco", **settings), 120, rng=0)
    wrong = _numpy_diloco(A, B, problem.x0, 120, H=6, lr=0.1, outer_lr=0.7, mu=0.9, k=k, outer_nesterov=False)
    assert np.abs(tr.x[0] - wrong[-1]).max() > 1e-3
