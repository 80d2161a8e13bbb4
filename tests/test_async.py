"""Synchronous / asynchronous compressed GD: ring buffer against a full-history oracle, divergence, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import use
from simcomm.compress import QSGD, Bernoulli, Identity, Ternary
from simcomm.models import logistic, nonconvex, quadratic, ridge
from simcomm.optim import async_compressed_gd, compressed_gd, largest_stable_step
from tests.naive_quantize import async_naive


@pytest.mark.parametrize("delay", ["constant", "uniform", "adversarial"])
@pytest.mark.parametrize("tau", [0, 1, 3, 7])
def test_ring_buffer_matches_full_history_oracle(delay, tau):
    p = quadratic(3, 6, L=1.0, mu=0.2, sigma2=0.5, rotate=True, rng=12345)
    q = QSGD(2)
    steps = 25
    tr = async_compressed_gd(p, q, lr=0.3, steps=steps, tau=tau, delay=delay, rng=np.random.default_rng(12345),
                             backend="numpy")
    hist = async_naive(p, q, 0.3, steps, tau, delay, np.random.default_rng(12345))
    want = ((hist - p.x_star) ** 2).sum(axis=1)
    np.testing.assert_allclose(tr.dist2[0], want, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(tr.x[0], hist[-1], rtol=1e-10, atol=1e-14)


def test_tau_zero_equals_synchronous():
    p = quadratic(4, 5, L=1.0, mu=0.5, sigma2=1.0, rng=12345)
    q = Bernoulli(0.5)
    a = async_compressed_gd(p, q, lr=0.2, steps=30, tau=0, rng=7, backend="numpy")
    s = compressed_gd(p, q, lr=0.2, steps=30, rng=7, backend="numpy")
    np.testing.assert_allclose(a.x, s.x, rtol=1e-12)


def test_exact_delay_threshold_on_identity_hessian():
    """x_{k+1} - x* = (x_k - x*) - lr (x_{k-tau} - x*): stable iff lr < 2 sin(pi / (2 (2 tau + 1))).

    Closed form: the roots of z^{tau+1} - z^tau + lr = 0 leave the unit circle at that lr.
    """
    p = quadratic(1, 3, L=1.0, mu=1.0, rng=12345)
    for tau in (1, 2, 4):
        g_star = 2 * math.sin(math.pi / (2 * (2 * tau + 1)))
        below = async_compressed_gd(p, Identity(), lr=0.95 * g_star, steps=3000, tau=tau, record_every=100)
        above = async_compressed_gd(p, Identity(), lr=1.05 * g_star, steps=3000, tau=tau, record_every=100)
        assert below.diverged_at[0] == -1 and below.dist2[0, -1] < below.dist2[0, 0]
        assert above.diverged_at[0] > 0


def test_divergence_recorded_not_raised():
    p = quadratic(2, 4, L=1.0, mu=0.5, rng=12345)
    tr = async_compressed_gd(p, QSGD(1), lr=50.0, steps=200, tau=4, replicates=3, rng=1)
    assert (tr.diverged_at > 0).all()
    assert tr.notes()[0].startswith("diverged at step ")
    assert np.isfinite(tr.x).all()  # frozen at x0
    assert np.isinf(tr.dist2[:, -1]).all()


def test_replicates_are_independent_and_vectorised():
    p = quadratic(4, 8, L=1.0, mu=0.2, sigma2=1.0, rng=12345)
    tr = async_compressed_gd(p, Ternary(), lr=0.2, steps=50, tau=2, delay="uniform", replicates=5, rng=3)
    assert tr.dist2.shape == (5, 51)
    assert len(np.unique(tr.x[:, 0])) == 5


def test_largest_stable_step_bisection():
    assert largest_stable_step(lambda g: g < 0.123, 1.0, 2.0, iters=40) == pytest.approx(0.123, rel=1e-6)


def test_stop_gap_truncates_trace():
    p = quadratic(1, 5, L=1.0, mu=0.5, rng=12345)
    tr = compressed_gd(p, Identity(), lr=1.0, steps=1000, stop_gap=1e-6)
    assert tr.step[-1] < 1000 and tr.f_gap[0, -1] <= 1e-6 < tr.f_gap[0, -2]


def test_problems_constants():
    r = ridge(3, 8, L=2.0, mu=0.1, rng=12345)
    H = np.stack([r.grad(np.eye(8)[j : j + 1], np.array([0]))[0] - r.grad(np.zeros((1, 8)), np.array([0]))[0]
                  for j in range(8)])
    ev = np.linalg.eigvalsh((H + H.T) / 2)
    assert ev[0] == pytest.approx(0.1) and ev[-1] == pytest.approx(2.0)
    lg = logistic(4, dataset="digits")
    assert np.linalg.norm(lg.full_grad(lg.x_star)) < 1e-9 and lg.mu == 0.01
    nc = nonconvex(3, 10, L=1.0, spread=0.5, rng=12345)
    assert np.abs(nc.full_grad(nc.x_star)).max() < 1e-9


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda p: async_compressed_gd(p, Identity(), lr=0.1, steps=10, tau=-1), "tau >= 0"),
        (lambda p: async_compressed_gd(p, Identity(), lr=0.0, steps=10, tau=1), "lr must be a finite number > 0"),
        (lambda p: async_compressed_gd(p, Identity(), lr=-1.0, steps=10, tau=1), "lr must be a finite number > 0"),
        (lambda p: async_compressed_gd(p, Identity(), lr=0.1, steps=10, tau=1, delay="constnat"),
         "did you mean 'constant'"),
        (lambda p: compressed_gd(p, Identity(), lr=0.1, steps=10, mode="all"), "workers"),
    ],
)
def test_bad_input(call, match):
    p = quadratic(2, 3, rng=0)
    with pytest.raises(UserError, match=match) as exc:
        call(p)
    assert "\n" not in str(exc.value)


# ------------------------------------------------------------------ workers on their own clocks (issue 18)
def test_clock_equal_workers_give_round_robin_delays():
    """Constant equal compute times: arrivals are round robin and, after the first round, tau = n - 1."""
    from simcomm.network import Clock, Straggler
    from simcomm.optim import clock_schedules

    n, steps = 5, 40
    W, T = clock_schedules(Clock(Straggler("constant", 1e-3), up=1e-4, down=2e-4), n, steps, 2,
                           np.random.default_rng(0))
    np.testing.assert_array_equal(W, np.tile(np.arange(steps) % n, (2, 1)))
    np.testing.assert_array_equal(T[:, :n], np.tile(np.arange(n), (2, 1)))  # first round: reads x_0
    assert np.all(T[:, n:] == n - 1)


def test_clock_straggler_has_the_larger_delay():
    r"""A deterministic straggler (compute s times slower, s integer) among n - 1 equal workers.

    Between the straggler's read and write, the n - 1 fast workers make s updates each, so its
    tau = (n - 1) s exactly (its arrivals tie with theirs and come after them: it is the last worker).
    A fast worker's cycle holds the n - 2 other fast updates plus the straggler's in 1 of every s cycles,
    so its mean tau is n - 2 + 1/s, exactly over whole straggler periods. Over all updates the mean tau is
    (n - 1) - (1/U) sum_i (U - 1 - last position of worker i): each update of worker j falls in exactly
    one cycle of every other worker that is still running, an identity checked exactly below.
    """
    from simcomm.network import Clock, Straggler
    from simcomm.optim import clock_schedules

    n, s = 4, 3
    clock = Clock(Straggler("constant", 1.0), slowdown=(1.0,) * (n - 1) + (float(s),))
    W, T = clock_schedules(clock, n, 600, 1, np.random.default_rng(0))
    w, tau = W[0], T[0]
    slow = tau[w == n - 1]
    assert np.all(slow == (n - 1) * s)  # the first one too: it read x_0, the fast ones wrote s times each
    period = (n - 1) * s + 1  # updates per straggler period
    fast = tau[period:period * 50][w[period:period * 50] < n - 1]  # 49 whole periods after the first
    assert fast.mean() == pytest.approx(n - 2 + 1 / s, rel=1e-12)
    assert slow.mean() > fast.mean()
    U = w.size
    last = np.array([np.flatnonzero(w == i)[-1] for i in range(n)])
    assert tau.sum() == (n - 1) * U - (U - 1 - last).sum()


def test_clock_random_stragglers_mean_delay():
    """i.i.d. shifted-exponential compute times: the same counting identity gives mean tau -> n - 1."""
    from simcomm.network import Clock, Straggler
    from simcomm.optim import clock_schedules

    n, U = 6, 3000
    W, T = clock_schedules(Clock(Straggler("shifted_exp", 1e-3, 1e-3)), n, U, 3, np.random.default_rng(1))
    for w, tau in zip(W, T):
        last = np.array([np.flatnonzero(w == i)[-1] for i in range(n)])
        assert tau.sum() == (n - 1) * U - (U - 1 - last).sum()
        assert tau.max() > n - 1 > tau.min()  # random order: some updates are staler than round robin


def _clocked_oracle(p, q, lr, steps, worker, tau, rng):
    """Full history, one worker per server update: x_{k+1} = x_k - lr/n Q(grad f_w(x_{k - tau_k}))."""
    hist = [p.x0.copy()]
    for k in range(steps):
        g = p.grad(hist[k - tau[k]][None, :], np.array([worker[k]]))
        hist.append(hist[k] - lr / p.n * use("numpy")(q.apply)(g, rng=rng)[0])
    return np.array(hist)


def test_clocked_optimiser_matches_full_history_oracle():
    from simcomm.network import Clock, Straggler
    from simcomm.optim import clock_schedules

    p = quadratic(4, 6, L=1.0, mu=0.2, sigma2=0.5, rotate=True, rng=12345)
    q = QSGD(2)
    clock = Clock(Straggler("shifted_exp", 1e-3, 2e-3), up=1e-4)
    tr = async_compressed_gd(p, q, lr=0.5, steps=60, clock=clock, rng=np.random.default_rng(9), backend="numpy")
    rng = np.random.default_rng(9)
    W, T = clock_schedules(clock, p.n, 60, 1, rng)
    hist = _clocked_oracle(p, q, 0.5, 60, W[0], T[0], rng)
    np.testing.assert_allclose(tr.dist2[0], ((hist - p.x_star) ** 2).sum(axis=1), rtol=1e-10, atol=1e-14)
    assert T[0].max() > p.n - 1  # the schedule really had stale updates beyond round robin
    assert tr.bits[-1] == 60 * q.bits(p.d)  # one worker's message per server update


def test_clock_bad_input():
    from simcomm.network import Clock, Straggler

    p = quadratic(2, 3, rng=0)
    clock = Clock(Straggler("constant", 1.0))
    with pytest.raises(UserError, match="drop tau and delay"):
        async_compressed_gd(p, Identity(), lr=0.1, steps=5, tau=2, clock=clock)
    with pytest.raises(UserError, match="give the delay bound tau"):
        async_compressed_gd(p, Identity(), lr=0.1, steps=5)
    with pytest.raises(UserError, match="not a simcomm.network.Clock"):
        async_compressed_gd(p, Identity(), lr=0.1, steps=5, clock="fast")
    with pytest.raises(UserError, match="one factor per worker"):
        async_compressed_gd(p, Identity(), lr=0.1, steps=5,
                            clock=Clock(Straggler("constant", 1.0), slowdown=(1.0, 2.0, 3.0)))
    with pytest.raises(UserError, match="slowdown"):
        Clock(Straggler("constant", 1.0), slowdown=(1.0, 0.0))
    with pytest.raises(UserError, match="arrival order is undefined"):
        Clock(Straggler("constant", 0.0))
