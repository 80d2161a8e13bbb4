"""Sparsifiers: oracles, backend parity on shared noise, properties, statistics, error feedback, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcomm import UserError
from simcomm.backends import get_backend, use
from simcomm.compress import (
    ErrorFeedback,
    ErrorFeedbackState,
    RandK,
    RTopK,
    TopK,
    compressor_from_name,
    index_bits,
    message_bits,
    rand_k,
    rtop_k,
    top_k,
    top_k_indices,
)
from tests.conftest import N_SIGMA
from tests.naive_sparsify import naive_floyd, naive_rtopk_indices, naive_topk_indices

NP = get_backend("numpy")


def _rows_with_ties(rng, m, d, dtype):
    """Rows mixing Gaussian values, repeated magnitudes of both signs, zeros, and a sorted row."""
    x = rng.standard_normal((m, d)).astype(dtype)
    x[:, : d // 4] = 1.0
    x[:, d // 4 : d // 2 : 2] = -1.0
    x[:, -3:] = 0.0
    x[0] = np.sort(x[0])  # adversarial order for the sampled radix path
    return x


# ---------------------------------------------------------------- kernels against the oracles


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d,k", [(1, 1), (7, 3), (40, 40), (50, 1), (300, 17)])
def test_topk_indices_match_oracle(backend, dtype, d, k):
    x = _rows_with_ties(np.random.default_rng(12345), 4, d, dtype)
    got = backend.topk_indices(x, k)
    for row, idx in zip(x, got):
        assert list(idx) == naive_topk_indices(row, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 100, 5000, 99_999])
def test_topk_indices_parity_long_rows(backend, dtype, k):
    # d above the sampled-path threshold (2^15): numpy and every backend agree index for index,
    # including rows whose order defeats the sample (sorted) and rows full of ties.
    rng = np.random.default_rng(12345)
    x = _rows_with_ties(rng, 3, 100_000, dtype)
    x[1] = np.round(x[1] * 4)  # few distinct magnitudes: many ties at the threshold
    np.testing.assert_array_equal(backend.topk_indices(x, k), NP.topk_indices(x, k))


@pytest.mark.parametrize("d,k", [(1, 1), (5, 5), (10, 3), (1000, 10), (10**9, 64)])
def test_floyd_matches_oracle(backend, d, k):
    u = np.random.default_rng(12345).random((6, k))
    u[0, :] = np.nextafter(1.0, 0.0)  # largest uniform: the clamp t <= j must hold
    got = backend.floyd_sample(u, d)
    for row, idx in zip(u, got):
        assert list(idx) == naive_floyd(row, d)
        assert len(set(idx.tolist())) == k


@pytest.mark.parametrize("d,k,r", [(20, 3, 3), (20, 3, 8), (20, 3, 20), (50_000, 10, 200)])
def test_rtopk_indices_match_oracle(backend, d, k, r):
    rng = np.random.default_rng(12345)
    x = _rows_with_ties(rng, 3, d, np.float64)
    u = rng.random((3, k))
    got, finite = backend.rtopk_indices(x, k, r, u)
    assert finite is True
    for row, urow, idx in zip(x, u, got):
        assert list(idx) == naive_rtopk_indices(row, k, r, urow)
    dense = np.full_like(x, 7.0)  # stale contents must not leak through
    again, finite = backend.rtopk_indices(x, k, r, u, dense)
    np.testing.assert_array_equal(again, got)
    ref = np.zeros_like(x)
    np.put_along_axis(ref, got, np.take_along_axis(x, got, axis=1), axis=1)
    assert finite is True and dense.tobytes() == ref.tobytes()
    for bad in (np.nan, np.inf, -np.inf):  # the flag of the selection's pass (or of the r = d check)
        y = x.copy()
        y[2, d - 1] = bad
        assert backend.rtopk_indices(y, k, r, u, np.empty_like(y))[1] is False


# ---------------------------------------------------------------- public functions


def test_ties_go_to_the_lower_index():
    assert top_k([2.0, -2.0, 2.0, 1.0], 2).tolist() == [2.0, -2.0, 0.0, 0.0]
    assert top_k_indices(np.zeros(5), 3).tolist() == [0, 1, 2]


def test_batched_shapes_and_dtype():
    rng = np.random.default_rng(12345)
    x = rng.standard_normal((2, 3, 50)).astype(np.float32)
    for y in (top_k(x, 5), rand_k(x, 5, rng=rng), rtop_k(x, 5, 10, rng=rng)):
        assert y.shape == x.shape and y.dtype == np.float32
        assert np.all((y != 0).sum(axis=-1) == 5)
    assert top_k_indices(x, 5).shape == (2, 3, 5)


@pytest.mark.parametrize("name", ["numpy", "numba"])
def test_public_functions_agree_across_backends(name):
    rng = np.random.default_rng(12345)
    x = rng.standard_normal((8, 2000))
    ref = {"top": use("numpy")(top_k)(x, 20),
           "rand": use("numpy")(rand_k)(x, 20, rng=1),
           "rtop": use("numpy")(rtop_k)(x, 20, 100, rng=2)}
    np.testing.assert_array_equal(use(name)(top_k)(x, 20), ref["top"])
    np.testing.assert_array_equal(use(name)(rand_k)(x, 20, rng=1), ref["rand"])
    np.testing.assert_array_equal(use(name)(rtop_k)(x, 20, 100, rng=2), ref["rtop"])


def test_rtopk_limits_exactly():
    x = np.random.default_rng(12345).standard_normal((5, 300))
    np.testing.assert_array_equal(rtop_k(x, 7, 7, rng=3), top_k(x, 7))
    # r = d is unscaled rand-k: the same subset on the same generator state.
    np.testing.assert_array_equal(rtop_k(x, 7, 300, rng=4), rand_k(x, 7, rng=4, scale=False))


@pytest.mark.parametrize("name", ["numpy", "numba"])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_rtopk_with_r_eq_k_is_topk_even_on_ties(name, k):
    """The r = k limit of rTop-k (formerly the claim rtopk.limits) is an identity: entry for entry.

    Equal magnitudes (alpha = 0) exercise the tie rule shared by top_k and rTop-k's top-r step.
    """
    from simcomm.models import sparse_heavy_tailed

    rng = np.random.default_rng(12345)
    for alpha in (0.0, 1.0):
        x = sparse_heavy_tailed(1000, 1000, alpha=alpha, profile="powerlaw", rng=rng, size=(50,))
        np.testing.assert_array_equal(use(name)(rtop_k)(x, k, k, rng=rng), use(name)(top_k)(x, k))


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 60), elements=finite), data=st.data())
def test_topk_properties(x, data):
    d = x.size
    k = data.draw(st.integers(1, d))
    y = top_k(x, k)
    kept = y != 0
    assert kept.sum() <= k
    np.testing.assert_array_equal(y[kept], x[kept])  # kept entries unchanged
    err, norm2 = float(np.sum((x - y) ** 2)), float(np.sum(x**2))
    assert err <= (1 - k / d) * norm2 * (1 + 1e-12) + 1e-300
    assert np.array_equal(np.sort(top_k_indices(x, k)), naive_topk_indices(x, k))


@settings(max_examples=40, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 60), elements=finite), data=st.data())
def test_rtopk_keeps_a_subset_of_the_top_r(x, data):
    d = x.size
    k = data.draw(st.integers(1, d))
    r = data.draw(st.integers(k, d))
    y = rtop_k(x, k, r, rng=data.draw(st.integers(0, 2**32)))
    kept = np.flatnonzero(y)
    assert kept.size <= k
    assert set(kept.tolist()) <= set(naive_topk_indices(x, r))
    np.testing.assert_array_equal(y[kept], x[kept])


def test_rand_k_is_unbiased():
    # Coordinate j of the scaled estimate is x_j d/k with probability k/d, else 0: variance
    # x_j^2 (d/k - 1), so the mean of N draws has standard error |x_j| sqrt((d/k - 1)/N).
    rng = np.random.default_rng(12345)
    d, k, N = 20, 3, 40_000
    x = rng.standard_normal(d)
    mean = rand_k(np.broadcast_to(x, (N, d)), k, rng=rng).mean(axis=0)
    se = np.abs(x) * np.sqrt((d / k - 1) / N)
    assert np.all(np.abs(mean - x) <= N_SIGMA * se)


def test_rtopk_inclusion_frequency_and_error_identity():
    # Each top-r coordinate is kept with probability k/r (count ~ Binomial(N, k/r)); the mean error
    # has expectation ||x||^2 - (k/r)||top_r(x)||^2 (notes B2) and standard error sd/sqrt(N).
    rng = np.random.default_rng(12345)
    d, k, r, N = 30, 4, 10, 40_000
    x = rng.standard_normal(d)
    y = rtop_k(np.broadcast_to(x, (N, d)), k, r, rng=rng)
    counts = (y != 0).sum(axis=0)
    top = naive_topk_indices(x, r)
    p = k / r
    assert np.all(np.abs(counts[top] - N * p) <= N_SIGMA * np.sqrt(N * p * (1 - p)))
    assert counts[np.setdiff1d(np.arange(d), top)].sum() == 0
    err = ((x - y) ** 2).sum(axis=1)
    exact = np.sum(x**2) - p * np.sum(x[top] ** 2)
    assert abs(err.mean() - exact) <= N_SIGMA * err.std(ddof=1) / np.sqrt(N)


# ---------------------------------------------------------------- error feedback


@pytest.mark.parametrize("compressor", [TopK(3), RTopK(3, 6)], ids=["top_k", "rtop_k"])
def test_error_feedback_invariant_exact(compressor):
    rng = np.random.default_rng(12345)
    ef = ErrorFeedback(compressor)
    state = ef.init(np.zeros((4, 16)))
    for _ in range(5):
        g = rng.standard_normal((4, 16))
        old = state.residual.copy()
        p = g + state.residual
        msg, new = ef.apply(g, state, rng=rng)
        np.testing.assert_array_equal(msg + new.residual, p)  # g + e = C(g + e) + e', bit for bit
        np.testing.assert_array_equal(state.residual, old)  # the old state is not mutated
        assert isinstance(new, ErrorFeedbackState)
        state = new


def test_error_feedback_with_scaled_rand_k():
    rng = np.random.default_rng(12345)
    ef = ErrorFeedback(RandK(2))
    state = ef.init((3, 8))
    g = rng.standard_normal((3, 8))
    msg, state2 = ef.apply(g, state, rng=rng)
    np.testing.assert_allclose(msg + state2.residual, g, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- compressor classes


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_compressor_classes_apply_the_array_functions(backend):
    # a class applies its array function with the settings bound: identical output on the same generator state
    x = np.random.default_rng(12345).standard_normal((4, 50))
    pairs = [(TopK(5), lambda g: use(backend)(top_k)(x, 5)),
             (RandK(5), lambda g: use(backend)(rand_k)(x, 5, rng=g)),
             (RandK(5, scale=False), lambda g: use(backend)(rand_k)(x, 5, rng=g, scale=False)),
             (RTopK(5, 20), lambda g: use(backend)(rtop_k)(x, 5, 20, rng=g))]
    for c, f in pairs:
        got = use(backend)(c.apply)(x, rng=np.random.default_rng(7))
        np.testing.assert_array_equal(got, f(np.random.default_rng(7)))
        assert c.bits(50) == message_bits(5, 50) and c.beta(50) == (50 / 5 - 1 if c.unbiased else None)


def test_compressor_from_name_rejects():
    # the round trip name -> class for every registered compressor is in tests/test_compressor_contract.py
    for call, match in [(lambda: compressor_from_name("topk", k=2), "did you mean 'top_k'"),
                        (lambda: compressor_from_name("top_k", s=2), "takes k"),
                        (lambda: compressor_from_name("top_k"), "top_k needs k"),
                        (lambda: RTopK(4, 2), "r = 2"), (lambda: TopK(0), "k = 0"), (lambda: TopK(1.5), "k = 1.5")]:
        with pytest.raises(UserError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
    with pytest.raises(Exception, match="cannot assign"):
        TopK(2).k = 3  # settings are bound at construction


# ---------------------------------------------------------------- message cost


def test_message_bits():
    assert index_bits(2) == 1 and index_bits(1024) == 10 and index_bits(1025) == 11
    assert message_bits(1, 2**20) == 32 + 20
    assert message_bits(100, 1000) == 100 * 32 + 1000  # bitmap (1000) beats indices (1000 bits too: tie)
    assert message_bits(10, 1000) == 10 * (32 + 10)
    assert message_bits(10, 1000, value_bits=16) == 10 * (16 + 10)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: top_k(np.ones(5), 0), "1 <= k <= d"),
        (lambda: top_k(np.ones(5), 6), "1 <= k <= d"),
        (lambda: top_k(np.ones(5), 2.0), "integer"),
        (lambda: top_k(np.array([1.0, np.nan]), 1), "NaN or inf"),
        (lambda: top_k(np.array([1.0, -np.inf]), 1), "NaN or inf"),
        (lambda: top_k(3.0, 1), "scalar"),
        (lambda: rand_k(np.ones(5), 6, rng=0), "1 <= k <= d"),
        (lambda: rand_k(np.array([np.inf, 1.0]), 1, rng=0), "NaN or inf"),
        (lambda: rtop_k(np.ones(5), 3, 2, rng=0), "k = 3 <= r"),
        (lambda: rtop_k(np.ones(5), 3, 6, rng=0), "r <= d"),
        (lambda: rtop_k(np.ones(5), 0, 2, rng=0), "1 <= k <= d"),
        (lambda: message_bits(0, 10), "1 <= k <= d"),
    ],
)
def test_bad_input_raises_one_line(call, match):
    with pytest.raises(UserError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vector_scan_lists_what_the_group_scan_lists(dtype):
    # the top-k scan in vector instructions (simd.collect_keys) against the group scan: the same list of keys
    # at or above the bracket, the same indices in the same order, the same largest key (NaN and inf
    # included), and a refusal (-1) from both when the list cannot fit (the vector scan checks per chunk of
    # keys, so near a full list it may refuse where the group scan does not: the exact path then runs)
    from simcomm.backends._numba import select as sel
    from simcomm.backends._numba.simd import HAVE_COMPRESS

    if not HAVE_COMPRESS:
        pytest.skip("no vector compress here (LLVM < 19, or the JIT is off): the group scan is the only one")
    key_t, mask = (np.uint64, np.uint64(2**63 - 1)) if dtype == np.float64 else (np.uint32, np.uint32(2**31 - 1))
    rng = np.random.default_rng(11)
    for d in (5, 8, 1023, 1024, 1025, 5000, 70001):
        x = rng.standard_normal(d).astype(dtype)
        if d > 10:
            x[3], x[7], x[::11] = np.nan, -np.inf, 0.5
        keys = x.view(key_t)
        masked = (keys & mask).astype(np.uint64)
        for lo in (np.uint64(0), *np.quantile(masked, [0.5, 0.9, 0.99]).astype(np.uint64), np.uint64(mask) + 1):
            got = []
            for scan in (sel._scan_groups, sel._scan_simd):
                cap = d + 8 * sel._SCAN_GROUPS + 64
                cidx, ckey = np.full(cap, -1, np.int64), np.zeros(cap, key_t)
                n, top = scan(keys, mask, lo, cidx, ckey, 8, np.empty(sel._SCAN_GROUPS, key_t),
                              np.empty(sel._SCAN_GROUPS, np.int64))
                got.append((n, int(top), cidx[:n].tolist(), ckey[:n].tolist()))
            assert got[0] == got[1]
            assert got[0][0] == int((masked >= lo).sum())
        for scan in (sel._scan_groups, sel._scan_simd):  # every key listed, into room for 16: refused
            n, _ = scan(keys, mask, np.uint64(0), np.empty(16, np.int64), np.empty(16, key_t), 8,
                        np.empty(sel._SCAN_GROUPS, key_t), np.empty(sel._SCAN_GROUPS, np.int64))
            assert n == (-1 if d > 8 else d)
