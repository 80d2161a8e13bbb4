"""CuPy backend: same kernel names as numpy (checked everywhere), parity on shared noise (GPU only)."""

import ast
from pathlib import Path

import numpy as np
import pytest

from simcomm.backends import available_backends, get_backend, use

BACKENDS = Path(__file__).resolve().parents[1] / "simcomm" / "backends"


def _exported(folder: Path) -> set[str]:
    names = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                # a starred entry is the kernel table itself (tests/test_backends_contract.py checks it)
                names |= {ast.literal_eval(e) for e in node.value.elts if not isinstance(e, ast.Starred)}
    return names


def test_cupy_backend_implements_every_numpy_kernel_name():
    """Parsed, not imported, so it runs without CuPy: a kernel added to numpy must get a GPU twin."""
    missing = _exported(BACKENDS / "_numpy") - _exported(BACKENDS / "_cupy")
    assert not missing, f"the cupy backend lacks kernels {sorted(missing)}"


def test_cupy_unavailable_is_one_clear_error():
    if "cupy" in available_backends():
        pytest.skip("CuPy and a GPU are present: the unavailable path cannot be exercised here")
    from simcomm import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="backend 'cupy' is not available here") as err:
        get_backend("cupy")
    assert "\n" not in str(err.value)


gpu = pytest.mark.skipif("cupy" not in available_backends(), reason="needs CuPy (gpu extra) and a CUDA device")


def _cp():
    import cupy as cp

    return cp


def _shapes():
    # (rows, d, k): d below, at and above one warp segment (2048) and one histogram chunk (16384)
    return [(1, 1, 1), (3, 5, 2), (16, 4096, 41), (7, 2048, 2047), (5, 2049, 1), (4, 40000, 400), (2, 70001, 3)]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_topk_radix_select_equals_numpy(dtype):
    """Same index set and order as the reference, ties to the lower index, host and device arrays."""
    cp = _cp()
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(8)
    for m, d, k in _shapes():
        x = rng.standard_normal((m, d)).astype(dtype)
        if d > 9:
            x[:, 7] = -x[:, 9]  # equal magnitudes
        ref = npb.topk_indices(x, k)
        np.testing.assert_array_equal(cpb.topk_indices(x, k), ref)
        got = cpb.topk_indices(cp.asarray(x), k)
        assert isinstance(got, cp.ndarray)
        np.testing.assert_array_equal(got.get(), ref)
    # many exact ties: small integers, so the k-th value is shared by many entries of each row
    x = rng.integers(-3, 4, size=(9, 30000)).astype(dtype)
    for k in (1, 100, 12345, 29999):
        np.testing.assert_array_equal(cpb.topk_indices(cp.asarray(x), k).get(), npb.topk_indices(x, k))
    z = np.zeros((2, 5000), dtype=dtype)  # all keys equal: the first k indices
    np.testing.assert_array_equal(cpb.topk_indices(cp.asarray(z), 17).get(), np.tile(np.arange(17), (2, 1)))


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_selection_parity(dtype):
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 4096)).astype(dtype)
    x[:, 7] = x[:, 9]  # ties: lower index wins on every backend
    np.testing.assert_array_equal(npb.topk_indices(x, 41), cpb.topk_indices(x, 41))
    u = rng.random((16, 20))
    np.testing.assert_array_equal(npb.floyd_sample(u, 300), cpb.floyd_sample(u, 300))
    (a, fa), (b, fb) = npb.rtopk_indices(x, 20, 300, u), cpb.rtopk_indices(x, 20, 300, u)
    np.testing.assert_array_equal(a, b)
    assert fa is fb is True
    cp = _cp()
    da, db = np.empty_like(x), cp.empty(x.shape, x.dtype)  # the dense result on the device
    npb.rtopk_indices(x, 20, 300, u, da)
    cpb.rtopk_indices(cp.asarray(x), 20, 300, u, db)
    assert da.tobytes() == cp.asnumpy(db).tobytes()
    y = x.copy()
    y[3, 5] = np.nan
    assert cpb.rtopk_indices(y, 20, 300, u)[1] is False


