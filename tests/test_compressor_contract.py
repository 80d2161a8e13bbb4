"""Contract tests derived from the compressor registry (optax's table): every registered compressor,
through the same invariants, with no list of names typed here.

Adding a compressor costs one class (``@register_compressor``) and one row of :data:`ROWS` (the
settings to test it at); :func:`test_every_registered_compressor_has_a_row` fails until the row is there,
so nothing new goes untested. Invariants: the name builds the class back (frozen, hashable, declared
settings); ``bits > 0``; ``apply`` keeps the shape and is reproducible from its seed; the wire form
round-trips exactly under every coding of its kind, decodes to ``apply``'s output and has exactly
``bits(d)`` bits where ``bits_exact``; unbiased within ``N_SIGMA`` standard errors where declared; the
measured error ``E||C(v) - v||^2`` equals the declared closed form ``variance(v)`` and stays within
``error_factor(d) ||v||^2``; error feedback runs and keeps ``p = C(p) + e'``; the server optimiser and
``simcomm payload`` take it.
"""

import dataclasses
import math

import numpy as np
import pytest

from simcomm.compress import COMPRESSORS, compressor_from_name, compressor_from_settings
from simcomm.network import CODINGS, decode, encode, formula_bits

#: settings each registered compressor is tested at (one row per compressor; a list tests several)
ROWS = {
    "none": [{}],
    "top_k": [dict(k=5)],
    "rand_k": [dict(k=5), dict(k=5, scale=False)],
    "rtop_k": [dict(k=4, r=12)],
    "qsgd": [dict(s=2), dict(s=16)],
    "ternary": [{}],
    "stochastic_round": [dict(delta=0.3)],
    "bernoulli": [dict(p=0.3)],
    "sign": [{}],
    "scaled_sign": [dict(norm="l1"), dict(norm="l2")],
    "natural": [{}],
    "fp16": [{}],
    "bf16": [{}],
    "minmax_uint8": [dict(bucket=12), dict(bucket=0, stochastic=False)],
    "block_int8": [dict(block=16)],
    "rand_k_replace": [dict(k=5), dict(k=5, scale=False)],
    "powersgd": [dict(rank=2, rows=6), dict(rank=1, rows=0)],
    "natural_dithering": [dict(s=3), dict(s=8)],
    "compose": [dict(first="top_k(k=12)", second="qsgd(s=4)"), dict(first="rand_k(k=24)", second="natural"),
                dict(first="scaled_sign(norm=l1)", second="bf16")],
    "scaling": [dict(c=0.3), dict(c=1.7)],
}

D = 48
DRAWS = 4000
# Each statistical check is a z-test on DRAWS i.i.d. draws with a fixed seed: |z| > 5 has probability
# 5.7e-7 under the null (normal approximation; DRAWS = 4000 makes the mean close to normal), so the
# few hundred checks here have a family-wise false-alarm rate below 2e-4, and a fixed seed makes the
# outcome reproducible. A biased or mis-declared compressor is off by many standard errors.
N_SIGMA = 5.0


def _cases(where=None):
    """The contract rows, optionally only those whose compressor satisfies ``where(c)``."""
    return [pytest.param(name, kw, id=f"{name}{''.join(f'-{k}={v}' for k, v in kw.items())}")
            for name in COMPRESSORS for kw in ROWS.get(name, [])
            if where is None or where(compressor_from_name(name, **kw))]


def _declares_error(c) -> bool:
    # the fp16/bf16 casts declare neither a closed form nor a worst-case constant: their relative error u^2
    # holds only in the normal range (subnormals and overflow break it); their kernels are checked bit for
    # bit against a reference rounding in tests/test_elementwise_kernels.py
    return c.variance(np.ones(D)) is not None or c.error_factor(D) is not None


