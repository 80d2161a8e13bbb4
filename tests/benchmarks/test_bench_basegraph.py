"""Speed of the Base-(k+1) graph gossip and of fastest_mixing against the routes users take without simcomm.

* One period of gossip of ``base_graph(n, k)`` on ``X`` (n x d) with the CSR kernel (sparse rows, at
  most k + 1 nonzeros per row) vs dense ``W @ X`` per matrix (float64 BLAS), and vs the copy-bandwidth
  floor (one ``np.copyto`` of X per matrix: every step must at least read X and write the result).
  The issue's size is n = 4096, d = 10^4 (the default; a dense matmul then takes seconds on 2 cores);
  set SIMCOMM_BENCH_BASE_D to shrink d.
* fastest_mixing on a ring of 256 nodes (symmetry-reduced LP, the default for circulants) vs the
  general SDP on the same ring (CLARABEL up to n = 48); the general SDP is timed at
  SIMCOMM_BENCH_FMMC_SDP_N (default 32) because at n = 256 (SCS) it takes many minutes (its
  iteration log shows progress: ``fastest_mixing(..., method="sdp", progress=True)``).
"""

import os

import numpy as np
import pytest

from simcomm.topology import base_graph, fastest_mixing, mix, rho, ring, sparse_matrix
from tests.benchmarks._timing import best_time as _best

N = int(os.environ.get("SIMCOMM_BENCH_BASE_N", "4096"))
D = int(os.environ.get("SIMCOMM_BENCH_BASE_D", "10000"))
SDP_N = int(os.environ.get("SIMCOMM_BENCH_FMMC_SDP_N", "32"))




@pytest.mark.parametrize("k", [1, 4])
def test_bench_base_graph_period_vs_dense(benchmark, k):
    topo = base_graph(N, k)
    tau = topo.period
    X = np.random.default_rng(7).standard_normal((N, D))

    def period():
        Y = X
        for t in range(tau):
            Y = mix(topo, Y, t)  # numba CSR kernel, parallel over column slabs
        return Y

    period()  # compile
    benchmark.pedantic(period, rounds=1, iterations=1)
    t_sparse, Y = _best(period, 2)
    np.testing.assert_allclose(Y, np.broadcast_to(X.mean(axis=0), Y.shape), atol=1e-10)  # exact averaging
    # baseline: dense W @ X for ONE matrix (the rest of the period costs the same each)
    W = sparse_matrix(topo, 0).toarray()
    t_dense, Yd = _best(lambda: W @ X, 1)
    np.testing.assert_allclose(Yd, mix(topo, X, 0), rtol=1e-12, atol=1e-12)
    W = Yd = None  # free the dense arrays before the next measurements
    out = np.empty_like(X)
    t_copy, _ = _best(lambda: np.copyto(out, X), 3)
    per_matrix = t_sparse / tau
    # diagnostic: the numba row-parallel CSR kernel on the same layer, which csr_mix now uses at
    # n = 4096 (column slabs narrower than 64 columns read X with an 80 KB stride: 6.9-17x the floor).
    from simcomm.backends._numba import gossip

    Wl = sparse_matrix(topo, 0)
    args = (Wl.indptr.astype(np.int64), Wl.indices.astype(np.int64), Wl.data, X, out)
    gossip._csr_mix(*args)
    t_row, _ = _best(lambda: gossip._csr_mix(*args), 3)
    t_mix0, _ = _best(lambda: mix(topo, X, 0), 3)
    benchmark.extra_info.update(
        ratio=t_dense / per_matrix,
        baseline=f"dense W @ X per matrix, n={N}, d={D}, k={k}",
        target=">= 20x",
        period=tau,
        seconds_per_period=t_sparse,
        vs_copy_floor=per_matrix / t_copy,
        copy_floor_target="<= 3x",
        layer0_mix_vs_copy=t_mix0 / t_copy,
        layer0_row_kernel_vs_copy=t_row / t_copy,
    )


def test_bench_fastest_mixing_ring(benchmark):
    n = 256
    benchmark.pedantic(lambda: fastest_mixing(ring(n)), rounds=1, iterations=1)
    t_lp, (topo, info) = _best(lambda: fastest_mixing(ring(n), return_info=True), 3)
    c = np.cos(2 * np.pi / n)
    assert rho(topo) == pytest.approx((1 + c) / (3 - c), abs=1e-8)  # closed form, theory.fmmc
    t_lp_small, _ = _best(lambda: fastest_mixing(ring(SDP_N)), 3)
    t_sdp, (sdp, sinfo) = _best(lambda: fastest_mixing(ring(SDP_N), method="sdp", return_info=True), 1)
    c = np.cos(2 * np.pi / SDP_N)
    assert rho(sdp) == pytest.approx((1 + c) / (3 - c), abs=1e-6)
    benchmark.extra_info.update(
        ratio=t_sdp / t_lp_small,
        baseline=f"general SDP ({sinfo.solver}, tol {sinfo.tolerance:g}) vs symmetric LP, ring({SDP_N})",
        target="ring(256) < 30 s",
        seconds_ring256=t_lp,
        seconds_sdp=t_sdp,
        sdp_n=SDP_N,
    )
