r"""Counter-based Gaussian noise on the GPU (formula in :mod:`simcomm.backends._numpy.noise`).

Every element draws its two uniforms from its node's key and its own counter, in registers, so a step's
noise costs one read and one write of ``G`` and no host-to-device copy. Values agree with the numpy
reference to the last few ulps (``log`` and ``cos`` of CUDA's and the C library's maths differ there).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

__all__ = ["add_counter_normals"]

_ADD = cp.ElementwiseKernel(
    "raw uint64 keys, int64 d, uint64 step, float64 sigma", "T g",
    r"""
    long long row = i / d, col = i - row * d;
    unsigned long long c = step * (unsigned long long)d + (unsigned long long)col;
    unsigned long long key = keys[row];
    double u[2];
    for (int t = 0; t < 2; ++t) {
        unsigned long long z = key + (2ULL * c + (unsigned long long)t + 1ULL) * 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z = z ^ (z >> 31);
        u[t] = (double)(z >> 11) * 1.1102230246251565e-16;
    }
    double z = sqrt(-2.0 * log(1.0 - u[0])) * cos(6.283185307179586 * u[1]);
    g = g + sigma * z;
    """,
    "simcomm_add_counter_normals", options=("--fmad=false",))


def add_counter_normals(G, keys, step: int, sigma: float):
    """``G[i, j] += sigma * z_ij`` in place, ``z`` the counter normals of node ``i`` at ``step``."""
    if not isinstance(G, cp.ndarray):
        from simcomm.backends._numpy.noise import add_counter_normals as host_add

        return host_add(G, np.asarray(cp.asnumpy(keys) if isinstance(keys, cp.ndarray) else keys), step, sigma)
    kd = cp.asarray(keys, dtype=cp.uint64)
    _ADD(kd, np.int64(G.shape[1]), np.uint64(step), np.float64(sigma), G)
    return G
