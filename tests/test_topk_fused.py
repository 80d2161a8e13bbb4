"""The fused top-k (issue 40): the same indices, dense values and errors as before the fusion.

``top_k`` and ``top_k_indices`` now check finiteness inside the selection's pass and ``top_k`` writes
its dense result in that pass (``topk_select``), optionally into ``out=``. Nothing about the output
may change: the goldens below are SHA-256 prefixes of ``top_k_indices(x, k)`` and ``top_k(x, k)``
(bytes, dtype and shape) computed with the implementation before the change (commit 7cb20c0, the
separate min/max check, the radix select, then zeros and a scatter), on the numba backend, for the
inputs built by :func:`_cases`. A second check compares every backend with the plain reference kept
here (the numpy reference indices, then zeros and ``put_along_axis``), bit for bit, -0.0 included.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import get_backend, use
from simcomm.compress import top_k, top_k_indices

NPB = get_backend("numpy")

# name -> (sha of top_k_indices, sha of top_k), from the implementation at 7cb20c0 (numba backend)
GOLDEN = {
    "normal_1": ("f303909cdd5c62f5", "d555051e334e3624"),
    "normal_2": ("0af19573d3b6a2a1", "6d201709cc5e2c52"),
    "normal_3": ("beb1fefb3cdbce8c", "7f1d16d648293fb2"),
    "normal_4": ("c323403ba2b5daef", "241fcc4a16bc9270"),
    "normal_5": ("f3952df9fc5129a1", "7997f4cd62111946"),
    "normal_6": ("4bf0d4f751f2350e", "0a298a23f6998663"),
    "normal_7": ("2a730bd25116ab83", "a87e067d039e0d20"),
    "normal_8": ("d98ec4891d7e44f7", "fcb0d44dacd11989"),
    "ties_neg_zero": ("153b594dd859131e", "3673c0cfd43dad8a"),
    "sorted_fallback": ("d75de362d10c67e1", "b439a7947afb0a9c"),
    "zeros_then_mass": ("39240d058c56f5e0", "5b2373c94e1f3b79"),
    "int_input": ("0e37be664697a92a", "3892803247f1c7ae"),
    "k_equals_d": ("f77a94319c834726", "b3da6ca1e8fb6eb8"),
}


def _cases():
    """(name, x, k): sampled and exact paths, serial and threaded drivers, ties, -0.0, fallback, casts."""
    out = []
    for seed, shape, dtype, k in [
        (1, (10**6,), np.float32, 10**4),  # one long row: the sampled one-pass path
        (2, (10**6,), np.float64, 777),
        (3, (64, 50_000), np.float32, 500),  # threaded driver
        (4, (8, 40_000), np.float64, 4000),
        (5, (16, 8), np.float64, 3),  # a simulation's step: exact path, serial driver
        (6, (1000,), np.float32, 1),
        (7, (3, 5, 33_000), np.float32, 330),  # leading batch axes
        (8, (2, 100), np.float16, 7),  # keys from a float64 copy, values in float16
    ]:
        x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
        out.append((f"normal_{seed}", x, k))
    x = np.random.default_rng(9).integers(-3, 4, size=(4, 70_000)).astype(np.float32)
    x[x == 0] = -0.0  # the k-th magnitude is tied, and some kept entries are -0.0
    out.append(("ties_neg_zero", x, 60_000))
    x = np.sort(np.random.default_rng(10).standard_normal(200_000))  # sorted: the block sample misleads
    out.append(("sorted_fallback", x, 2000))
    x = np.concatenate([np.zeros(150_000), np.random.default_rng(11).standard_normal(50_000)]).astype(np.float32)
    out.append(("zeros_then_mass", x, 40_000))
    out.append(("int_input", np.arange(-50_000, 50_000).reshape(2, -1), 123))
    out.append(("k_equals_d", np.random.default_rng(12).standard_normal((3, 40)), 40))
    return out


CASES = _cases()
IDS = [c[0] for c in CASES]


def _sha(a) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.tobytes() + str(a.dtype).encode() + str(a.shape).encode()).hexdigest()[:16]


def _reference(x, k):
    """Dense top-k as it was computed before: reference indices, zeros, then the kept values put back."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    x2 = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    idx = NPB.topk_indices(x2, k)
    out = np.zeros_like(x2)
    np.put_along_axis(out, idx, np.take_along_axis(x2, idx, axis=1), axis=1)
    return idx.reshape(x.shape[:-1] + (k,)), out.reshape(x.shape)


