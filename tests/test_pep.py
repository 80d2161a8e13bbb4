"""Performance estimation (theory/pep.py): the cache, the bounds against closed forms, the replayed worst case.

Tests that solve SDPs need PEPit (the ``pep`` extra) and are skipped without it; each solve takes 0.01-0.1 s
with Clarabel. The cache tests run without PEPit: the claims must.
"""

import inspect
import math

import numpy as np
import pytest

from simcomm.experiments import get_experiment
from simcomm.spec import find_specs, load, with_control
from theory import pep
from theory.urq import delay_stepsize, delay_threshold_exact


@pytest.fixture
def offline(monkeypatch):
    """PEPit unavailable and nothing solved in this process: only the shipped cache answers."""
    monkeypatch.setattr(pep, "_pepit", lambda: None)
    monkeypatch.setattr(pep, "_MEMORY", {})
    monkeypatch.delenv("SIMCOMM_PEP_CACHE", raising=False)
    monkeypatch.setattr(pep, "_LOADED", {})


def _pep_specs():
    return [p for p in find_specs() if load(p).claim and load(p).claim.bound
            and load(p).claim.bound.startswith("theory.pep:")]


def _measured(cell) -> dict:
    """The row statistics a bound may take besides the cell: L and mu of a logistic problem (what the
    experiment measures and emits with each row, computed here the same way)."""
    if not str(cell.get("problem", "")).startswith("logistic_"):
        return {}
    from simcomm.models import make_problem

    p = make_problem(cell["problem"], n=cell["n"], heterogeneous=cell.get("heterogeneous", False), l2=cell["l2"])
    return {"L": p.L, "mu": p.mu}


def _bound_calls(spec):
    fn = getattr(pep, spec.claim.bound.split(":")[1])
    names = inspect.signature(fn).parameters
    for cell in spec.cells():
        given = {**cell, **spec.claim.bound_args}
        if any(k not in given for k in names):
            given.update(_measured(cell))
        yield fn, {k: given[k] for k in names}


def test_cache_key_is_canonical():
    assert pep.cache_key("p", a=1, b=0.1) == pep.cache_key("p", b=0.1000000000000001, a=1.0)
    assert pep.cache_key("p", a=1) != pep.cache_key("p", a=1.001)


def test_every_cell_of_the_pep_claims_is_cached(offline):
    # `simcomm check` (quick or full, with controls) must solve nothing: every bound call of every cell is a hit
    specs = _pep_specs()
    assert len(specs) >= 3
    calls = 0
    for path in specs:
        for quick in (False, True):
            spec = load(path, quick=quick)
            for s in (spec, *(with_control(spec, c) for c in spec.claim.controls)):
                for fn, kwargs in _bound_calls(s):
                    v = fn(**kwargs)
                    assert math.isfinite(v), (s.claim.id, kwargs)
                    calls += 1
    assert calls > 40


def test_cache_miss_without_pepit_is_one_line(offline):
    with pytest.raises(ValueError, match=r"not in the shipped cache and PEPit is not installed.*simcomm\[pep\]") as e:
        pep.compressed_gd_rate(1.0, 0.1, 0.3333, 1.0)
    assert "\n" not in str(e.value)


def test_shipped_cache_records_status_and_time(offline):
    data = pep._cache()
    assert data
    for key, entry in data.items():
        assert {"value", "status", "seconds", "solver"} <= set(entry), key
        assert (entry["value"] is None) == (entry["status"] != "optimal"), key
        assert entry["seconds"] >= 0


def test_a_non_optimal_solve_is_reported_never_used(offline, monkeypatch):
    key = pep.cache_key("inexact_gd", L=1.0, mu=0.1, delta=0.5, lr=0.7, n=1)
    pep._MEMORY[key] = {"value": 0.9, "status": "optimal_inaccurate", "seconds": 0.1, "solver": "SCS"}
    res = pep.solve_inexact_gd(1.0, 0.1, 0.5, 0.7)
    assert res.status == "optimal_inaccurate" and math.isnan(res.value)
    assert math.isnan(pep.compressed_gd_rate(1.0, 0.1, 0.5, 0.7))


