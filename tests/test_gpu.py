"""CuPy backend: same kernel names as numpy (checked everywhere), parity on shared noise (GPU only)."""

import ast
from pathlib import Path

import numpy as np
import pytest

from simcomm.backends import available_backends, get_backend

BACKENDS = Path(__file__).resolve().parents[1] / "simcomm" / "backends"


def _exported(folder: Path) -> set[str]:
    names = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                names |= {ast.literal_eval(e) for e in node.value.elts}
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
    np.testing.assert_array_equal(npb.rtopk_indices(x, 20, 300, u), cpb.rtopk_indices(x, 20, 300, u))


@gpu
@pytest.mark.gpu
def test_quantizer_parity():
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    for dtype in (np.float32, np.float64):
        np.testing.assert_array_equal(npb.counter_uniforms(99, 1000, dtype), cpb.counter_uniforms(99, 1000, dtype).get())
        x = np.random.default_rng(1).standard_normal((8, 1000)).astype(dtype)
        norms = npb.row_norms(x)
        np.testing.assert_allclose(cpb.row_norms(x), norms, rtol=1e-12)
        for name, args in (("qsgd_quantize", (norms, 4)), ("ternary_quantize", (npb.row_absmax(x),)),
                           ("stochastic_round_quantize", (0.25,)), ("bernoulli_quantize", (0.3,))):
            a = getattr(npb, name)(x, *args, 12345, np.empty_like(x))
            b = getattr(cpb, name)(x, *args, 12345, np.empty_like(x))
            np.testing.assert_allclose(b, a, rtol=1e-6 if dtype == np.float32 else 1e-12)


@gpu
@pytest.mark.gpu
def test_gossip_parity():
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    X = np.random.default_rng(2).standard_normal((64, 300))
    shifts, weights = np.array([0, 1, 2, 4, 8, 16, 32]), np.full(7, 1 / 7)
    np.testing.assert_allclose(cpb.shift_mix(X, shifts, weights), npb.shift_mix(X, shifts, weights), rtol=1e-12)
    import scipy.sparse as sp

    W = sp.random(64, 64, density=0.1, random_state=3, format="csr")
    args = (W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data)
    np.testing.assert_allclose(cpb.csr_mix(*args, X), npb.csr_mix(*args, X), rtol=1e-12)


@gpu
@pytest.mark.gpu
def test_ef_parity():
    npb, cpb = get_backend("numpy"), get_backend("cupy")
    rng = np.random.default_rng(4)
    G, M = rng.standard_normal((16, 5000)), rng.standard_normal((16, 5000))
    P_ref, top_ref, sq_ref = npb.ef_accumulate_topr(G, M, 50)
    P_gpu, top_gpu, sq_gpu = cpb.ef_accumulate_topr(G, M, 50)
    np.testing.assert_array_equal(top_gpu, top_ref)
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
