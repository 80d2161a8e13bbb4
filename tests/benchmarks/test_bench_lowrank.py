"""PowerSGD against numpy's matmul at the same shapes; natural dithering against the copy floor (issue 27).

Reported as ratios in one run, never wall-clock asserts:

* ``matmul_ratio`` = PowerSGD time / the time of its two products alone (``M @ Q`` and ``M^T @ P`` by
  batched ``np.matmul``, no orthogonalisation, no reconstruction): how much the QR and ``P Q'^T`` add;
* ``loop_ratio`` = a per-row Python loop of the same power iteration (``np.linalg.qr`` per matrix, what a
  user writes first) / PowerSGD's batched path;
* ``floor_ratio`` (natural dithering) = its time / the copy of the same array (x in, C(x) out).
"""

import numpy as np
import pytest

from simcomm.compress import NaturalDithering, PowerSGD
from tests.benchmarks._timing import best_time as _best

ROWS, M, N, RANK = 64, 250, 400, 4  # a 64 x 10^5 float32 batch, each row a 250 x 400 matrix


@pytest.fixture(scope="module")
def batch():
    return np.random.default_rng(12345).standard_normal((ROWS, M * N), dtype=np.float32)


def test_bench_powersgd_vs_numpy_matmul(benchmark, batch):
    c = PowerSGD(rank=RANK, rows=M)
    state = c.init(batch, rng=0)
    fast_fn = lambda: c.step(batch, state)[0]  # noqa: E731
    out = benchmark.pedantic(fast_fn, rounds=3, iterations=1)
    t_fast = _best(fast_fn, 3)[0]
    Mx = batch.reshape(ROWS, M, N)
    Q = state.Q.astype(np.float32)
    P = np.linalg.qr(Mx @ Q)[0]

    def products():
        return Mx @ Q, np.swapaxes(Mx, 1, 2) @ P

    t_mm = _best(products, 3)[0]

    def loop():
        res = np.empty_like(batch)
        for i in range(ROWS):
            p = np.linalg.qr(Mx[i] @ Q[i])[0]
            res[i] = (p @ (Mx[i].T @ p).T).reshape(-1)
        return res

    t_loop, ref = _best(loop, 2)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))
    benchmark.extra_info["baseline"] = "numpy matmul of the two products; a per-row Python loop"
    benchmark.extra_info["matmul_ratio"] = t_fast / t_mm
    benchmark.extra_info["loop_ratio"] = t_loop / t_fast


def test_bench_natural_dithering_vs_copy(benchmark, batch):
    c = NaturalDithering(8)
    rng = np.random.default_rng(1)
    fast_fn = lambda: c.apply(batch, rng=rng)  # noqa: E731
    out = benchmark.pedantic(fast_fn, rounds=3, iterations=1)
    t_fast = _best(fast_fn, 3)[0]
    dst = np.empty_like(batch)
    t_copy = _best(lambda: np.copyto(dst, batch), 5)[0]
    assert out.shape == batch.shape and np.isfinite(out).all()
    benchmark.extra_info["baseline"] = "np.copyto of the batch (the bandwidth floor)"
    benchmark.extra_info["floor_ratio"] = t_fast / t_copy