@gpu
@pytest.mark.gpu
def test_rtopk_device_subset_is_uniform():
    """Keyed (device) rTop-k: k distinct members of the top-r set, ascending, every member equally likely."""
    cp = _cp()
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(5)
    m, d, k, r = 20000, 64, 3, 12
    x = rng.standard_normal((m, d))
    top = npb.topk_indices(x, r)
    got = cpb.rtopk_indices(cp.asarray(x), k, r, 987654321)[0].get()
    assert got.shape == (m, k)
    assert np.all(np.diff(got, axis=1) > 0)
    pos = np.array([np.searchsorted(top[i], got[i]) for i in range(m)])
    np.testing.assert_array_equal(np.take_along_axis(top, pos, axis=1), got)  # members of the top-r set
    # each of the r positions is picked with probability k/r: counts are Binomial(m, k/r); a chi-square
    # test at level 1e-6 (a true uniform draw fails it once in a million runs)
    from scipy import stats

    counts = np.bincount(pos.ravel(), minlength=r)
    assert stats.chisquare(counts).pvalue > 1e-6, counts
    again = cpb.rtopk_indices(cp.asarray(x), k, r, 987654321)[0].get()
    np.testing.assert_array_equal(again, got)  # the same key, the same subset


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quantizer_parity_bit_for_bit(dtype):
    cp = _cp()
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    np.testing.assert_array_equal(npb.counter_uniforms(99, 1000, dtype), cpb.counter_uniforms(99, 1000, dtype).get())
    x = np.random.default_rng(1).standard_normal((8, 1000)).astype(dtype)
    x[0, :3] = [0.0, -0.0, 1.0]
    x[1] = 0.0  # a zero row (norm 0)
    norms = npb.row_norms(x)
    np.testing.assert_allclose(cpb.row_norms(x), norms, rtol=1e-12)
    np.testing.assert_array_equal(cpb.row_absmax(cp.asarray(x)).get(), npb.row_absmax(x))
    for name, args in (("qsgd_quantize", (norms, 4)), ("ternary_quantize", (npb.row_absmax(x),)),
                       ("stochastic_round_quantize", (0.25,)), ("bernoulli_quantize", (0.3,))):
        a = getattr(npb, name)(x, *args, 12345, np.empty_like(x))
        b = getattr(cpb, name)(x, *args, 12345, np.empty_like(x))
        c = getattr(cpb, name)(cp.asarray(x), *args, 12345, cp.empty(x.shape, dtype=x.dtype))
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c.get(), a)
        assert np.array_equal(np.signbit(c.get()), np.signbit(a)), name  # the sign of zero too


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gossip_and_dsgd_parity_bit_for_bit(dtype):
    cp = _cp()
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(2)
    X = rng.standard_normal((64, 300)).astype(dtype)
    shifts, weights = np.array([0, 1, 2, 4, 8, 16, 32]), np.full(7, 1 / 7)
    ref = npb.shift_mix(X, shifts, weights)
    np.testing.assert_array_equal(cpb.shift_mix(X, shifts, weights), ref)
    np.testing.assert_array_equal(cpb.shift_mix(cp.asarray(X), shifts, weights).get(), ref)
    import scipy.sparse as sp

    W = sp.random(64, 64, density=0.1, random_state=3, format="csr")
    args = (W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data)
    np.testing.assert_array_equal(cpb.csr_mix(*args, cp.asarray(X)).get(), npb.csr_mix(*args, X))
    M, G = rng.standard_normal((2, 64, 300)).astype(dtype)
    for step, extra in (("atc_shift_step", (shifts, weights)), ("atc_csr_step", args)):
        M_ref, out_ref = M.copy(), np.empty_like(X)
        getattr(npb, step)(X, M_ref, G, 0.1, 0.9, *extra, out_ref)
        Md, outd = cp.asarray(M), cp.empty(X.shape, dtype=dtype)
        getattr(cpb, step)(cp.asarray(X), Md, cp.asarray(G), 0.1, 0.9, *extra, outd)
        np.testing.assert_array_equal(Md.get(), M_ref)
        np.testing.assert_array_equal(outd.get(), out_ref)
        M_host, out_host = M.copy(), np.empty_like(X)  # host arrays: copied in and back, same values
        getattr(cpb, step)(X, M_host, G, 0.1, 0.9, *extra, out_host)
        np.testing.assert_array_equal(M_host, M_ref)
        np.testing.assert_array_equal(out_host, out_ref)


