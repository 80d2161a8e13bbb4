"""Small versions of the compress.* rate and fp16 underflow claims, and the derivations behind their bounds."""

import numpy as np
import pytest

from simcomm.experiments.compressors import feedback_scaling_rate, fp16_allreduce
from theory.compress import (
    cgd_minus_ef_rate,
    cgd_optimal_step,
    cgd_scaling_rate,
    ef_optimal_rate,
    ef_optimal_step,
    ef_reset_rate,
    fp16_divide_first_underflows,
)
from theory.compress import feedback_scaling_rate as theory_rate

BASE = dict(method="ef", step="ef_optimal", lr=0.0, mu=0.1, L=1.0, delta=0.5, n_scalings=41, reset_every=0,
            ignore_reset=False, steps=120)


def _rate(**kw):
    return feedback_scaling_rate(dict(BASE, **kw), None, None)[0]["value"]


def test_the_stated_steps_are_the_issues_numbers():
    # issue 27: for mu = 0.1, L = 1, delta = 0.5 the steps are 0.311951 and 1.065066
    assert ef_optimal_step(1.0, 0.1, 0.5) == pytest.approx(0.311951, abs=5e-7)
    assert cgd_optimal_step(1.0, 0.1, 0.5) == pytest.approx(1.065066, abs=5e-7)


@pytest.mark.parametrize("mu, delta", [(0.01, 0.25), (0.1, 0.5), (0.5, 0.9)])
def test_eta_ef_minimises_the_worst_fixed_scaling_rate(mu, delta):
    # the [N] derivation: the stated step balances the stretch at both ends of the spectrum, so it is the
    # minimiser of the worst rate over the class (checked on a grid of steps 0.2% apart around it)
    eta = ef_optimal_step(1.0, mu, delta)
    best = theory_rate(1.0, mu, delta, eta)
    assert best == pytest.approx(ef_optimal_rate(1.0, mu, delta), rel=1e-14)
    for f in (0.98, 0.99, 0.998, 1.002, 1.01, 1.02):
        assert theory_rate(1.0, mu, delta, f * eta) > best


def test_ef_and_ef21_measure_the_closed_form_and_cgd_the_gap():
    r_ef, r_21 = _rate(method="ef"), _rate(method="ef21")
    assert r_ef == pytest.approx(ef_optimal_rate(1.0, 0.1, 0.5), abs=1e-12) and r_21 == pytest.approx(r_ef, abs=1e-12)
    rows = feedback_scaling_rate(dict(BASE, method="cgd", step="cgd_optimal"), None, None)
    gap = next(r["value"] for r in rows if r["metric"] == "rate_gap")
    assert gap == pytest.approx(cgd_minus_ef_rate(1.0, 0.1, 0.5), abs=1e-12) and gap < 0
    assert rows[0]["value"] == pytest.approx(cgd_scaling_rate(1.0, 0.1, 0.5, cgd_optimal_step(1.0, 0.1, 0.5)))
    # EF run at compressed GD's step diverges: the memory makes the larger step unstable
    assert _rate(method="ef", step="cgd_optimal") > 1.5


def test_memory_reset_loses_the_rate_and_recovers_with_a_long_period():
    rho = ef_optimal_rate(1.0, 0.1, 0.5)
    rates = {R: _rate(reset_every=R) for R in (1, 2, 5, 20, 100)}
    for R, r in rates.items():
        assert r == pytest.approx(ef_reset_rate(1.0, 0.1, 0.5, R), abs=1e-12)
    assert rates[1] == pytest.approx(cgd_scaling_rate(1.0, 0.1, 0.5, ef_optimal_step(1.0, 0.1, 0.5)), abs=1e-12)
    assert rates[1] > rates[2] > rates[5] > rates[20] > rho  # the loss shrinks with the period
    assert abs(rates[100] - rho) < 1e-3
    assert _rate(reset_every=5, ignore_reset=True) == pytest.approx(rho, abs=1e-12)  # the control's switch


@pytest.mark.parametrize("n, s", [(8, 1e-6), (64, 1e-6), (1024, 1e-5), (1024, 1e-4)])
def test_fp16_divide_first_underflow_matches_the_threshold(n, s):
    rows = {r["metric"]: r["value"] for r in fp16_allreduce(dict(n=n, s=s, order="divide_first", d=100), None, None)}
    assert rows["underflowed"] == fp16_divide_first_underflows(n, s)
    summed = {r["metric"]: r["value"] for r in fp16_allreduce(dict(n=n, s=s, order="sum_first", d=100), None, None)}
    assert summed["underflowed"] == 0.0 and np.isfinite(summed["avg_max"])


def test_coin_rounding_is_natural_compression_with_a_fair_coin():
    # compress.natural_variance's negative control: the same two powers of two, up with probability
    # 1/2 wherever |v_i| lies. Off, the row is the registered compressor's; on, values next to a power
    # of two err by about v_i^2/2 and the mean is biased upwards
    from simcomm.experiments import get_experiment
    from simcomm.experiments.compressors import _coin_natural

    V = np.array([[1.0, -1.01, 3.0, 0.0]] * 4000)
    Q = _coin_natural(V, np.random.default_rng(0))
    assert set(np.unique(np.abs(Q[:, 1]))) == {1.0, 2.0} and np.all(Q[:, 3] == 0.0)
    np.testing.assert_array_equal(np.sign(Q), np.sign(V))
    assert np.mean(Q[:, 0]) == pytest.approx(1.5, abs=0.03)  # unbiased rounding would keep 1.0 exactly
    exp = get_experiment("compressor_error")
    rows = [exp.func(exp.validate(dict(compressor="natural", d=200, draws=50, **kw), "test"),
                     np.random.default_rng(7), None) for kw in ({}, {"coin_rounding": False}, {"coin_rounding": True})]
    assert rows[0] == rows[1]
    assert rows[2][1]["value"] > 0.125 > rows[0][1]["value"]
    with pytest.raises(ValueError, match="coin_rounding"):
        exp.validate(dict(compressor="top_k(k=2)", coin_rounding=True), "test")
