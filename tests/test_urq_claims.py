"""The URQ / delay / IAG experiments against theory.urq: duplicated constants, unused-bound references, CRN."""

import math

import numpy as np
import pytest

import theory.urq as th
from simcomm.compress import StochasticRound, compressor_from_name
from simcomm.experiments import get_experiment

# (name, simcomm parameter, theory keyword arguments)
QUANTIZERS = [
    ("none", None, {}),
    ("qsgd", 1, dict(s=1)),
    ("qsgd", 4, dict(s=4)),
    ("qsgd", 64, dict(s=64)),
    ("ternary", None, {}),
    ("bernoulli", 0.25, dict(p=0.25)),
    ("bernoulli", 0.9, dict(p=0.9)),
    ("rand_k", 1, dict(k=1)),
    ("rand_k", 7, dict(k=7)),
]
DIMS = [7, 31, 50, 100, 1000]


def _run(name, rng=12345, **params):
    from simcomm.backends import get_backend

    exp = get_experiment(name)
    p = exp.validate(params, "test")
    return exp.func(p, np.random.default_rng(rng), get_backend("numpy"))


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("name,param,kw", QUANTIZERS)
def test_theory_constants_equal_simcomm_quantizer(name, param, kw, d):
    # theory.urq duplicates the quantizers' beta/alpha/bits (theory never imports simcomm): keep them equal
    if name == "rand_k" and kw["k"] > d:
        pytest.skip("k > d")
    q = compressor_from_name(name, **kw)
    assert th.beta(name, d, **kw) == pytest.approx(q.beta(d), rel=1e-15, abs=0)
    assert th.alpha(name, d, **kw) == pytest.approx(q.alpha(d), rel=1e-15, abs=0)
    assert th.message_bits(name, d, **kw) == pytest.approx(q.bits(d), rel=1e-15, abs=0)


def test_stochastic_round_has_no_relative_bound_in_both():
    q = StochasticRound(0.3)
    assert th.beta("stochastic_round", 10) == q.beta(10) == math.inf


@pytest.mark.parametrize("name,param,kw", [t for t in QUANTIZERS if t[0] != "none"])
def test_closed_form_variance_below_variance_factor(name, param, kw):
    # theory.urq.variance_factor (B3 upper bound) against each quantizer's exact E||Q(v)-v||^2 / ||v||^2
    # on vectors of every kind, including the worst cases (equal magnitudes, one spike): exact arithmetic,
    # so only float rounding (1e-12 relative) is allowed
    g = np.random.default_rng(12345)
    d = 100
    vecs = [g.standard_normal(d), g.standard_t(1.5, d), np.where(g.random(d) < 0.5, -1.0, 1.0), np.eye(d)[3],
            np.r_[g.standard_normal(10), np.zeros(d - 10)]]
    q = compressor_from_name(name, **kw)
    for v in vecs:
        var = q.variance(v)
        if var is None:
            pytest.skip(f"{name} has no closed-form variance")
        assert var / float(v @ v) <= th.variance_factor(name, d, **kw) * (1 + 1e-12)


def test_bits_to_eps_prediction_ranks_the_spec_lower_first():
    # urq.bits_to_eps is an order claim: its predicted ranking is theory.urq.bits_to_eps (K(eps) b(Q))
    from simcomm.models import make_problem
    from simcomm.spec import find_specs, load

    path = next(p for p in find_specs() if p.name == "urq_bits_to_eps.toml")
    spec = load(path, quick=False)
    c, prm = spec.claim, {**spec.params}
    kw = dict(s=prm["s"], p=prm["p"])
    for problem in spec.grid["problem"]:
        p = make_problem(problem, n=1, d=prm["d"], L=prm["L"], mu=prm["mu"], rng=0)
        pred = {q: th.bits_to_eps(q, p.d, p.L, p.mu, 1.0 / prm["eps"], **kw) for q in (c.lower, *c.higher)}
        assert min(pred, key=pred.get) == c.lower, (problem, pred)


def test_urq_bits_compares_every_quantizer_in_one_cell():
    rows = _run("urq_bits", problem="ridge", d=10, eps=0.1, max_steps=2000, quantizers="ternary,qsgd,none")
    bits = {r["quantizer"]: r["value"] for r in rows if r["metric"] == "bits_to_eps"}
    assert sorted(bits) == ["none", "qsgd", "ternary"]
    assert all(math.isfinite(b) and b > 0 for b in bits.values())
    # exact gradients ('none') are deterministic: same problem in every cell of the same replicate stream
    again = _run("urq_bits", problem="ridge", d=10, eps=0.1, max_steps=2000, quantizers="none,qsgd")
    assert {r["quantizer"]: r["value"] for r in again if r["metric"] == "bits_to_eps"}["none"] == bits["none"]