@gpu
@pytest.mark.gpu
def test_ef_parity():
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(4)
    G, M = rng.standard_normal((16, 5000)), rng.standard_normal((16, 5000))
    P_ref, top_ref, sq_ref = npb.ef_accumulate_topr(G, M, 50)
    P_gpu, top_gpu, sq_gpu = cpb.ef_accumulate_topr(G, M, 50)
    np.testing.assert_array_equal(top_gpu, top_ref)
    np.testing.assert_array_equal(P_gpu, P_ref)
    np.testing.assert_allclose(sq_gpu, sq_ref, rtol=1e-12)
    theta = rng.standard_normal(5000)
    ref = npb.ef_send(P_ref, top_ref, theta, 0.1)
    import cupy as cp

    P_dev = cp.asarray(P_gpu)
    gpu = cpb.ef_send(P_gpu, top_gpu, theta, 0.1)  # host arrays: the numpy reference, bit for bit
    np.testing.assert_array_equal(P_gpu, P_ref)  # the same entries zeroed
    for a, b in zip(gpu, ref):
        np.testing.assert_array_equal(a, b)
    dev = cpb.ef_send(P_dev, cp.asarray(top_gpu), cp.asarray(theta), 0.1)  # device arrays stay there
    np.testing.assert_array_equal(cp.asnumpy(P_dev), P_ref)
    np.testing.assert_array_equal(cp.asnumpy(dev[0]), ref[0])
    for a, b in zip(dev[1:], ref[1:]):
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-12, atol=1e-15)  # atomic adds: order varies
    Gd, Md = cp.asarray(G), cp.asarray(M)
    P_d, top_d, sq_d = cpb.ef_accumulate_topr(Gd, Md, 50, out=Md)  # P written over M, on the device
    assert P_d is Md
    np.testing.assert_array_equal(top_d.get(), top_ref)


@gpu
@pytest.mark.gpu
def test_counter_normals_match_numpy():
    cp = _cp()
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    keys = np.random.default_rng(3).integers(0, 2**64, size=6, dtype=np.uint64)
    G = np.random.default_rng(4).standard_normal((6, 3001))
    ref = npb.add_counter_normals(G.copy(), keys, 17, 0.5)
    got = cpb.add_counter_normals(cp.asarray(G), cp.asarray(keys), 17, 0.5).get()
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)  # libm vs CUDA log/cos: last ulps


@gpu
@pytest.mark.gpu
def test_compressors_take_and_return_device_arrays():
    """The public compressors run on device arrays without a host round trip and agree with numpy."""
    cp = _cp()
    from simcomm.compress import qsgd, rand_k, rtop_k, ternary, top_k

    x = np.random.default_rng(6).standard_normal((4, 3000)).astype(np.float32)
    xd = cp.asarray(x)
    for got, ref in ((top_k(xd, 30), use("numpy")(top_k)(x, 30)),
                     (ternary(xd, rng=2), use("numpy")(ternary)(x, rng=2))):  # exact scales: equal bits
        assert isinstance(got, cp.ndarray)
        np.testing.assert_array_equal(got.get(), ref)
    got = qsgd(xd, 4, rng=1)  # row norms are reductions (last-bit differences), so levels agree to rounding
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(got.get(), use("numpy")(qsgd)(x, 4, rng=1), rtol=1e-6)
    for y in (rtop_k(xd, 30, 90, rng=3), rand_k(xd, 30, rng=4)):
        assert isinstance(y, cp.ndarray)
        assert (y != 0).sum(axis=1).get().tolist() == [30] * 4
    y = rtop_k(xd, 30, 90, rng=3).get()
    top90 = use("numpy")(top_k)(x, 90)
    assert np.all((y == 0) | (y == top90))  # kept entries come from the top-90 set, unscaled


@gpu
@pytest.mark.gpu
def test_mix_keeps_device_arrays_on_the_device():
    cp = _cp()
    from simcomm.topology import complete, exponential, mix, ring

    X = np.random.default_rng(7).standard_normal((80, 33))
    for topo in (ring(80), exponential(80), complete(80)):  # shifts, shifts, FFT
        got = mix(topo, cp.asarray(X))
        assert isinstance(got, cp.ndarray)
        with use("numpy"):
            np.testing.assert_allclose(got.get(), mix(topo, X), rtol=1e-12, atol=1e-14)


@gpu
@pytest.mark.gpu
def test_ef_update_runs_on_the_device():
    """One EF-SGD step with the state on the device: same selection and memory as numpy, theta to rounding."""
    cp = _cp()
    from simcomm.compress import RTopK, TopK
    from simcomm.optim import ef_init, ef_update

    rng = np.random.default_rng(9)
    theta0, grads = rng.standard_normal(4000), rng.standard_normal((8, 4000))
    for comp in (TopK(40), RTopK(40, 120)):
        s_h, info_h = ef_update(ef_init(theta0, 8), grads, lr=0.1, compressor=comp, rng=3, backend="numpy")
        s_d, info_d = ef_update(ef_init(cp.asarray(theta0), 8), cp.asarray(grads), lr=0.1, compressor=comp, rng=3)
        assert isinstance(s_d.x, cp.ndarray) and isinstance(s_d.residual, cp.ndarray)
        np.testing.assert_array_equal(cp.asnumpy(info_d.idx), info_h.idx)
        np.testing.assert_array_equal(s_d.residual.get(), s_h.residual)
        np.testing.assert_allclose(s_d.x.get(), s_h.x, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(info_d.comp_error.get(), info_h.comp_error, rtol=1e-9)