@pytest.mark.parametrize("name,x,k", CASES, ids=IDS)
def test_numba_outputs_equal_the_pre_change_goldens(name, x, k):
    with use("numba"):
        idx, dense = top_k_indices(x, k), top_k(x, k)
        buf = np.full(dense.shape, 7, dense.dtype)  # stale contents must not leak through
        again = top_k(x, k, out=buf)
    assert (_sha(idx), _sha(dense)) == GOLDEN[name]
    assert again is buf and _sha(buf) == GOLDEN[name][1]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name,x,k", CASES, ids=IDS)
def test_backends_equal_the_reference_bit_for_bit(backend, name, x, k):
    ref_idx, ref = _reference(x, k)
    with use(backend):
        idx, dense = top_k_indices(x, k), top_k(x, k)
    np.testing.assert_array_equal(idx, ref_idx)
    assert dense.dtype == ref.dtype and dense.shape == ref.shape
    assert dense.tobytes() == ref.tobytes()  # bitwise: +0.0 off the top k, -0.0 kept as -0.0


def test_the_sorted_case_takes_the_exact_fallback():
    # the golden case is only a fallback test if the sampled bracket really fails on it
    from simcomm.backends._numba import select as sel

    x = dict((c[0], c[1]) for c in CASES)["sorted_fallback"]
    keys, mask = x.view(np.uint64), np.uint64(0x7FFFFFFFFFFFFFFF)
    hist = np.zeros(1 << 16, np.int64)
    lo, hi, n_lo = sel._bracket(keys, 2000, mask, 63, hist)
    assert not hist.any()  # the scratch comes back zeroed
    cap = int(2.0 * n_lo) + 8 * sel._SCAN_GROUPS + 4096
    out, cidx, ckey = np.empty(2000, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint64)
    gm, hit = np.empty(sel._SCAN_GROUPS, np.uint64), np.empty(sel._SCAN_GROUPS, np.int64)
    n, _ = sel._scan(keys, mask, lo, cidx, ckey, sel._slices(n_lo, keys.shape[0]), gm, hit)
    cand, work = np.empty(cap + 1, np.uint64), np.empty(cap, np.uint64)
    assert n < 0 or not sel._finish(2000, 63, lo, hi, out, cidx, ckey, n, cand, hist, work)


MSG = "top_k: x contains NaN or inf; pass finite values"


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("shape,pos,dtype", [
    ((10**6,), 123_457, np.float32),  # sampled path, outside the 1/16 sample
    ((10**6,), 0, np.float64),  # inside the sample
    ((10**6,), 10**6 - 1, np.float32),  # the last entry
    ((64, 50_000), (63, 49_999), np.float32),  # threaded driver, last row
    ((16, 8), (5, 3), np.float64),  # exact path, serial driver
    ((2, 100), (1, 50), np.float16),
    ((3, 40), (2, 39), np.float64),  # k = d below
])
def test_nonfinite_input_raises_the_same_one_line_error(backend, bad, shape, pos, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    x[pos] = bad
    k = shape[-1] if shape == (3, 40) else max(1, shape[-1] // 100)
    with use(backend):
        for fn in (top_k_indices, top_k):
            with pytest.raises(UserError) as err:
                fn(x, k)
            assert str(err.value) == MSG
        with pytest.raises(UserError, match="NaN or inf"):
            top_k(x, k, out=np.empty_like(x))


def test_many_nonfinite_entries_raise_too():
    # all-NaN rows and a block of infs larger than k (the scan's buffers overflow: exact fallback)
    x = np.random.default_rng(1).standard_normal(200_000)
    x[50_000:60_000] = np.inf
    for arr in (x, np.full((2, 40_000), np.nan, np.float32)):
        for fn in (top_k_indices, top_k):
            with pytest.raises(UserError, match="^top_k: x contains NaN or inf; pass finite values$"):
                fn(arr, 100)


def test_errors_keep_their_order():
    # a bad k is reported before the non-finite x, as before
    x = np.array([1.0, np.nan])
    with pytest.raises(UserError, match="k = 5 is out of range"):
        top_k(x, 5)
    with pytest.raises(UserError, match="complex"):
        top_k(np.array([1j, 2.0]), 1)


def test_out_is_checked():
    x = np.random.default_rng(2).standard_normal((4, 100))
    for bad in (np.empty((4, 100), np.float32), np.empty((4, 99)), np.empty((100, 4)).T):
        with pytest.raises(UserError, match="out must be a writeable C-contiguous float64 array of shape"):
            top_k(x, 5, out=bad)
    with pytest.raises(UserError, match="out overlaps x"):
        top_k(x, 5, out=x)