@pytest.mark.parametrize("bad", ["ternary", "ternary,ternary", "ternary,stochastic_round", "ternary,foo"])
def test_urq_bits_rejects_bad_quantizer_lists(bad):
    with pytest.raises(ValueError, match="quantizers must list"):  # SpecError is a ValueError
        get_experiment("urq_bits").validate({"quantizers": bad}, "test")


def test_delay_bisection_uses_common_random_numbers(monkeypatch):
    # every lr probe of the bisection must start from the same generator state (C1)
    import simcomm.experiments.urq as mod

    states, real = [], mod.async_compressed_gd

    def spy(*args, rng, **kw):
        states.append(rng.bit_generator.state["state"]["state"])
        return real(*args, rng=rng, **kw)

    monkeypatch.setattr(mod, "async_compressed_gd", spy)
    _run("delay_exact", quantizer="qsgd", tau=2, d=5, steps=200, steps_per_tau=50, iters=3)
    assert len(states) >= 5 and len(set(states)) == 1


@pytest.mark.parametrize("tau", [0, 1, 2, 3, 5, 10, 32, 64])
def test_delay_threshold_formula_matches_polynomial_roots(tau):
    # theory.urq.delay_threshold_exact against the characteristic polynomial z^{tau+1} - z^tau + lr L:
    # bisection on the spectral radius of its roots (numpy.roots), independent of the derivation
    def radius(gl):
        c = np.zeros(tau + 2)
        c[0], c[1] = 1.0, -1.0
        c[-1] += gl
        return np.abs(np.roots(c)).max()

    lo, hi = 1e-6, 2.5
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if radius(mid) < 1 else (lo, mid)
    exact = th.delay_threshold_exact(tau, 1.0)
    assert lo == pytest.approx(exact, rel=1e-9)
    assert radius(exact * (1 - 1e-6)) < 1 < radius(exact * (1 + 1e-6))  # the crossing is outward
    assert th.delay_threshold_exact(tau, 4.0) == pytest.approx(exact / 4, rel=1e-15)


@pytest.mark.parametrize("tau", [0, 1, 4, 16, 64])
def test_seed_condition_is_below_exact_threshold(tau):
    # delay.bound_tightness in exact arithmetic: the [B] sufficient condition is 2 to 2.6 times smaller
    ratio = th.delay_threshold_exact(tau, 1.0) / th.delay_stepsize(tau, 1.0)
    assert 2.0 - 1e-12 <= ratio <= 2.6


def test_delay_exact_measures_the_threshold():
    # the measured threshold of plain delayed GD (no quantizer) lands within the bracket + horizon error
    for tau in (0, 2):
        rows = _run("delay_exact", quantizer="none", tau=tau, iters=9)
        g = next(r["value"] for r in rows if r["metric"] == "lr_max")
        assert g == pytest.approx(th.delay_threshold_exact(tau, 1.0), rel=0.01)


def test_grad_scale_control_divides_the_threshold():
    # the negative control of delay.bound_tightness and pep.delay_certified: gradients summed over s
    # identical workers see the curvature s L, so the measured threshold is the exact one over s
    rows = _run("delay_exact", quantizer="none", tau=2, iters=9, grad_scale=4)
    g = next(r["value"] for r in rows if r["metric"] == "lr_max")
    assert g == pytest.approx(th.delay_threshold_exact(2, 1.0) / 4, rel=0.01)


# "none" draws nothing: its variance is 0 by construction (checked in tests/test_quantize.py)
@pytest.mark.parametrize("name,param,kw", [*(q for q in QUANTIZERS if q[0] != "none"),
                                           ("stochastic_round", 0.3, dict(delta=0.3))])
@pytest.mark.parametrize("vector", ["gaussian", "sparse", "heavy", "equal"])
def test_variance_exact_from_row_statistics_matches_monte_carlo(name, param, kw, vector):
    # theory.urq.variance_exact evaluated on the statistics the experiment emits equals the quantizer's
    # own closed form (float rounding only), and the raw Monte Carlo variance lies within 6 standard
    # errors of it (the standard error estimated from 8 replicates)
    prm = dict(quantizer=name, vector=vector, d=100, draws=4000, **{k: v for k, v in kw.items()})
    vals = []
    for r in range(8):
        rows = _run("urq_quantizer", rng=r, **prm)
        row = next(x for x in rows if x["metric"] == "variance")
        vals.append(row["value"])
    b = th.variance_exact(name, 100, row["norm2"], row["norm1"], row["norm_inf"], row["frac_sum"], **kw)
    from simcomm.experiments.urq import _vector

    own = float(compressor_from_name(name, **kw).variance(_vector(vector, 100, 20180618)))
    assert b == pytest.approx(own, rel=1e-12, abs=1e-12)
    se = np.std(vals, ddof=1) / math.sqrt(len(vals))
    assert abs(np.mean(vals) - b) <= 6 * se + 1e-9