def test_seed_condition_below_certified_step_below_quadratic_threshold(offline):
    # the ordering the delay claim's statement reports, read from the shipped SDP solutions
    for tau in (1, 2, 3):
        cert = pep.delay_step_certified(tau, 1.0, 0.1)
        assert delay_stepsize(tau, 1.0) < cert < delay_threshold_exact(tau, 1.0), tau
    assert pep.delay_step_certified(0, 1.0, 0.1) == pytest.approx(2.0, rel=1e-3)  # no delay: GD's 2/L


def test_descent_lemma_rate_is_above_the_tight_one():
    # 2 (1 - sqrt(1 - delta)) >= delta: the usual analysis is never below the closed-form worst case
    for mu in (0.01, 0.1, 0.5, 1.0):
        for delta in np.linspace(0.05, 1.0, 20):
            for lr in (0.25, 0.5, 1.0):
                assert pep.compressed_gd_rate_descent_lemma(1.0, mu, delta, lr) >= \
                    pep.inexact_gd_rate_closed_form(1.0, mu, delta, lr) - 1e-15
    assert pep.compressed_gd_rate_descent_lemma(1.0, 0.1, 0.5, 1.5) == math.inf


def test_closed_form_special_cases():
    # exact gradients (delta = 1): GD's tight f-contraction max(|1 - lr mu|, |1 - lr L|)^2
    for lr in (0.3, 1.0, 1.8):
        assert pep.inexact_gd_rate_closed_form(1.0, 0.1, 1.0, lr) == pytest.approx(max(abs(1 - lr * 0.1),
                                                                                       abs(1 - lr)) ** 2)
    # PEPit's example: lr = 2/(L_eps + mu_eps) gives ((L_eps - mu_eps)/(L_eps + mu_eps))^2
    eps = 0.3
    Le, me = 1 + eps, 0.1 * (1 - eps)
    assert pep.inexact_gd_rate_closed_form(1.0, 0.1, 1 - eps**2, 2 / (Le + me)) == \
        pytest.approx(((Le - me) / (Le + me)) ** 2)


# --- the SDPs (PEPit) --------------------------------------------------------------------------------------------

@pytest.fixture
def fresh(monkeypatch):
    """Solve, never read a cache (PEPit required)."""
    pytest.importorskip("PEPit")
    monkeypatch.setattr(pep, "lookup", lambda key: None)
    monkeypatch.delenv("SIMCOMM_PEP_CACHE", raising=False)


@pytest.mark.parametrize("mu", [0.1, 0.5])
@pytest.mark.parametrize("delta", [0.3, 0.8, 1.0])
def test_sdp_matches_de_klerk_glineur_taylor(fresh, mu, delta):
    eps = math.sqrt(1 - delta)
    for lr in (0.5, 1.0, 2 / ((1 + eps) + mu * (1 - eps)), 1.9 / (1 + eps)):
        res = pep.solve_inexact_gd(1.0, mu, delta, lr)
        assert res.status == "optimal"
        # Clarabel's accuracy on these 4x4 SDPs is ~1e-8; 1e-6 relative leaves room and still pins the formula
        assert res.value == pytest.approx(pep.inexact_gd_rate_closed_form(1.0, mu, delta, lr), rel=1e-6)


def test_sdp_n_steps_is_the_one_step_factor_to_the_n(fresh):
    one = pep.solve_inexact_gd(1.0, 0.1, 0.75, 1.0, 1).value
    for n in (2, 3):
        assert pep.solve_inexact_gd(1.0, 0.1, 0.75, 1.0, n).value == pytest.approx(one**n, rel=1e-6)


@pytest.mark.parametrize("delta,lr,h,c", [(0.75, 1.0, 0.1, 0.5), (0.91, 1.5, 1.0, 1.3),
                                         (0.25, 0.5, 0.1, 1 - 0.75**0.5)])
