"""Speed of the topology fast paths against the routes users take without simcomm.

* rho of the static exponential graph: FFT of the first row vs networkx graph -> dense matrix ->
  numpy eigenvalues. The dense route is O(n^3): at n = 4096 it takes minutes on a 2-core machine,
  so the default run uses n = 1024; set SIMCOMM_BENCH_RHO_N=4096 for the issue's size.
* rho at n = 10^6: time and peak traced memory (O(n): a few arrays of length n).
* gossip: shift-based mixing (numba kernel) vs dense W @ X (float64 BLAS).
"""

import os
import time
import tracemalloc

import networkx as nx
import numpy as np
import pytest

from simcomm.topology import exponential, mix, mixing_matrix, rho
from tests.benchmarks._timing import best_time as _best

RHO_N = int(os.environ.get("SIMCOMM_BENCH_RHO_N", "1024"))




def _networkx_dense_rho(n: int) -> float:
    """The route users take today: networkx DiGraph -> dense W -> numpy eigenvalues -> 2nd largest |lambda|."""
    hops = [1 << t for t in range((n - 1).bit_length())]
    w = 1.0 / (len(hops) + 1)
    G = nx.DiGraph()
    for i in range(n):
        G.add_edge(i, i, weight=w)
        for h in hops:
            G.add_edge(i, (i + h) % n, weight=w)
    W = nx.to_numpy_array(G, nodelist=range(n))
    lam = np.sort(np.abs(np.linalg.eigvals(W)))
    return float(lam[-2])  # W is normal: rho = largest |lambda| after the consensus eigenvalue 1


def test_bench_rho_exponential_vs_networkx_dense(benchmark):
    t0 = time.perf_counter()
    slow = _networkx_dense_rho(RHO_N)
    t_base = time.perf_counter() - t0
    benchmark.pedantic(lambda: rho(exponential(RHO_N)), rounds=20, iterations=1)
    t_fast, fast = _best(lambda: rho(exponential(RHO_N)), 20)
    assert fast == pytest.approx(slow, abs=1e-10)
    benchmark.extra_info.update(
        ratio=t_base / t_fast,
        baseline=f"networkx DiGraph + dense W + np.linalg.eigvals, n={RHO_N}",
        target=">= 100x at n=4096",
    )


def test_bench_rho_exponential_million(benchmark):
    n = 10**6
    tracemalloc.start()
    value = rho(exponential(n))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert value == pytest.approx(1 - 2 / 21, abs=1e-12)  # even n: equality with the C1 bound
    assert peak < 64 * 8 * n  # O(n): a few length-n arrays, far from the 8 n^2 bytes of a dense W
    benchmark.pedantic(lambda: rho(exponential(n)), rounds=5, iterations=1)
    t_fast, _ = _best(lambda: rho(exponential(n)), 5)
    benchmark.extra_info.update(seconds=t_fast, peak_bytes=int(peak), bytes_per_node=peak / n)


def test_bench_shift_mix_vs_dense(benchmark):
    # n = 256 nodes, d = 20000 coordinates (issue 3 uses d up to 1e5; kept smaller for the 2-core box)
    n, d = 256, 20_000
    topo = exponential(n)
    rng = np.random.default_rng(12345)
    X = rng.standard_normal((n, d))
    W = mixing_matrix(topo)
    mix(topo, X[:, :8])  # compile / load the cache outside the timing (numba: the default backend)
    t_base, dense = _best(lambda: W @ X, 5)
    benchmark.pedantic(lambda: mix(topo, X), rounds=5, iterations=1)
    t_fast, fast = _best(lambda: mix(topo, X), 5)
    np.testing.assert_allclose(fast, dense, rtol=1e-12, atol=1e-12)
    benchmark.extra_info.update(ratio=t_base / t_fast,
                                baseline=f"dense W @ X (float64 BLAS), n={n}, d={d}, exponential graph")