def _vectors():
    g = np.random.default_rng(20260101)
    gauss = g.standard_normal(D)
    sparse = np.zeros(D)  # the sparse skewed model: 10% non-zeros with Pareto(1.5) magnitudes
    idx = g.choice(D, D // 10, replace=False)
    sparse[idx] = (g.pareto(1.5, idx.size) + 1.0) * g.choice([-1.0, 1.0], idx.size)
    heavy = g.standard_t(1.5, D)
    return {"gaussian": gauss.astype(np.float32), "sparse": sparse.astype(np.float32),
            "heavy": heavy.astype(np.float32)}


VECTORS = _vectors()


def test_every_registered_compressor_has_a_row():
    missing = sorted(set(COMPRESSORS) - set(ROWS))
    assert not missing, f"add a row to ROWS for {missing} (the settings to test it at)"
    assert not set(ROWS) - set(COMPRESSORS), "ROWS names a compressor that is not registered"


@pytest.mark.parametrize("name, kw", _cases())
def test_name_settings_and_bits(name, kw):
    c = compressor_from_name(name, **kw)
    cls = COMPRESSORS[name]
    assert type(c) is cls and c.name == name and c == cls(**kw) and hash(c) == hash(cls(**kw))
    declared = [s.name for s in cls.settings()]
    assert set(kw) <= set(declared) and all(s.doc for s in cls.settings())
    assert compressor_from_settings(name, {**kw, "unrelated": 1}) == c  # the pool ignores what it does not declare
    with pytest.raises(dataclasses.FrozenInstanceError):  # settings are bound at construction
        c.zzz = 1
    b = c.bits(D)
    assert math.isfinite(b) and b > 0


@pytest.mark.parametrize("name, kw", _cases())
def test_apply_keeps_shape_and_is_reproducible(name, kw):
    c = compressor_from_name(name, **kw)
    X = np.stack(list(VECTORS.values()))
    a, b = c.apply(X, rng=7), c.apply(X, rng=7)
    assert a.shape == X.shape and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name, kw", _cases())
def test_deterministic_where_declared(name, kw):
    c = compressor_from_name(name, **kw)
    X = np.stack(list(VECTORS.values()))
    if not c.deterministic:
        # a random compressor changes with the seed on these vectors (none of them is a fixed point)
        assert any(not np.array_equal(c.apply(X, rng=s), c.apply(X, rng=s + 1)) for s in (1, 3, 5)), \
            "declare deterministic = True: the output does not depend on rng"
        return
    np.testing.assert_array_equal(c.apply(X, rng=1), c.apply(X, rng=2))


@pytest.mark.parametrize("name, kw", _cases())
@pytest.mark.parametrize("vec", list(VECTORS))
def test_wire_round_trip_is_exact(name, kw, vec):
    c = compressor_from_name(name, **kw)
    x = VECTORS[vec]
    m = c.to_message(x, rng=11)
    for coding in CODINGS[m.kind]:
        assert decode(encode(m, coding)) == m, coding
    if c.bits_exact:
        assert formula_bits(m) == c.bits(D)
    # the message stands for apply's output on the same seed (float32 scales: relative rounding 2^-24)
    ref = np.asarray(c.apply(x, rng=11), dtype=np.float64)
    got = c.decode(m)
    assert got.shape == (D,)
    np.testing.assert_allclose(got, ref, rtol=4e-7, atol=4e-7 * float(np.abs(ref).max()))


def _draws(c, x):
    Q = np.asarray(c.apply(np.broadcast_to(x, (DRAWS, D)).copy(), rng=12345), dtype=np.float64)
    return Q - x.astype(np.float64)


@pytest.mark.parametrize("name, kw", _cases(where=lambda c: c.unbiased))
@pytest.mark.parametrize("vec", list(VECTORS))
def test_unbiased_where_declared(name, kw, vec):
    c = compressor_from_name(name, **kw)
    x = VECTORS[vec].astype(np.float64)
    E = _draws(c, VECTORS[vec])
    w_sign = np.where(np.random.default_rng(3).random(D) < 0.5, -1.0, 1.0)
    for w in (x, w_sign):
        proj = E @ w  # <C(v) - v, w> per draw, mean 0 if unbiased
        se = proj.std(ddof=1) / math.sqrt(DRAWS)
        slack = 1e-6 * np.linalg.norm(x) * np.linalg.norm(w)  # float32 rounding of the outputs
        assert abs(proj.mean()) <= N_SIGMA * se + slack, (proj.mean(), se)


@pytest.mark.parametrize("name, kw", _cases(where=_declares_error))
@pytest.mark.parametrize("vec", list(VECTORS))
def test_error_within_declared_constants(name, kw, vec):
    c = compressor_from_name(name, **kw)
    x = VECTORS[vec].astype(np.float64)
    n2 = float(x @ x)
    err = (_draws(c, VECTORS[vec]) ** 2).sum(axis=1)
    mean, se = err.mean(), err.std(ddof=1) / math.sqrt(DRAWS)
    slack = 1e-5 * n2  # float32 outputs: each coordinate is off by at most 2^-24 relative
    exact, factor = c.variance(x), c.error_factor(D)
    if exact is not None:
        assert abs(mean - float(exact)) <= N_SIGMA * se + slack, (mean, float(exact), se)
    if factor is not None and math.isfinite(factor):
        assert mean <= factor * n2 + N_SIGMA * se + slack, (mean, factor * n2)
        if exact is not None:
            assert float(exact) <= factor * n2 * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize("name, kw", _cases())
def test_error_feedback_runs_and_keeps_the_invariant(name, kw):
    from simcomm.optim import EFState, ef_update

    c = compressor_from_name(name, **kw)
    g = np.random.default_rng(5)
    n = 3
    G = g.standard_normal((n, D))
    E = 0.1 * g.standard_normal((n, D))
    x0 = g.standard_normal(D)
    P = G + E
    new, info = ef_update(EFState(x0.copy(), E.copy(), 0), G, lr=0.1, compressor=c, rng=9)
    if info.sent is not None:
        M = info.sent
    elif info.idx is not None:
        M = np.zeros_like(P)
        np.put_along_axis(M, info.idx, info.vals, axis=1)
    else:
        M = P.copy()  # lossless: everything is sent
        assert c.lossless
    # p = C(p) + e': exact for compressors that send p's own entries; else two roundings of p - m
    tol = 0.0 if (c.sends_entries or c.lossless) else 4 * np.finfo(np.float64).eps * (np.abs(P) + np.abs(M))
    resid = new.residual
    assert np.all(np.abs(P - (M + resid)) <= tol)
    np.testing.assert_allclose(new.x, x0 - 0.1 * M.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert info.comp_error.shape == (n,) and np.all(info.comp_error >= 0)


@pytest.mark.parametrize("name, kw", _cases())
def test_server_optimiser_takes_it(name, kw):
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    tr = compressed_gd(quadratic(4, D, rng=0), compressor_from_name(name, **kw), lr=0.05, steps=5, rng=1)
    assert tr.f_gap.shape[-1] >= 2 and np.isfinite(tr.f_gap).all()


@pytest.mark.parametrize("name, kw", _cases())
def test_payload_cli_takes_it(name, kw, capsys):
    import json

    from simcomm.cli import main

    flags = []
    for key, value in kw.items():
        flags += [f"--{key}" if value else f"--no-{key}"] if isinstance(value, bool) else [f"--{key}", str(value)]
    with pytest.raises(SystemExit) as exc:
        main(["payload", name, "-d", str(D), *flags, "--json"])
    assert exc.value.code == 0, capsys.readouterr().err
    info = json.loads(capsys.readouterr().out)
    assert info["roundtrip"] is True and info["bits"] > 0


@pytest.mark.parametrize("name, kw", _cases())
def test_ef21_keeps_the_servers_estimate_and_contracts(name, kw):
    from simcomm.compress import EF21, EF21State

    c = compressor_from_name(name, **kw)
    ef = EF21(c)
    g = np.random.default_rng(6).standard_normal((DRAWS, D))
    state = EF21State(np.broadcast_to(VECTORS["sparse"].astype(np.float64), (DRAWS, D)).copy())
    h, new = ef.apply(g, state, rng=4)
    # the message is C(g - h): h' - h equals it on the same seed (one rounding of the sum)
    c_ref = np.asarray(c.apply(g - state.estimate, rng=4), dtype=np.float64)
    np.testing.assert_allclose(h - state.estimate, c_ref, rtol=1e-12, atol=1e-12 * np.abs(h).max())
    assert new.estimate is h
    factor = c.error_factor(D)
    if factor is not None and math.isfinite(factor):
        # E||h' - g||^2 = E||C(g - h) - (g - h)||^2 <= factor ||g - h||^2, per row; averaged over the rows
        e_new = ((h - g) ** 2).sum(axis=1)
        e_old = ((state.estimate - g) ** 2).sum(axis=1)
        ratio = e_new - factor * e_old
        assert ratio.mean() <= N_SIGMA * ratio.std(ddof=1) / math.sqrt(DRAWS) + 1e-9 * e_old.mean()


@pytest.mark.parametrize("name, kw", _cases())
def test_ef_with_lr_correction_is_ef_at_a_constant_step_and_rescales_otherwise(name, kw):
    from simcomm.compress import ErrorFeedback, ErrorFeedbackLR

    c = compressor_from_name(name, **kw)
    g = np.random.default_rng(8).standard_normal((3, 2, D))
    plain, corr = ErrorFeedback(c), ErrorFeedbackLR(c)
    s1, s2 = plain.init((2, D)), corr.init((2, D))
    for t in range(3):  # constant step: the same messages, bit for bit
        m1, s1 = plain.apply(g[t], s1, rng=t)
        m2, s2 = corr.apply(g[t], s2, lr=0.1, rng=t)
        np.testing.assert_array_equal(m1, m2)
    # a step change from 0.1 to 0.025: the residual enters 4 times as large (x-space memory lr*e kept)
    m3, s3 = corr.apply(np.zeros((2, D)), s2, lr=0.025, rng=5)
    np.testing.assert_allclose(m3 + s3.residual, 4.0 * s2.residual, rtol=1e-12, atol=1e-12)
    with pytest.raises(Exception, match="lr = 0"):
        corr.apply(g[0], s2, lr=0, rng=0)
