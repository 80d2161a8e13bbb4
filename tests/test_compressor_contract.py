"""Library-internal invariants of every registered compressor, derived from the registry (optax's table).

What a user's compressor must satisfy too (shape, finite output, reproducible from its seed, the
declared ``deterministic``, unbiasedness, the declared variance, contraction and closed form, payload
bits, the wire form under every coding) is the conformance battery, run on every registered compressor
in ``tests/test_conform.py``. What stays here is how the library itself uses a compressor: the name
builds the class back (frozen, hashable, declared settings); the bit formula counts the message
exactly where ``bits_exact``; error feedback (EF, EF21, EF with the step-size correction) runs with it
and keeps its invariants; the server optimiser and ``simcomm payload`` take it. The settings come from
``tests/_compressors.py``, where a newly registered compressor is covered automatically.
"""

import dataclasses
import math

import numpy as np
import pytest

from simcomm.compress import COMPRESSORS, compressor_from_name, compressor_from_settings
from simcomm.network import formula_bits
from tests._compressors import cases

D = 48
DRAWS = 4000
# The EF21 contraction check is a z-test on DRAWS i.i.d. rows with a fixed seed: |z| > 5 has probability
# 5.7e-7 under the null (normal approximation; DRAWS = 4000 makes the mean close to normal), so the
# few dozen cases have a family-wise false-alarm rate below 2e-5, and a fixed seed makes the outcome
# reproducible. A mis-declared compressor is off by many standard errors.
N_SIGMA = 5.0


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


@pytest.mark.parametrize("name, kw", cases())
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


@pytest.mark.parametrize("name, kw", cases(where=lambda c: c.bits_exact))
@pytest.mark.parametrize("vec", list(VECTORS))
def test_bit_formula_counts_the_message_exactly(name, kw, vec):
    # the library's formula of a message's bits is what bits(d) declares (the battery measures the
    # encoded bytes against bits(d) up to padding; this is the formula, exactly)
    c = compressor_from_name(name, **kw)
    assert formula_bits(c.to_message(VECTORS[vec], rng=11)) == c.bits(D)


@pytest.mark.parametrize("name, kw", cases())
@pytest.mark.parametrize("vec", list(VECTORS))
def test_closed_form_error_within_the_declared_worst_case(name, kw, vec):
    # deterministic: where both are declared, variance(v) <= error_factor(d) ||v||^2 at every vector (the
    # battery's statistical checks compare measured errors with each of them separately)
    c = compressor_from_name(name, **kw)
    v = VECTORS[vec].astype(np.float64)
    exact = c.variance(VECTORS[vec]) if hasattr(c, "variance") else None
    factor = c.error_factor(D)
    if exact is None or factor is None or not math.isfinite(factor):
        pytest.skip("declares no closed form or no finite worst case")
    assert float(exact) <= factor * float(v @ v) * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize("name, kw", cases())
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


@pytest.mark.parametrize("name, kw", cases())
def test_server_optimiser_takes_it(name, kw):
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    tr = compressed_gd(quadratic(4, D, rng=0), compressor_from_name(name, **kw), lr=0.05, steps=5, rng=1)
    assert tr.f_gap.shape[-1] >= 2 and np.isfinite(tr.f_gap).all()


@pytest.mark.parametrize("name, kw", cases())
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


@pytest.mark.parametrize("name, kw", cases())
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


@pytest.mark.parametrize("name, kw", cases())
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
