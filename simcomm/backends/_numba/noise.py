r"""Counter-based Gaussian noise, numba: the numpy backend's formula, one pass over ``G`` in parallel.

Same counters, uniforms (bit for bit) and Box-Muller transform as
:mod:`simcomm.backends._numpy.noise`; ``log``/``cos``/``sqrt`` come from LLVM's libm calls instead
of numpy's SIMD loops, so the two backends agree to the last ulp or so (allclose), not bitwise.
Each parallel task owns a block of columns of one row: it walks the counter stream of that row,
two uniforms per coordinate, and never materialises them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from simcomm.backends._numba.quant import _GAMMA, _uniform_at

__all__ = ["add_counter_normals"]

_TWO_GAMMA = np.uint64((2 * 0x9E3779B97F4A7C15) % 2**64)
_SHIFT = np.uint64(11)  # 53-bit uniforms (float64)
_SCALE = 1.1102230246251565e-16  # 2**-53
_TWO_PI = 2.0 * math.pi
_BLOCK = 1 << 14  # columns per task
_SERIAL_MAX = 1 << 16  # below this many elements one thread is faster (thread start-up ~100 us)


@njit(inline="always")
def _task(G, keys, base, sigma, nb, t):
    r = t // nb
    c0 = (t % nb) * _BLOCK
    c1 = min(G.shape[1], c0 + _BLOCK)
    # _uniform_at finalises its argument: uniform number t of the stream is _uniform_at(key + (t + 1) GAMMA),
    # so u1 of coordinate c = base + c0 (t = 2c) starts at key + (2c + 1) GAMMA and u2 is one GAMMA on
    z = keys[r] + (np.uint64(2) * (base + np.uint64(c0)) + np.uint64(1)) * _GAMMA
    g = G[r]
    for j in range(c0, c1):
        u1 = _uniform_at(z, _SHIFT, _SCALE)
        u2 = _uniform_at(z + _GAMMA, _SHIFT, _SCALE)
        g[j] += sigma * (math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2))
        z += _TWO_GAMMA


# two module-level drivers around one body (numba's cache keys by name, not by the parallel flag)
@njit(cache=True, parallel=True)
def _add_par(G, keys, base, sigma):
    nb = (G.shape[1] + _BLOCK - 1) // _BLOCK
    for t in prange(G.shape[0] * nb):
        _task(G, keys, base, sigma, nb, t)
    return G


@njit(cache=True)
def _add_ser(G, keys, base, sigma):
    nb = (G.shape[1] + _BLOCK - 1) // _BLOCK
    for t in range(G.shape[0] * nb):
        _task(G, keys, base, sigma, nb, t)
    return G


def add_counter_normals(G: np.ndarray, keys: np.ndarray, step: int, sigma: float) -> np.ndarray:
    r"""Add ``sigma`` times the counter normals of ``step`` to ``G`` in place; see the numpy backend.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.backends._numpy.noise import add_counter_normals as ref
    >>> keys = np.array([1, 2], dtype=np.uint64)
    >>> a, b = add_counter_normals(np.zeros((2, 3)), keys, 5, 0.5), ref(np.zeros((2, 3)), keys, 5, 0.5)
    >>> bool(np.allclose(a, b, rtol=1e-14, atol=0))
    True
    """
    n, d = G.shape
    if n == 0 or d == 0:
        return G
    base = np.uint64((int(step) * d) % 2**64)
    kernel = _add_par if n * d >= _SERIAL_MAX else _add_ser
    kernel(G, np.ascontiguousarray(keys, dtype=np.uint64), base, np.float64(sigma))
    return G
