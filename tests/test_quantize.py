"""Unbiased random quantizers: oracle agreement, backend parity, unbiasedness, exact variance, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcomm import UserError
from simcomm.backends import available_backends, get_backend, use
from simcomm.compress import (
    QSGD,
    Bernoulli,
    Identity,
    RandK,
    StochasticRound,
    Ternary,
    bernoulli_sparsify,
    compressor_from_name,
    qsgd,
    stochastic_round,
    ternary,
)
from tests.naive_quantize import bernoulli_naive, qsgd_naive, stochastic_round_naive, ternary_naive

N_SIGMA = 5  # statistical tests: a 5-sigma miss has probability ~6e-7 per comparison under the null
BACKENDS = available_backends()


def _key_of(seed):
    # the key a quantizer draws from default_rng(seed) (one 64-bit integer per call)
    return int(np.random.default_rng(seed).integers(0, 2**64, dtype=np.uint64))


CASES = [
    ("qsgd", lambda x, rng, be: use(be)(qsgd)(x, 3, rng=rng), lambda x, key: qsgd_naive(x, 3, key)),
    ("ternary", lambda x, rng, be: use(be)(ternary)(x, rng=rng), ternary_naive),
    ("stochastic_round", lambda x, rng, be: use(be)(stochastic_round)(x, 0.25, rng=rng),
     lambda x, key: stochastic_round_naive(x, 0.25, key)),
    ("bernoulli", lambda x, rng, be: use(be)(bernoulli_sparsify)(x, 0.3, rng=rng),
     lambda x, key: bernoulli_naive(x, 0.3, key)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fast,naive", CASES, ids=[c[0] for c in CASES])
def test_matches_naive_oracle(name, fast, naive, dtype, backend):
    x = np.random.default_rng(12345).standard_normal((5, 37)).astype(dtype)
    x[1] = 0.0  # an all-zero row
    got = fast(x, 777, backend)
    want = naive(x, _key_of(777))
    assert got.dtype == dtype
    if name == "qsgd":  # the row norm is a reduction: the oracle sums in another order
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _bits(a):
    """The raw bits: array_equal takes -0.0 == +0.0, the backends must agree on the sign of zero too."""
    return a.view(f"u{a.itemsize}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fast,naive", CASES, ids=[c[0] for c in CASES])
def test_numpy_numba_parity_on_shared_key(name, fast, naive, dtype):
    x = np.random.default_rng(12345).standard_normal((3, 200_001)).astype(dtype)  # parallel path, many blocks
    a, b = fast(x, 99, "numpy"), fast(x, 99, "numba")
    if name == "qsgd" and dtype == np.float64:
        # the row norm is a reduction (summation order differs): same levels, values within rounding
        np.testing.assert_array_equal(np.sign(a), np.sign(b))
        np.testing.assert_allclose(a, b, rtol=1e-13)
    else:
        np.testing.assert_array_equal(_bits(a), _bits(b))


def test_kernels_agree_bitwise_given_norms():
    """Given the same per-row scales, the QSGD kernels agree exactly (the norm is the only reduction)."""
    npb, nbb = get_backend("numpy"), get_backend("numba")
    x = np.random.default_rng(12345).standard_normal((4, 1000))
    norms = npb.row_norms(x)
    np.testing.assert_allclose(nbb.row_norms(x), norms, rtol=1e-13)
    a, b = np.empty_like(x), np.empty_like(x)
    npb.qsgd_quantize(x, norms, 5, 42, a)
    nbb.qsgd_quantize(x, norms, 5, 42, b)
    np.testing.assert_array_equal(_bits(a), _bits(b))
    np.testing.assert_array_equal(npb.counter_uniforms(42, 100, np.float32, 7),
                                  nbb.counter_uniforms(42, 100, np.float32, 7))


def test_row_absmax_backends_agree_exactly():
    # one pass over the magnitude keys (numba) against numpy's abs().max(): the same float64, nan for NaN/inf
    npb, nbb = get_backend("numpy"), get_backend("numba")
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64, np.float16):
        x = rng.standard_normal((6, 301)).astype(dtype)
        x[1, 3], x[2, 7], x[3] = np.nan, -np.inf, -0.0
        x[4] = np.finfo(dtype).smallest_subnormal * np.arange(301)
        x[5, 200] = -np.finfo(dtype).max
        a, b = nbb.row_absmax(x), npb.row_absmax(x)
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_array_equal(_bits(a), _bits(b))
    assert nbb.row_absmax(np.empty((3, 0), np.float32)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("scale_kind", ["row_absmax", "float64_scale"])
def test_ternary_float32_kernel_bitwise_on_edge_rows(scale_kind):
    # float32 data with float32 scales take the division-free comparison u m < |x|: bit for bit the reference's
    # u < |x| / m on rows with repeated maxima, subnormals, extreme ranges and zeros; other scales divide
    npb, nbb = get_backend("numpy"), get_backend("numba")
    rng = np.random.default_rng(11)
    for t in range(40):
        x = (rng.standard_normal((3, 2000)) * 10.0 ** rng.integers(-40, 38)).astype(np.float32)
        x[:, ::3] = x[:, :1]
        x[1] = 0.0
        if t % 4 == 0:
            x[2] = rng.integers(-5, 6, 2000).astype(np.float32) * np.float32(2.0**-149)
        scales = npb.row_absmax(x)
        if scale_kind == "float64_scale":
            scales = scales * (1 + 2.0**-40)
        key = int(rng.integers(0, 2**63))
        a = nbb.ternary_quantize(x, scales, key, np.empty_like(x))
        b = npb.ternary_quantize(x, scales, key, np.empty_like(x))
        np.testing.assert_array_equal(_bits(a), _bits(b))


def test_counter_uniforms_are_uniform():
    # mean of M uniforms: standard error sqrt(1/12/M)
    M = 200_000
    u = get_backend("numpy").counter_uniforms(2024, M, np.float64)
    assert abs(u.mean() - 0.5) < N_SIGMA * math.sqrt(1 / 12 / M)
    assert abs((u < 0.1).mean() - 0.1) < N_SIGMA * math.sqrt(0.09 / M)


V = np.random.default_rng(12345).standard_t(2.0, 40)
Q_ALL = [QSGD(2), Ternary(), StochasticRound(0.5),
         Bernoulli(0.2), RandK(8)]


@pytest.mark.parametrize("q", Q_ALL, ids=lambda q: q.label)
def test_unbiased_within_derived_tolerance(q):
    """Each coordinate's mean over M draws is within N_SIGMA standard errors of v_i.

    The per-coordinate variance is estimated from the draws themselves (M = 20000, so the estimate is
    accurate to ~1%); coordinates whose variance is 0 must match exactly.
    """
    M = 20_000
    Q = q.apply(np.broadcast_to(V, (M, V.size)).copy(), rng=np.random.default_rng(12345))
    mean, sd = Q.mean(axis=0), Q.std(axis=0, ddof=1)
    tol = N_SIGMA * sd / math.sqrt(M) + 1e-12 * np.abs(V)
    assert np.all(np.abs(mean - V) <= tol), np.max(np.abs(mean - V) / np.maximum(tol, 1e-300))


@pytest.mark.parametrize("q", Q_ALL, ids=lambda q: q.label)
def test_exact_variance_formula_and_beta(q):
    """Monte Carlo E|Q(v)-v|^2 matches the closed form; the closed form is <= beta |v|^2.

    Tolerance: the per-draw squared error has standard deviation sd; the mean of M draws is within
    N_SIGMA * sd / sqrt(M) of the exact value.
    """
    M = 20_000
    Q = q.apply(np.broadcast_to(V, (M, V.size)).copy(), rng=np.random.default_rng(54321))
    e2 = ((Q - V) ** 2).sum(axis=1)
    exact = float(q.variance(V))
    assert abs(e2.mean() - exact) <= N_SIGMA * e2.std(ddof=1) / math.sqrt(M)
    assert exact <= q.beta(V.size) * float(V @ V) * (1 + 1e-12)


def test_qsgd_variance_closed_form_by_hand():
    # v = (3, 4), s = 2: s|v|/||v|| = (1.2, 1.6); p = (0.2, 0.6); (25/4) (0.16 + 0.24) = 2.5
    assert QSGD(2).variance(np.array([3.0, 4.0])) == pytest.approx(2.5)
    assert Ternary().variance(np.array([3.0, 4.0])) == pytest.approx(4 * 7 - 25)
    assert Bernoulli(0.5).variance(np.array([3.0, 4.0])) == pytest.approx(25.0)


def test_ternary_beta_is_attained_supremum():
    # sup_v |v|_inf |v|_1 / |v|^2 = (1 + sqrt d)/2, attained at v = (1, t, ..., t), t = 1/(1 + sqrt d)...
    # checked numerically
    d = 49
    best = 0.0
    for t in np.linspace(0.01, 1, 2000):
        v = np.r_[1.0, np.full(d - 1, t)]
        best = max(best, (Ternary().variance(v) / (v @ v)))
    assert best <= Ternary().beta(d) + 1e-12
    assert best == pytest.approx(Ternary().beta(d), rel=1e-4)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=30), st.integers(1, 8),
       st.integers(0, 2**32))
def test_qsgd_levels_property(vals, s, seed):
    """Every output is sign(v_i) |v| l / s with l in {floor, ceil} of s|v_i|/|v|."""
    v = np.array(vals)
    q = use("numpy")(qsgd)(v, s, rng=seed)
    nrm = np.linalg.norm(v)
    if nrm == 0:
        assert not q.any()
        return
    level = np.abs(q) * s / nrm
    r = s * np.abs(v) / nrm
    assert np.all((np.abs(level - np.floor(r)) < 1e-9 * (1 + r)) | (np.abs(level - np.ceil(r)) < 1e-9 * (1 + r)))
    assert np.all(q * v >= 0)


def test_batched_shape_and_rows_independent():
    x = np.random.default_rng(12345).standard_normal((2, 3, 11)).astype(np.float32)
    q = qsgd(x, 4, rng=1)
    assert q.shape == x.shape and q.dtype == np.float32


def test_bits():
    assert QSGD(4).bits(100) == 32 + 100 * 4
    assert Ternary().bits(10) == 48
    assert Identity().bits(10) == 320
    assert StochasticRound(0.5).bits(10) == 320


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: qsgd(np.ones(3), 0, rng=0), "s >= 1"),
        (lambda: qsgd(np.ones(3), 1.5, rng=0), "s >= 1"),
        (lambda: stochastic_round(np.ones(3), 0.0, rng=0), "delta > 0"),
        (lambda: stochastic_round(np.ones(3), -1, rng=0), "delta > 0"),
        (lambda: bernoulli_sparsify(np.ones(3), 0.0, rng=0), "0 < p <= 1"),
        (lambda: bernoulli_sparsify(np.ones(3), 1.5, rng=0), "0 < p <= 1"),
        (lambda: ternary(np.array([1.0, np.nan]), rng=0), "NaN"),
        (lambda: compressor_from_name("qsdg", s=2), "did you mean 'qsgd'"),
    ],
)
def test_bad_input_one_line(call, match):
    with pytest.raises(UserError, match=match) as exc:
        call()
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", [10, 300_000])  # serial and parallel kernels
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_detected_by_the_row_reduction(backend, d, bad):
    x = np.ones((2, d))
    x[1, 5] = bad
    for call in (lambda: use(backend)(qsgd)(x, 2, rng=0), lambda: use(backend)(ternary)(x, rng=0),
                 lambda: use(backend)(bernoulli_sparsify)(x, 0.5, rng=0)):
        with pytest.raises(UserError, match="NaN or inf"):
            call()


def test_out_argument():
    x = np.random.default_rng(12345).standard_normal((3, 50)).astype(np.float32)
    buf = np.empty_like(x)
    res = qsgd(x, 4, rng=5, out=buf)
    np.testing.assert_array_equal(res, qsgd(x, 4, rng=5))
    assert np.shares_memory(res, buf)
    with pytest.raises(UserError, match="out must be"):
        qsgd(x, 4, rng=5, out=np.empty((3, 50)))