def test_worst_case_instance_is_the_replayed_one(fresh, delta, lr, h, c):
    # the SDP's Gram matrix is (numerically) rank one: a 1-D quadratic of curvature h with d = c grad f,
    # one of the four corners pep_worst_case runs, and the one whose factor it reports
    res = pep.solve_inexact_gd(1.0, 0.1, delta, lr)
    assert res.extra["h"] == pytest.approx(h, rel=2e-3)
    assert res.extra["c"] == pytest.approx(c, rel=2e-3)
    assert res.extra["perp"] < 2e-3
    assert (1 - lr * res.extra["c"] * res.extra["h"]) ** 2 == pytest.approx(res.value, rel=1e-3)


def test_delay_certificate_without_delay_is_gd(fresh, monkeypatch):
    res = pep.solve_delay_certified(0, 1.0, 0.1, iters=8)
    assert res.status == "optimal"
    lo, hi = res.extra["bracket"]
    assert lo == res.value and hi - lo == pytest.approx(2.0 / 2**8) and lo < 2.0 <= hi + 1e-12


def test_delay_certified_step_contracts_and_the_next_does_not_for_its_theta(fresh):
    import PEPit  # noqa: F401

    res = pep.solve_delay_certified(1, 1.0, 0.1, iters=6)
    value, status, _ = pep._delay_ratio(pep._pepit(), 1.0, 0.1, res.value, 1, res.extra["theta"])
    assert status == "optimal" and value < 1 and value == pytest.approx(res.extra["rho"], rel=1e-6)
    # no step at or above the exact quadratic threshold (1/L at tau = 1) can be certified
    assert res.value < delay_threshold_exact(1, 1.0)
    assert pep._delay_ratio(pep._pepit(), 1.0, 0.1, 1.0, 1, res.extra["theta"])[0] >= 1


def test_inaccurate_solves_are_not_used(fresh, monkeypatch):
    monkeypatch.setattr(pep, "_solve", lambda problem: (0.5, "optimal_inaccurate", "SCS"))
    res = pep.solve_inexact_gd(1.0, 0.1, 0.5, 1.0)
    assert res.status == "optimal_inaccurate" and math.isnan(res.value)
    res = pep.solve_delay_certified(1, 1.0, 0.1, iters=3)
    assert math.isnan(res.value) and "optimal_inaccurate" in res.extra["statuses"]


# --- the experiments -------------------------------------------------------------------------------------------------

def _run(name, **params):
    e = get_experiment(name)
    return e.func(e.validate(params, "test"), np.random.default_rng(0), "numpy")[0]["value"]


@pytest.mark.parametrize("delta,lr", [(0.25, 1.0), (0.75, 0.5), (0.91, 1.5), (1.0, 1.0)])
def test_replayed_worst_case_equals_the_closed_form(delta, lr):
    got = _run("pep_worst_case", delta=delta, lr=lr, L=1.0, mu=0.1, steps=3)
    assert got == pytest.approx(pep.inexact_gd_rate_closed_form(1.0, 0.1, delta, lr), rel=1e-12)
    exact = _run("pep_worst_case", delta=delta, lr=lr, L=1.0, mu=0.1, oracle="exact")
    assert exact == pytest.approx(max(abs(1 - lr * 0.1), abs(1 - lr)) ** 2, rel=1e-12)


def test_compressed_runs_stay_below_and_shrink_approaches_the_worst_case():
    for comp in ("top_k", "shrink", "stretch"):
        rate = _run("pep_compressed_gd", compressor=comp, delta=0.5, lr=1.0, d=10, steps=1500)
        bound = pep.inexact_gd_rate_closed_form(1.0, 0.1, 0.5, 1.0)
        assert rate <= bound
        if comp == "shrink":  # the worst-case direction on a spectrum containing mu: within 0.5% of the bound
            assert rate > 0.995 * bound
    # a delta 15% short of the declared one (the claim's control) takes the shrink run above the bound
    assert _run("pep_compressed_gd", compressor="shrink", delta=0.5, delta_shortfall=0.15, lr=1.0, d=10,
                steps=1500) > pep.inexact_gd_rate_closed_form(1.0, 0.1, 0.5, 1.0)


def test_top_k_keeps_floor_delta_d_and_refuses_zero():
    from simcomm._errors import SpecError

    e = get_experiment("pep_compressed_gd")
    with pytest.raises(SpecError, match="keeps floor"):
        e.validate(dict(compressor="top_k", delta=0.04, d=20), "test")
