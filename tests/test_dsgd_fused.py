"""The compiled whole-run path of run_dsgd (least squares on numba) against the per-step path (numpy backend)."""

import numpy as np
import pytest

from simcomm.backends import use
from simcomm.models import heterogeneous_least_squares
from simcomm.optim._decentralized import _fusable, messages_sent, run_dsgd

# The two paths differ only in the summation order of the gradient's dot products (BLAS against a
# plain loop) and of the measurements: a relative 1e-16 per operation, which a contracting run
# (every case here converges or is stopped at its divergence) keeps within 1e-11 of the trajectory's
# scale over a few hundred steps. Records are compared relative to their own scale plus 1e-12 of the
# start (the parallel run's consensus error is 0 up to rounding).
RTOL = 1e-11


def _close(a, b, scale):
    return np.all(np.abs(a - b) <= RTOL * (np.abs(a) + scale))


@pytest.mark.parametrize("topology", ["parallel", "exponential", "torus", "ring", "one_peer_exponential",
                                      "base_graph"])
@pytest.mark.parametrize("beta,sigma,every", [(0.0, 1.0, 1), (0.9, 0.5, 7), (0.0, 0.0, 3)])
def test_fused_run_equals_the_per_step_run(topology, beta, sigma, every):
    prob = heterogeneous_least_squares(12, 5, b=1.0, rng=3)
    kw = dict(steps=300, lr=0.05, beta=beta, sigma=sigma, seed=4, schedule="inv_sqrt", k0=5.0, record_every=every)
    ref = run_dsgd(prob, topology, backend="numpy", **kw)
    got = run_dsgd(prob, topology, backend="numba", **kw)
    with use("numba"):
        assert _fusable(prob, "stream", None)
    assert np.array_equal(ref.step, got.step) and ref.diverged_at.tolist() == got.diverged_at.tolist()
    assert set(ref.records) == set(got.records)
    for name in ref.records:
        scale = 1e-1 * np.abs(ref.records[name][0]) + 1e-12
        assert _close(ref.records[name], got.records[name], scale), name
    assert _close(ref.x, got.x, 1e-12)


def test_fused_run_stops_at_the_same_divergence():
    prob = heterogeneous_least_squares(8, 4, b=1.0, rng=0)
    kw = dict(steps=400, lr=50.0, sigma=1.0, seed=2)
    ref = run_dsgd(prob, "ring", backend="numpy", **kw)
    got = run_dsgd(prob, "ring", backend="numba", **kw)
    assert ref.diverged_at[0] > 0 and got.diverged_at.tolist() == ref.diverged_at.tolist()
    for name in ("consensus", "grad_norm_sq", "node_grad_norm_sq", "subopt"):
        k = ref.diverged_at[0]
        assert np.all(np.isinf(got.records[name][got.step >= k])), name
        assert np.array_equal(np.isfinite(ref.records[name]), np.isfinite(got.records[name])), name


def test_messages_sent_counts_the_layers_in_turn():
    per_layer = np.array([1.0, 1.0, 1.0, 2.0])
    steps = np.arange(0, 23)
    want = np.array([per_layer[np.arange(k) % 4].sum() for k in steps])
    assert np.array_equal(messages_sent(per_layer, steps), want)
