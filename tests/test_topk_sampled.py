"""Sampled top-k paths and rTop-k's fused selection against straightforward numpy references.

The references sort: the top-k set of a row is the first ``k`` of ``lexsort((index, -|x|))`` (largest
magnitudes first, ties to the lower index), returned ascending. rTop-k's subset is that top-r list
indexed by the positions Floyd's algorithm draws from the same uniforms (the numpy backend's
``floyd_sample`` is the specification of those positions).
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm import UserError
from simcomm.backends import get_backend, use
from simcomm.compress import rand_k, rtop_k, top_k, top_k_indices
from simcomm.compress._sparsify import _scatter

NPB = get_backend("numpy")


def _ref_topk(x2, k):
    """Indices of the k largest |x| per row (ties to the lower index), ascending; by sorting."""
    d = x2.shape[1]
    rows = [np.sort(np.lexsort((np.arange(d), -np.abs(row.astype(np.float64))))[:k]) for row in x2]
    return np.array(rows, dtype=np.int64).reshape(x2.shape[0], k)


def _ref_dense(x2, idx):
    out = np.zeros_like(x2)
    for i in range(x2.shape[0]):
        out[i, idx[i]] = x2[i, idx[i]]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 4096, 41_943])
def test_long_row_sampled_path_matches_the_sorting_reference(dtype, k):
    # 2**22 + 3 keys: the 1/64 block sample of long rows, and a tail shorter than one scan block
    x = np.random.default_rng(k).standard_normal(2**22 + 3).astype(dtype)
    ref = _ref_topk(x[None], k)
    with use("numba"):
        idx, dense = top_k_indices(x, k), top_k(x, k)
    np.testing.assert_array_equal(idx, ref[0])
    assert dense.tobytes() == _ref_dense(x[None], ref)[0].tobytes()


def test_long_row_parallel_segments_equal_the_serial_path():
    # one row of >= 2**22 keys is scanned in parallel segments when numba has more than one thread
    numba = pytest.importorskip("numba")
    x = np.random.default_rng(11).standard_normal(2**22 + 1001).astype(np.float32)
    x[2**21 - 3 : 2**21 + 3] = 9.0  # ties straddling the segment boundary of two threads
    before = numba.get_num_threads()
    with use("numba"):
        try:
            numba.set_num_threads(1)
            serial = top_k(x, 20_000), top_k_indices(x, 5)
        finally:
            numba.set_num_threads(before)
        if before < 2:
            pytest.skip("numba has one thread here: no parallel segments to compare")
        par = top_k(x, 20_000), top_k_indices(x, 5)
    assert par[0].tobytes() == serial[0].tobytes()
    np.testing.assert_array_equal(par[1], serial[1])
    np.testing.assert_array_equal(par[1], [2**21 - 3, 2**21 - 2, 2**21 - 1, 2**21, 2**21 + 1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("pos", [5, 2**21 + 7, 2**22 + 2])
def test_long_row_nonfinite_raises_the_same_one_line_error(bad, pos):
    x = np.random.default_rng(12).standard_normal(2**22 + 3).astype(np.float32)
    x[pos] = bad
    with use("numba"):
        for fn in (top_k_indices, top_k):
            with pytest.raises(UserError) as err:
                fn(x, 1000)
            assert str(err.value) == "top_k: x contains NaN or inf; pass finite values"
        with pytest.raises(UserError) as err:
            rtop_k(x, 1000, 4000, rng=0)
        assert str(err.value) == "rtop_k: x contains NaN or inf; pass finite values"


@pytest.mark.parametrize("k", [1, 2, 500, 25_000])
def test_batch_rows_share_scratch_and_match_the_reference(k):
    # rows of different scales in one call: the chunk's histogram scratch must come back clean every row
    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 50_000)) * np.logspace(-30, 30, 9)[:, None]
    x[4] = np.abs(x[4])
    x[5, ::7] = 0.0
    ref = _ref_topk(x, k)
    with use("numba"):
        np.testing.assert_array_equal(top_k_indices(x, k), ref)
        np.testing.assert_array_equal(top_k(x.astype(np.float32), k), _ref_dense(x.astype(np.float32),
                                                                                  _ref_topk(x.astype(np.float32), k)))


def test_bracket_leaves_its_scratch_zeroed():
    from simcomm.backends._numba import select as sel

    x = np.random.default_rng(4).standard_normal(100_000)
    hist = np.zeros(1 << 16, np.int64)
    lo, hi, n_lo = sel._bracket(x.view(np.uint64), 1000, np.uint64(0x7FFFFFFFFFFFFFFF), 63, hist)
    assert not hist.any()
    keys = x.view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    assert lo <= np.sort(keys)[-1000] < hi  # the k-th largest key is inside the bracket
    assert 0.5 < (keys >= lo).sum() / n_lo < 2.0


def test_finish_from_a_list_takes_sure_keeps_ties_and_candidates():
    # the selection from a scan's list: keys >= hi are sure keeps, the k-th largest found among the others
    # (its ties to the lower index); more sure keeps than k, or fewer keys than k, is a wrong bracket
    from simcomm.backends._numba import select as sel

    ckey = np.array([5, 9, 9, 3, 7, 7, 12], np.uint32)
    cidx = np.arange(10, 17)
    hist = np.zeros(1 << 16, np.int64)
    cases = {3: [11, 12, 16], 4: [11, 12, 14, 16], 5: [11, 12, 14, 15, 16], 6: [10, 11, 12, 14, 15, 16],
             7: list(range(10, 17)), 2: None, 8: None}
    for k, want in cases.items():
        out = np.full(k, -1, np.int64)
        ok = sel._finish(k, 31, 3, 9, out, cidx, ckey, 7, np.empty(8, np.uint32), hist, np.empty(8, np.uint64))
        assert ok == (want is not None), k
        if ok:
            assert out.tolist() == want, k
        assert not hist.any()  # the scratch comes back zeroed


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("shape,k,r", [((2**22 + 3,), 1000, 4000), ((64, 50_000), 500, 2000), ((5, 300), 3, 12),
                                       ((2, 1000), 7, 1000)])
def test_rtop_k_matches_the_reference(backend, shape, k, r):
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x2 = x.reshape(-1, shape[-1])
    u = np.random.default_rng(6).random((x2.shape[0], k))  # rtop_k's first draw from rng=6
    top = np.broadcast_to(np.arange(shape[-1]), x2.shape) if r == shape[-1] else _ref_topk(x2, r)
    idx = np.take_along_axis(top, NPB.floyd_sample(u, r), axis=1)
    with use(backend):
        y = rtop_k(x, k, r, rng=6)
    assert y.tobytes() == _ref_dense(x2, idx).reshape(shape).tobytes()


MSG = "rtop_k: x contains NaN or inf; pass finite values"


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("shape,pos,r", [
    ((10**6,), 123_457, 40_000),  # sampled path, outside the block sample
    ((10**6,), 10**6 - 1, 40_000),  # the last entry
    ((64, 50_000), (63, 49_999), 2000),  # threaded driver, last row
    ((16, 8), (5, 3), 4),  # exact path
    ((3, 40), (2, 39), 40),  # r = d: no selection, the separate check
])
def test_rtop_k_nonfinite_input_raises_the_same_one_line_error(backend, bad, shape, pos, r):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x[pos] = bad
    with use(backend), pytest.raises(UserError) as err:
        rtop_k(x, 2, r, rng=0)
    assert str(err.value) == MSG


def test_scatter_matches_put_along_axis():
    rng = np.random.default_rng(7)
    x2 = rng.standard_normal((6, 1000))
    idx = np.stack([rng.choice(1000, 40, replace=False) for _ in range(6)])
    for scale in (1.0, 25.0):
        ref = np.zeros_like(x2)
        np.put_along_axis(ref, idx, np.take_along_axis(x2, idx, axis=1) * scale, axis=1)
        np.testing.assert_array_equal(_scatter(x2, idx, (2, 3, 1000), scale), ref.reshape(2, 3, 1000))
    y = rand_k(x2, 40, rng=8)
    assert np.all((y != 0).sum(axis=1) == 40) and np.array_equal(y[y != 0], x2[y != 0] * 25.0)
