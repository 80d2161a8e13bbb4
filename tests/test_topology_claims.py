"""The exponential-graph experiments and theory.expgraph: small versions of the claims."""

import math

import numpy as np
import pytest

import theory.expgraph as th
from simcomm.experiments import get_experiment
from simcomm.topology import build, circulant_eigenvalues, mixing_matrix, rho


def _run(name, rng=12345, backend="numpy", **params):
    from simcomm.backends import get_backend

    exp = get_experiment(name)
    p = exp.validate(params, "test")
    rows = exp.func(p, np.random.default_rng(rng), get_backend(backend))
    return {r["metric"]: r["value"] for r in rows}


@pytest.mark.parametrize("name,n", [("ring", 9), ("exponential", 12), ("exponential", 13), ("torus", 12),
                                    ("torus", 16), ("hypercube", 16), ("star", 9), ("complete", 6)])
def test_theory_eigenvalues_match_simcomm(name, n):
    # theory computes the spectrum from closed forms (no simcomm import); compare as multisets
    want = np.sort_complex(np.round(th.eigenvalues(name, n), 10))
    W = mixing_matrix(build(name, n))
    got = np.sort_complex(np.round(np.linalg.eigvals(W), 10))
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert th.consensus_rate(name, n) == pytest.approx(rho(build(name, n)), abs=1e-12)


def test_torus_theory_eigenvalues_are_simcomm_circulant():
    lam = np.sort(circulant_eigenvalues(build("torus", 24)).real.ravel())
    np.testing.assert_allclose(lam, np.sort(th.eigenvalues("torus", 24).real), atol=1e-12)


def test_topology_spectrum_rows():
    out = _run("topology_spectrum", topology="exponential", n=64)
    assert out["rho"] == pytest.approx(th.rho_static_exponential_even(64), abs=1e-12)
    assert out["spectral_gap"] == pytest.approx(1 - out["rho"]) and out["max_degree"] == 6


def test_gap_slopes_on_the_spec_range():
    from scipy import stats

    ns = 4 ** np.arange(2, 9)
    for name in ("ring", "torus", "exponential"):
        gaps = [_run("topology_spectrum", topology=name, n=int(n))["spectral_gap"] for n in ns]
        slope = stats.linregress(np.log(ns), np.log(gaps)).slope
        assert abs(slope - th.gap_order_slope(name, 16, 65536)) < 0.1, (name, slope)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_one_peer_experiment(backend):
    out = _run("one_peer_deviation", backend=backend, n=64, order="random")
    assert out["phase_deviation"] == 0.0 and out["deviation"] < 1e-12
    out = _run("one_peer_deviation", backend=backend, n=24)
    assert out["deviation"] == pytest.approx(th.one_peer_deviation(24), abs=1e-12)
    # the kernel route (Frobenius, >= 2-norm) agrees with the FFT route from above
    assert out["phase_deviation"] >= out["deviation"] - 1e-12


def test_control_switches_build_the_mistaken_graphs():
    # tau_rule = floor (rho_even, rho_odd_strict): the same graph at n = 2^p, one hop short elsewhere
    for n in (16, 1024):
        assert _run("topology_spectrum", n=n, tau_rule="floor")["rho"] == _run("topology_spectrum", n=n)["rho"]
    bound = 1 - 2 / (1 + math.ceil(math.log2(12)))
    assert _run("topology_spectrum", n=12)["rho"] == pytest.approx(bound, abs=1e-12)
    assert _run("topology_spectrum", n=12, tau_rule="floor")["rho"] > bound + 0.1  # 0.727 against 0.6
    # first_hop = 2 (one_peer_exact): only even offsets, so a period leaves the odd modes untouched
    for order in ("increasing", "random"):
        out = _run("one_peer_deviation", n=16, order=order, first_hop=2)
        assert out["deviation"] == pytest.approx(1.0, abs=1e-12) and out["phase_deviation"] >= 1.0 - 1e-12


def test_one_peer_floor_is_attained_next_to_powers_of_two():
    for p in range(2, 14):
        n = 2**p - 1
        assert th.one_peer_deviation(n) == pytest.approx(2.0**-p, rel=1e-9)
        assert th.one_peer_deviation_floor(n) == pytest.approx(2.0**-p, rel=1e-12)


@pytest.mark.parametrize("name", ["ring", "exponential", "hypercube", "star"])
def test_consensus_rate_equals_rho(name):
    out = _run("gossip_consensus", backend="numba", topology=name, n=16, steps=600)
    assert out["rate"] == pytest.approx(th.consensus_rate(name, 16), rel=1e-9)


