r"""Counter-based Gaussian noise, numpy reference: a normal for (node, step, coordinate) without a stream.

Node ``i`` owns a 64-bit ``keys[i]``. At step ``k`` coordinate ``j`` of its ``d``-vector uses the
counter :math:`c = k d + j` and the two uniforms

.. math::  u_1 = U(\mathrm{key}_i, 2c), \qquad u_2 = U(\mathrm{key}_i, 2c + 1),

where :math:`U(\mathrm{key}, t)` is uniform number ``t`` (53 bits) of the SplitMix64 counter stream of
:func:`simcomm.backends._numpy.quant.counter_uniforms`. The Box-Muller transform (cosine branch)

.. math::  z = \sqrt{-2\log(1 - u_1)}\,\cos(2\pi u_2)

is a standard normal (:math:`1 - u_1 \in (0, 1]` is exact for a 53-bit :math:`u_1`, so the logarithm is
finite). Any node, step or coordinate is computed on its own, in any order and on any device: the GPU
draws a run's noise where the state lives, instead of copying ``n d`` host floats per step, and a real
process holding node ``i`` reproduces its row from ``keys[i]`` alone. The numba and CuPy backends use
the same formula; results agree to the last bit of the libm ``log``/``cos`` they call.
"""

from __future__ import annotations

import numpy as np

__all__ = ["add_counter_normals"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * np.pi
_BLOCK = 1 << 20  # uint64 counters per temporary: bounded memory for (n, d) of any size


def _uniforms(keys: np.ndarray, t: np.ndarray) -> np.ndarray:
    # U(key, t): z = key + (t + 1) * GAMMA (wrapping), SplitMix64 finaliser, top 53 bits * 2**-53;
    # the same operations as counter_uniforms, broadcast over (rows, columns)
    with np.errstate(over="ignore"):
        z = keys[:, None] + (t + np.uint64(1))[None, :] * _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def add_counter_normals(G: np.ndarray, keys: np.ndarray, step: int, sigma: float) -> np.ndarray:
    r"""Add ``sigma`` times the counter normals of ``step`` to ``G`` in place (see the module doc).

    Parameters
    ----------
    G : ndarray, shape (n, d), float64
        One row per node; updated in place.
    keys : ndarray of uint64, shape (n,)
        Node ``i``'s counter key.
    step : int
        Step ``k >= 0``; coordinates use the counters ``k d .. k d + d - 1``.
    sigma : float
        Standard deviation.

    Returns
    -------
    ndarray
        ``G``.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.backends._numpy.quant import counter_uniforms
    >>> G = add_counter_normals(np.zeros((1, 2)), np.array([7], dtype=np.uint64), 3, 1.0)
    >>> u = counter_uniforms(7, 4, start=2 * 3 * 2)   # u1, u2 of coordinate 0, then of coordinate 1
    >>> bool(G[0, 1] == np.sqrt(-2.0 * np.log(1.0 - u[2])) * np.cos(2 * np.pi * u[3]))
    True
    """
    n, d = G.shape
    keys = np.asarray(keys, dtype=np.uint64)
    base = np.uint64(step) * np.uint64(d)
    cols = max(1, min(d, _BLOCK))
    rows = max(1, _BLOCK // cols)
    for c0 in range(0, d, cols):
        c1 = min(d, c0 + cols)
        c = base + np.arange(c0, c1, dtype=np.uint64)
        t1 = np.uint64(2) * c
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            u1 = _uniforms(keys[r0:r1], t1)
            u2 = _uniforms(keys[r0:r1], t1 + np.uint64(1))
            z = np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(_TWO_PI * u2)
            G[r0:r1, c0:c1] += sigma * z
    return G