def test_miscaled_quantizer_is_biased():
    # the negative control's perturbation does what the controls rely on: bias along v = miscale
    rows = _run("urq_quantizer", quantizer="qsgd", s=4, draws=4000, miscale=0.2)
    bias_v = next(r["value"] for r in rows if r["metric"] == "bias" and r["direction"] == "v")
    assert bias_v == pytest.approx(0.2, abs=0.02)


MY_SPECS = ["urq_unbiased", "urq_variance", "urq_rate_strongly_convex", "urq_rate_nonconvex", "urq_floor",
            "urq_bits_to_eps", "delay_threshold_exact", "delay_bound_tightness", "delay_compressed_limit",
            "iag_converges", "is_unbiased", "is_optimal_minimum", "is_optimal_is_min", "is_smoothing_sampled",
            "is_norm_trick_exact", "is_communication_crossover", "is_stale_between", "is_training_faster",
            "is_training_smoothed_ties"]


@pytest.mark.parametrize("name", MY_SPECS)
def test_urq_and_is_specs_load_with_controls(name):
    # every claim of the urq and is papers loads in both grids and carries a negative control
    from simcomm.spec import find_specs, load

    path = next(p for p in find_specs() if p.stem == name)
    for quick in (True, False):
        spec = load(path, quick=quick)
        assert spec.claim.controls, f"{name} has no [[control]]"


@pytest.mark.parametrize("tau,p", [(0, 0.25), (3, 0.5), (6, 0.1)])
def test_second_moment_operator_matches_monte_carlo_of_the_compressor(tau, p):
    """The exact second-moment map of delay.compressed_limit against 20000 runs of the Bernoulli compressor.

    Each coordinate of one (20000,) vector is an independent run of the scalar recursion
    e_{k+1} = e_k - c Q(e_{k-tau}) (Q acts per coordinate), started from a constant history 1; at 0.3 times
    the mean-square threshold and over 12 steps the tails are mild, so E e_K^2 is estimated within 5 standard errors.
    """
    from simcomm.experiments.urq import _spectral_radius, second_moment_operator

    q = compressor_from_name("bernoulli", p=p)
    lo, hi = 1e-4, 4.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _spectral_radius(second_moment_operator(mid, tau, 1.0 / p)) < 1 else (lo, mid)
    c, K, R = 0.3 * lo, 12, 20000
    T = second_moment_operator(c, tau, float(q.alpha(1)))
    M = np.ones((tau + 1) ** 2)
    for _ in range(K):
        M = T @ M
    rng = np.random.default_rng(7)
    hist = [np.ones(R)] * (tau + 1)          # hist[-1] = e_k, hist[0] = e_{k-tau}
    for _ in range(K):
        e = hist[-1] - c * q.apply(hist[0], rng=rng)
        hist = hist[1:] + [e] if tau else [e]
    sq = hist[-1] ** 2
    assert abs(sq.mean() - M[0]) < 5 * sq.std(ddof=1) / math.sqrt(R)


def test_iag_at_gd_step_control_changes_only_iag():
    # iag.converges's negative control: both IAG orders at GD's step 1/(alpha L). GD's rows stay as
    # they were; IAG, no longer held to the tau = n - 1 condition's smaller step, needs far fewer steps
    kw = dict(problem="quadratic", heterogeneous=False, n=4, quantizer="qsgd", s=4, max_steps=2000)
    base, off = _run("iag_vs_gd", **kw), _run("iag_vs_gd", iag_at_gd_step=False, **kw)
    assert base == off
    on = _run("iag_vs_gd", iag_at_gd_step=True, **kw)
    its = {(r["method"], run): r["value"] for run, rows in (("base", base), ("on", on)) for r in rows
           if r["metric"] == "iterations_to_eps"}
    assert its[("gd", "on")] == its[("gd", "base")]
    for order in ("iag_cyclic", "iag_random"):
        assert its[(order, "on")] < 0.5 * its[(order, "base")]
