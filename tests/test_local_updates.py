"""Local-update methods (local SGD, DiLoCo, Streaming DiLoCo): identities and a plain numpy loop of the definition.

Tolerances: the compositions compute the pseudo-gradient x - x_i and step x + (-lr * mean), a naive loop or
another method may form the same quantity in another order; each such reordering changes a coordinate by
a few ulps of the iterate's magnitude (here <= 10), so 1e-12 absolute over at most a few hundred steps of
a contraction is rounding, not a difference of method (a wrong step or a sign differs by orders more).
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm._errors import UserError
from simcomm.compress import Identity
from simcomm.models import quadratic
from simcomm.optim import build_method, compressed_gd, run
from simcomm.optim._local import sync_offsets

PROBLEM = quadratic(4, 10, L=1.0, mu=0.2, sigma2=1.0, rng=0)
ROUNDING = 1e-12


def _naive_diloco(problem, steps, *, H, lr, outer_lr, mu, k=None):
    """Full-gradient DiLoCo written out: H inner SGD steps per worker, Nesterov outer step (torch convention).

    ``k``: top-k of every worker's pseudo-gradient with error feedback (its residual kept per worker).
    """
    n, d = problem.n, problem.d
    x = problem.x0.astype(float).copy()
    X = np.tile(x, (n, 1))
    buf = None
    e = np.zeros((n, d))
    gaps = [problem.value(x[None])[0] - problem.f_star]
    for s in range(1, steps + 1):
        X = X - lr * problem.grad(X, np.arange(n))
        if s % H == 0:
            delta = x[None, :] - X
            if k is not None:
                p = delta + e
                sent = np.zeros_like(p)
                for i in range(n):
                    top = np.argsort(-np.abs(p[i]), kind="stable")[:k]
                    sent[i, top] = p[i, top]
                e = p - sent
                delta = sent
            g = delta.mean(axis=0)
            buf = g if buf is None else mu * buf + g
            x = x - outer_lr * (g + mu * buf)
            X = np.tile(x, (n, 1))
        gaps.append(problem.value(x[None])[0] - problem.f_star)
    return x, np.array(gaps)


@pytest.mark.parametrize("k", [None, 3])
def test_diloco_is_its_definition(k):
    settings = dict(H=5, lr=0.1, outer="nesterov", outer_lr=0.7, outer_momentum=0.9)
    if k is not None:
        settings.update(compressor=f"top_k(k={k})", feedback="ef")
    tr = run(PROBLEM, build_method("diloco", **settings), 60, rng=0)
    x, gaps = _naive_diloco(PROBLEM, 60, H=5, lr=0.1, outer_lr=0.7, mu=0.9, k=k)
    assert np.abs(tr.x[0] - x).max() <= ROUNDING
    assert np.allclose(tr.f_gap[0], gaps, rtol=0, atol=ROUNDING)


def test_one_inner_step_and_outer_sgd_of_one_is_parallel_sgd():
    a = run(PROBLEM, build_method("diloco", H=1, lr=0.1, outer="sgd", outer_lr=1.0), 80, rng=0)
    b = compressed_gd(PROBLEM, Identity(), lr=0.1, steps=80, rng=0)
    assert np.abs(a.x - b.x).max() <= ROUNDING


def test_outer_sgd_of_one_is_fedavg():
    a = run(PROBLEM, build_method("diloco", H=4, lr=0.1, outer="sgd", outer_lr=1.0), 40, rng=0)
    b = run(PROBLEM, build_method("local_sgd", H=4, lr=0.1), 40, rng=0)
    assert np.array_equal(a.x, b.x)  # the same chain
    # and FedAvg's server model is the workers' average (to rounding)
    n = PROBLEM.n
    X = np.tile(PROBLEM.x0, (n, 1)).astype(float)
    for _ in range(10):
        for _ in range(4):
            X = X - 0.1 * PROBLEM.grad(X, np.arange(n))
        X = np.tile(X.mean(axis=0), (n, 1))
    assert np.abs(a.x[0] - X[0]).max() <= ROUNDING


def test_streaming_with_one_fragment_and_no_overlap_is_diloco():
    s = dict(H=6, lr=0.1, outer_lr=0.5, outer_momentum=0.8, compressor="top_k(k=4)", feedback="ef21")
    a = run(PROBLEM, build_method("streaming_diloco", fragments=1, overlap=0, alpha=0.0, **s), 50, rng=3)
    b = run(PROBLEM, build_method("diloco", **s), 50, rng=3)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.f_gap, b.f_gap)


def test_identity_compressor_is_the_uncompressed_method():
    a = run(PROBLEM, build_method("diloco", H=3, lr=0.1, compressor="none", feedback="ef"), 30, rng=0)
    b = run(PROBLEM, build_method("diloco", H=3, lr=0.1), 30, rng=0)
    assert np.array_equal(a.x, b.x)


def test_fragments_synchronise_in_turn_and_count_their_bits():
    assert sync_offsets(8, 4).tolist() == [2, 4, 6, 8]
    m = build_method("streaming_diloco", H=8, lr=0.1, fragments=4, overlap=2)
    tr = run(PROBLEM, m, 16, rng=0)
    # fragments of 3, 3, 2, 2 coordinates (d = 10), each synchronised twice in 16 steps, n = 4 workers
    assert tr.bits[-1] == 2 * 4 * 32 * 10
    assert tr.bits[tr.step.tolist().index(2)] == 4 * 32 * 3
    assert np.isfinite(tr.f_gap).all() and tr.f_gap[0, -1] < tr.f_gap[0, 0]


def test_overlap_delays_the_merge():
    # with a merge two steps late the workers keep their own models in between: a different run, same bits
    a = run(PROBLEM, build_method("streaming_diloco", H=4, lr=0.1, fragments=1, overlap=0, alpha=0.0), 20, rng=0)
    b = run(PROBLEM, build_method("streaming_diloco", H=4, lr=0.1, fragments=1, overlap=2, alpha=0.0), 20, rng=0)
    assert not np.array_equal(a.x, b.x) and np.array_equal(a.bits, b.bits)


@pytest.mark.parametrize("bad, match", [
    (dict(H=4, fragments=5), "fragments = 5"),
    (dict(H=4, overlap=4), "overlap = 4"),
    (dict(H=4, outer="sgd", outer_momentum=0.5), "outer_momentum applies"),
])
def test_settings_that_do_not_fit_are_one_line(bad, match):
    with pytest.raises(UserError, match=match):
        build_method("diloco", lr=0.1, **bad)
