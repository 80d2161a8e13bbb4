"""SparseLoCo and DeMo as compositions: decayed error feedback, their definitions written out, from a spec.

Tolerance: as in tests/test_local_updates.py, sums formed in another order differ by a few ulps of the
iterate (<= 10 here) over a few hundred steps of a contraction: 1e-12 absolute is rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft

from simcomm._errors import UserError
from simcomm.compress import DCTTopK, ErrorFeedback, TopK, TopKQuant
from simcomm.models import quadratic
from simcomm.optim import (
    aggregate,
    build_method,
    chain,
    decayed_feedback,
    descend,
    error_feedback,
    local_gradients,
    run,
    scale_by_lr,
)

PROBLEM = quadratic(4, 16, L=1.0, mu=0.2, sigma2=1.0, rng=0)
ROUNDING = 1e-12


def test_decay_one_is_error_feedback_and_the_identity_keeps_nothing():
    C = TopK(3)
    a = run(PROBLEM, descend(chain(local_gradients(), decayed_feedback(C, 1.0), aggregate(), scale_by_lr(0.1))), 60,
            rng=0)
    b = run(PROBLEM, descend(chain(local_gradients(), error_feedback(ErrorFeedback(C)), aggregate(), scale_by_lr(0.1))),
            60, rng=0)
    assert np.array_equal(a.x, b.x)
    full = run(PROBLEM, build_method("compressed_gd", compressor="none", lr=0.1), 60, rng=0)
    c = run(PROBLEM, descend(chain(local_gradients(), decayed_feedback(TopKQuant(k=0, bits_per_value=16), 0.0),
                                   aggregate(), scale_by_lr(0.1))), 60, rng=0)
    assert np.abs(c.x - full.x).max() < 1e-3  # 16-bit values: close, not equal
    with pytest.raises(UserError, match="feedback decay"):
        decayed_feedback(C, 1.5)


def _naive_sparseloco(problem, steps, *, H, lr, outer_lr, k, bits, beta):
    n, d = problem.n, problem.d
    x = problem.x0.astype(float).copy()
    X = np.tile(x, (n, 1))
    e = np.zeros((n, d))
    levels = 2 ** (bits - 1) - 1
    for s in range(1, steps + 1):
        X = X - lr * problem.grad(X, np.arange(n))
        if s % H == 0:
            p = beta * e + (x[None, :] - X)
            sent = np.zeros_like(p)
            for i in range(n):
                top = sorted(range(d), key=lambda j: (-abs(p[i, j]), j))[:k]
                step = np.abs(p[i, top]).max() / levels
                lev = np.rint(np.abs(p[i, top]) / step)
                sent[i, top] = np.where(p[i, top] < 0, -1.0, 1.0) * lev * step
            e = p - sent
            x = x - outer_lr * sent.mean(axis=0)
            X = np.tile(x, (n, 1))
    return x


def test_sparseloco_is_its_definition():
    tr = run(PROBLEM, build_method("sparseloco", H=5, lr=0.1, outer_lr=0.9, k=4, value_bits=2, ef_beta=0.8), 80,
             rng=0)
    want = _naive_sparseloco(PROBLEM, 80, H=5, lr=0.1, outer_lr=0.9, k=4, bits=2, beta=0.8)
    assert np.abs(tr.x[0] - want).max() <= ROUNDING
    # 16 rounds of n = 4 messages of 32 + 4 (4 + 2) bits
    assert tr.bits[-1] == 16 * 4 * (32 + 4 * 6)


def test_sparseloco_with_the_identity_and_no_memory_is_diloco_with_outer_sgd():
    a = run(PROBLEM, build_method("sparseloco", H=4, lr=0.1, outer_lr=0.7, ef_beta=0.0, compressor="none"), 40, rng=0)
    b = run(PROBLEM, build_method("diloco", H=4, lr=0.1, outer="sgd", outer_lr=0.7), 40, rng=0)
    assert np.abs(a.x - b.x).max() <= ROUNDING


def _naive_demo(problem, steps, *, lr, beta, k, chunk, sign):
    n, d = problem.n, problem.d
    x = problem.x0.astype(float).copy()
    m = np.zeros((n, d))
    for _ in range(steps):
        m = beta * m + problem.grad(np.tile(x, (n, 1)), np.arange(n))
        q = np.zeros_like(m)
        for i in range(n):
            for s in range(0, d, chunk):
                c = scipy.fft.dct(m[i, s:s + chunk], norm="ortho")
                top = sorted(range(c.size), key=lambda j: (-abs(c[j]), j))[:k]
                kept = np.zeros_like(c)
                kept[top] = c[top].astype(np.float32)
                q[i, s:s + chunk] = scipy.fft.idct(kept, norm="ortho")
        m = m - q
        g = q.mean(axis=0)
        x = x - lr * (np.sign(g) if sign else g)
    return x


@pytest.mark.parametrize("sign", [False, True])
def test_demo_is_its_definition(sign):
    lr = 0.01 if sign else 0.1
    tr = run(PROBLEM, build_method("demo", lr=lr, beta=0.8, k=2, chunk=8, sign=sign), 50, rng=0)
    want = _naive_demo(PROBLEM, 50, lr=lr, beta=0.8, k=2, chunk=8, sign=sign)
    assert np.abs(tr.x[0] - want).max() <= ROUNDING
    assert tr.bits[-1] == 50 * 4 * 2 * 2 * (32 + 3)


def test_dct_top_k_keeps_everything_at_k_equal_chunk_and_its_error_is_the_dropped_energy():
    v = np.random.default_rng(1).standard_normal((3, 20))
    np.testing.assert_allclose(DCTTopK(k=8, chunk=8).apply(v), v, atol=1e-6)  # float32 coefficients
    c = DCTTopK(k=2, chunk=8)
    coef = np.concatenate([scipy.fft.dct(v[:, s:s + 8], norm="ortho", axis=-1) for s in (0, 8, 16)], axis=-1)
    sizes = [8, 8, 4]
    dropped = 0.0
    start = 0
    for size in sizes:
        part = np.sort(coef[:, start:start + size] ** 2, axis=-1)
        dropped = dropped + part[:, :size - 2].sum(axis=-1)
        start += size
    np.testing.assert_allclose(c.variance(v), dropped, rtol=1e-6)
    assert (c.variance(v) <= c.error_factor(20) * (v * v).sum(axis=-1)).all()


@pytest.mark.parametrize("spec_name", ["sparseloco_demo", "demo_chunks"])
def test_runs_from_a_spec(spec_name):
    from pathlib import Path

    from simcomm.runner import run as run_spec
    from simcomm.spec import load

    spec = load(Path(__file__).parents[1] / "sims" / "extra" / f"{spec_name}.toml", quick=True)
    table = run_spec(spec).table
    gaps = table[table["metric"] == "f_gap"]
    assert len(gaps) and np.isfinite(gaps["value"]).all()


def test_the_local_updates_page_runs():
    import doctest
    from pathlib import Path

    res = doctest.testfile(str(Path(__file__).resolve().parents[1] / "docs" / "local.md"), module_relative=False,
                           optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted >= 8
