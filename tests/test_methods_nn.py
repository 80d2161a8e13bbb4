"""The model family's named methods: built from spec settings, run by run(), equal to their public wrappers.

One row per named method of family "model" (``ef_sgd``, ``importance_sgd``): the method built with
:func:`simcomm.optim.build_method` from spec-style settings (labels, names, numbers) and run by
:func:`simcomm.optim.run` with the family's watch gives the public wrapper's trace bit for bit; the fused
EF path (a registered acceleration) agrees with the step-by-step composition it stands for.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm.compress import FEEDBACKS, compressor_from_label
from simcomm.models import init_params, load_dataset, mlp, split_workers
from simcomm.optim import (
    ACCELERATIONS,
    METHODS,
    EFWatch,
    ImportanceWatch,
    ModelProblem,
    build_method,
    ef_sgd,
    importance_sgd,
    run,
)
from simcomm.sampling import staleness

STEPS, EVERY = 12, 4


@pytest.fixture(scope="module")
def digits():
    ds = load_dataset("digits", n_samples=600, rng=np.random.default_rng(12345))
    return ds, mlp((64, 16, 10))


def _same(a, b):
    np.testing.assert_array_equal(a.step, b.step)
    assert a.records.keys() == b.records.keys() and a.info.keys() == b.info.keys()
    for k in a.records:
        assert a.records[k].dtype == b.records[k].dtype
        np.testing.assert_array_equal(a.records[k], b.records[k])
    for k in a.info:
        np.testing.assert_array_equal(a.info[k], b.info[k])
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)


def _ef_run(ds, model, settings, *, n=4, batch_size=8, lr=0.2, backend="numpy", method=None, seed=11):
    """The named method through run(), set up as ef_sgd sets itself up (x0, shards, minibatch stream)."""
    br = np.random.default_rng(13)
    problem = ModelProblem(model, ds.X_train, ds.y_train, n=n, batch_size=batch_size,
                           shards=split_workers(ds.y_train, n, rng=br), X_test=ds.X_test, y_test=ds.y_test,
                           batch_rng=br)
    m = method or build_method("ef_sgd", lr=lr, **settings)
    bits = compressor_from_label(settings["compressor"]).bits(model.n_params)
    return run(problem, m, STEPS, rng=seed, x0=init_params(model, rng=7)[None], backend=backend,
               watch=EFWatch(problem, STEPS, EVERY, bits))


EF_ROWS = [
    {"compressor": "top_k(k=30)"},
    {"compressor": "rtop_k(k=30, r=90)", "schedule": "cosine"},
    {"compressor": "rand_k(k=30, scale=False)", "schedule": "inv_sqrt"},
    {"compressor": "none"},
    {"compressor": "qsgd(s=4)"},
    {"compressor": "ternary", "schedule": "cosine"},
    {"compressor": "top_k(k=30)", "feedback": "ef21"},
    {"compressor": "qsgd(s=4)", "feedback": "diana"},
]


@pytest.mark.parametrize("settings", EF_ROWS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_ef_sgd_named_equals_wrapper(digits, settings):
    ds, model = digits
    a = _ef_run(ds, model, settings)
    b = ef_sgd(model, ds.X_train, ds.y_train, n=4, steps=STEPS, lr=0.2, batch_size=8, record_every=EVERY,
               compressor=compressor_from_label(settings["compressor"]), schedule=settings.get("schedule", "constant"),
               feedback=settings.get("feedback", "ef"), X_test=ds.X_test, y_test=ds.y_test,
               x0=init_params(model, rng=7), rng=11, batch_rng=13, backend="numpy")
    _same(a, b)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("label", ["top_k(k=30)", "rtop_k(k=30, r=90)", "rand_k(k=30, scale=False)"])
def test_fused_acceleration_equals_the_composition(digits, label, backend):
    ds, model = digits
    settings = {"compressor": label, "schedule": "cosine"}
    fast = _ef_run(ds, model, settings, backend=backend)
    plain = build_method("ef_sgd", lr=0.2, **settings)
    slow = _ef_run(ds, model, settings, backend=backend, method=plain._replace(name="ef_sgd (composition)"))
    # the same selections and memory; the server sums the messages in another order (to rounding)
    np.testing.assert_allclose(fast.x, slow.x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast.comp_error, slow.comp_error, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.train_loss, slow.train_loss, rtol=1e-10)
    np.testing.assert_array_equal(fast.bits, slow.bits)


def test_acceleration_declines_what_it_does_not_fuse(digits):
    ds, model = digits
    (fused,) = ACCELERATIONS["ef_sgd"]
    problem = ModelProblem(model, ds.X_train, ds.y_train, n=2, batch_size=4)
    watch = EFWatch(problem, 3, 1, 1)
    for settings in ({"compressor": "qsgd(s=4)"}, {"compressor": "top_k(k=5)", "feedback": "ef21"},
                     {"compressor": "none"}):
        m = build_method("ef_sgd", lr=0.1, **settings)
        assert fused(problem, m, 3, rng=np.random.default_rng(0), x0=None, on_step=None, watch=watch) is None


@pytest.mark.parametrize("variant", sorted(FEEDBACKS))
def test_every_feedback_variant_runs_in_ef_sgd(digits, variant):
    ds, model = digits
    comp = "qsgd(s=4)" if variant == "diana" else "top_k(k=60)"
    tr = ef_sgd(model, ds.X_train, ds.y_train, n=4, steps=40, lr=0.1, batch_size=16, record_every=20,
                compressor=compressor_from_label(comp), feedback=variant, x0=init_params(model, rng=7), rng=1,
                batch_rng=2)
    assert tr.diverged_at.tolist() == [-1] and tr.train_loss[-1] < tr.train_loss[0]
    assert np.all(np.isfinite(tr.comp_error))


IS_ROWS = [
    {"proposal": "uniform"},
    {"proposal": "ideal"},
    {"proposal": "smoothed", "smoothing": 0.5, "unweighted": True},
    {"proposal": "stale", "smoothing": 0.1, "workers": 3, "staleness": "period", "period": 4},
    {"proposal": "stale", "smoothing": 0.1, "workers": 2, "staleness": "delay", "mean_delay": 3.0},
]


@pytest.mark.parametrize("settings", IS_ROWS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_importance_sgd_named_equals_wrapper(digits, settings):
    ds, model = digits
    problem = ModelProblem(model, ds.X_train, ds.y_train, batch_size=8, X_test=ds.X_test, y_test=ds.y_test)
    rng = np.random.default_rng(4)
    x0 = init_params(model, rng=rng)
    a = run(problem, build_method("importance_sgd", lr=0.2, **settings), STEPS, rng=rng, x0=x0[None],
            watch=ImportanceWatch(problem, STEPS, 5))
    sched = staleness(settings.get("staleness", "period"), period=settings.get("period", 1),
                      mean_delay=settings.get("mean_delay", 1.0))
    b = importance_sgd(model, ds.X_train, ds.y_train, steps=STEPS, lr=0.2, batch_size=8, record_every=5,
                       proposal=settings["proposal"], smoothing=settings.get("smoothing", 0.0),
                       n=settings.get("workers", 1), staleness=sched, unweighted=settings.get("unweighted", False),
                       X_test=ds.X_test, y_test=ds.y_test, rng=4)
    _same(a, b)


def test_model_methods_are_registered():
    for name in ("ef_sgd", "importance_sgd"):
        assert METHODS[name].family == "model" and METHODS[name].doc
    assert "feedback" in METHODS["ef_sgd"].params and METHODS["ef_sgd"].params["feedback"].default == "ef"