@pytest.mark.parametrize("name", ["ring", "exponential", "star"])
def test_lazy_mixing_is_the_wrong_weights_control(name):
    # (I + W)/2 contracts at max |1 + lambda|/2, which differs from rho(W) by > 1e-2 on these graphs
    out = _run("gossip_consensus", backend="numba", topology=name, n=16, steps=600, lazy=True)
    lam = th.eigenvalues(name, 16)[1:]
    assert out["rate"] == pytest.approx(float(np.abs((1 + lam) / 2).max()), rel=1e-9)
    assert abs(out["rate"] - th.consensus_rate(name, 16)) > 1e-2


def test_dsgd_bounds_are_formulas():
    from theory import dsgd

    assert dsgd.one_peer_consensus_budget(16, 0.5) == 2.0 and dsgd.one_peer_consensus_budget(64, 1.0) == 6.0
    rho = th.consensus_rate("ring", 16)
    assert dsgd.transient_bound_scaled(16, rho, 1.0, 1.0, 2.0) == 2 * th.transient_iterations(16, rho, 1.0, 1.0)
    assert dsgd.parallel_ratio_limit() == 1.0
    assert th.one_peer_deviation_pow2(12) == 0.0 < th.one_peer_deviation(12)  # the control's prediction fails


def test_noisy_consensus_matches_c6():
    # R independent replicates, each a time average; compare their mean with C6. The standard error is
    # ESTIMATED from the R replicates, so the multiplier is the Student-t quantile with R - 1 degrees of
    # freedom at two-sided level 1e-6 (7.07 for R = 20; N_SIGMA = 5 would be a z multiplier, and with an
    # estimated SE P(|t_{R-1}| > 5) is 4e-3 at R = 6). The time averages are close to Gaussian (sums of
    # 3000 autocorrelated steps); burn-in bias rho^2000 ~ 1e-45 is negligible.
    from scipy import stats

    R = 20
    vals = [_run("noisy_consensus", rng=12345 + r, backend="numba", topology="ring", n=16, d=8,
                 burn_in=1000, steps=3000)["consensus_error"] for r in range(R)]
    want = th.noisy_consensus_error(0.1, 1.0, 8, "ring", 16)
    se = np.std(vals, ddof=1) / math.sqrt(R)
    assert abs(np.mean(vals) - want) <= stats.t.ppf(1 - 1e-6 / 2, R - 1) * se


def test_theory_values_of_the_notes():
    # papers C6 reference values: ring 0.0147 and static exponential 0.00181 (n = 16, lr 0.1, d = 1)
    assert th.noisy_consensus_error(0.1, 1.0, 1, "ring", 16) == pytest.approx(0.0147, abs=1e-4)
    assert th.noisy_consensus_error(0.1, 1.0, 1, "exponential", 32) == pytest.approx(0.00185, abs=1e-5)
    assert th.transient_iterations(8, 0.5, 1.0) == 8**3 * 0.5**4 / 0.25
    assert th.transient_iterations(8, 1.0, 1.0) == math.inf
    assert [th.ceil_log2(n) for n in (2, 3, 4, 5, 2**40, 2**40 + 1)] == [1, 2, 2, 3, 40, 41]


def test_theory_raises_outside_its_statement():
    with pytest.raises(ValueError):
        th.rho_static_exponential_even(7)
    with pytest.raises(ValueError):
        th.one_peer_deviation_floor(16)


def test_bounds_carry_provenance():
    for fn in (th.rho_bound_static_exponential, th.rho_static_exponential_even, th.one_peer_deviation_pow2,
               th.one_peer_deviation, th.one_peer_deviation_floor, th.gap_order_slope, th.gap_order, th.consensus_rate,
               th.noisy_consensus_error, th.transient_iterations):
        assert fn.info.paper == "expgraph" and fn.info.provenance and fn.info.statement


def test_specs_load():
    from simcomm.spec import find_specs, load

    paths = {p.name: p for p in find_specs()}
    for cid in ("rho_even", "rho_odd_strict", "one_peer_exact", "one_peer_inexact", "gap_scaling",
                "consensus_rate", "noisy_consensus"):
        for quick in (True, False):
            assert load(paths[f"expgraph_{cid}.toml"], quick=quick).claim.id == f"expgraph.{cid}"
