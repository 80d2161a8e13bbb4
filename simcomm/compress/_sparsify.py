r"""Sparsifiers: top-k, rand-k and rTop-k, batched over leading axes, and their message cost.

Every function acts on the last axis of ``x`` (length ``d``) and treats the leading axes as a batch
of independent vectors. Randomness comes only from the ``rng`` argument: the functions draw uniforms
from it and hand them to the backend's selection kernels, so the ``numpy`` and ``numba`` backends
return identical results on the same generator state.

Message cost (:func:`message_bits`): a message with ``k`` kept coordinates costs ``32 k`` bits of
values plus the cheaper of ``k`` indices of :math:`\lceil\log_2 d\rceil` bits each or a
``d``-bit bitmap. The same cost applies to all three sparsifiers (rand-k's indices are counted too:
the encoding assumes no randomness shared with the receiver).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import array_namespace, backend_for, framework_arrays

__all__ = ["top_k", "top_k_indices", "rand_k", "rtop_k", "message_bits", "index_bits"]


def _rows(x, k: int, name: str, check: bool = True) -> tuple[np.ndarray, int]:
    """Validate ``x`` and ``k``; return ``x`` as a C-contiguous (m, d) float array and ``d``.

    ``check=False`` leaves the finiteness check to the caller (the selection kernel reads every entry anyway).
    """
    xp = array_namespace(x)
    x = xp.asarray(x)
    if xp.iscomplexobj(x):
        raise UserError(f"{name}: x is complex; sparsify real vectors (pass x.real and x.imag separately)")
    if x.ndim == 0:
        raise UserError(f"{name}: x must have at least one axis (the d coordinates), got a scalar")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    d = x.shape[-1]
    _check_k(k, d, name)
    if check and x.size:
        # min/max propagate NaN and expose +-inf in two fast reductions without a temporary array.
        lo, hi = x.min(), x.max()
        if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
            _nonfinite(name)
    return xp.ascontiguousarray(x.reshape(-1, d)), d


def _nonfinite(name: str):
    raise UserError(f"{name}: x contains NaN or inf; pass finite values")


def _dense_out(out, x2, shape, name: str):
    """The (m, d) result buffer: a new array, or ``out`` checked (shape, dtype, C order, no overlap with x)."""
    xp = array_namespace(x2)
    if out is None:
        return xp.empty_like(x2)
    if (not isinstance(out, type(x2)) or out.shape != shape or out.dtype != x2.dtype
            or not out.flags.c_contiguous or not getattr(out.flags, "writeable", True)):
        raise UserError(f"{name}: out must be a writeable C-contiguous {x2.dtype} array of shape {tuple(shape)}, "
                        f"got {getattr(out, 'dtype', type(out).__name__)} {tuple(getattr(out, 'shape', ()))}")
    if xp.may_share_memory(out, x2):
        raise UserError(f"{name}: out overlaps x; pass a separate buffer (top_k cannot work in place)")
    return out.reshape(x2.shape)


def _require_rng(rng, name: str):
    if rng is None:  # default_rng(None) would draw fresh OS entropy: results could not be reproduced
        raise UserError(f"{name}: pass rng= (a seed or a numpy Generator); it draws random numbers and never "
                        "falls back to an unseeded generator")
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng < 0:
        raise UserError(f"{name}: rng = {rng} is not a seed; pass a non-negative integer or a numpy Generator")
    return rng


def _check_int(v, name: str, what: str = "k") -> int:
    """``v`` as an int if it is an integer >= 1, else a one-line error naming ``what``."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise UserError(f"{name}: {what} = {v!r} is not allowed; use an integer {what} >= 1")
    return int(v)


def _check_k(k, d: int, name: str) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise UserError(f"{name}: k must be an integer, got {k!r}")
    if not 1 <= k <= d:
        raise UserError(f"{name}: k = {k} is out of range; use 1 <= k <= d = {d}")


def _scatter(x2: np.ndarray, idx: np.ndarray, shape, scale: float = 1.0) -> np.ndarray:
    """Dense result: ``x2`` on ``idx`` (times ``scale``), zero elsewhere, reshaped to ``shape``."""
    xp = array_namespace(x2)
    if xp is not np:  # device arrays: one gather and one scatter by fancy indexing
        out = xp.zeros_like(x2)
        rows = xp.arange(x2.shape[0])[:, None]
        vals = x2[rows, idx]
        out[rows, idx] = vals * scale if scale != 1.0 else vals
        return out.reshape(shape)
    # flat indices: one take and one put, cheaper than the (m, k) index grids of take/put_along_axis
    m, d = x2.shape
    flat = (idx + np.arange(0, m * d, d, dtype=np.int64)[:, None]).reshape(-1)
    out = np.zeros_like(x2)
    vals = x2.reshape(-1)[flat]
    out.reshape(-1)[flat] = vals * scale if scale != 1.0 else vals
    return out.reshape(shape)


@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def top_k_indices(x, k: int) -> np.ndarray:
    r"""Indices of the ``k`` largest :math:`|x_j|` along the last axis, ascending.

    Ties are broken by the lower index, so every backend returns the same set.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Finite values.
    k : int
        Number of coordinates kept, ``1 <= k <= d``.

    Returns
    -------
    numpy.ndarray of int64, shape (..., k)

    Raises
    ------
    UserError
        If ``k`` is out of range or ``x`` has NaN or inf.

    Examples
    --------
    >>> top_k_indices([3.0, -1.0, -5.0, 2.0], 2).tolist()
    [0, 2]
    """
    x = array_namespace(x).asarray(x)
    x2, d = _rows(x, k, "top_k", check=False)
    idx, finite = backend_for(None, x2).topk_select(x2, int(k), None)  # checks finiteness in its pass
    if not finite:
        _nonfinite("top_k")
    return idx.reshape(x.shape[:-1] + (k,))


@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def top_k(x, k: int, *, out=None) -> np.ndarray:
    r"""Top-k sparsifier: keep the ``k`` entries of largest magnitude, zero the rest.

    .. math:: \mathrm{top}_k(x)_j = x_j \,\mathbb{1}\{j \in T_k(x)\},

    where :math:`T_k(x)` holds the ``k`` largest :math:`|x_j|`; ties are broken by the lower index.
    Deterministic and biased; :math:`\|x - \mathrm{top}_k(x)\|^2 \le (1 - k/d)\|x\|^2`.
    A message costs :func:`message_bits` ``(k, d)`` bits.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Finite values; leading axes are a batch.
    k : int
        Number of coordinates kept, ``1 <= k <= d``.
    out : numpy.ndarray, optional
        Preallocated result: C-contiguous, the shape and float dtype of ``x`` (float64 for integer
        input), not overlapping ``x``. Reusing one saves the allocation; its contents are unspecified
        if an error is raised.

    Returns
    -------
    numpy.ndarray, same shape as ``x``
        ``out`` when given.

    Raises
    ------
    UserError
        If ``k`` is out of range, ``x`` has NaN or inf, or ``out`` does not fit.

    See Also
    --------
    rtop_k, rand_k, message_bits

    Examples
    --------
    >>> top_k([3.0, -1.0, -5.0, 2.0], 2).tolist()
    [3.0, 0.0, -5.0, 0.0]
    >>> top_k([1.0, 1.0, 1.0], 2).tolist()  # ties go to the lower index
    [1.0, 1.0, 0.0]
    """
    x = array_namespace(x).asarray(x)
    x2, d = _rows(x, k, "top_k", check=False)
    dense = _dense_out(out, x2, x.shape, "top_k")
    # one pass: the selection checks finiteness and writes the dense result (x on the top k, +0.0 elsewhere)
    _, finite = backend_for(None, x2).topk_select(x2, int(k), dense)
    if not finite:
        _nonfinite("top_k")
    return out if out is not None else dense.reshape(x.shape)


@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def rand_k(x, k: int, *, rng, scale: bool = True) -> np.ndarray:
    r"""Rand-k sparsifier: keep ``k`` coordinates chosen uniformly without replacement.

    With ``scale=True`` the kept entries are multiplied by :math:`d/k`, so that
    :math:`\mathbb{E}[C(x)] = x` and :math:`\mathbb{E}\|C(x) - x\|^2 = (d/k - 1)\|x\|^2`;
    ``scale=False`` is the plain mask (:math:`\mathbb{E}[C(x)] = (k/d)\,x`). Each row draws its own
    subset (Floyd's algorithm, O(k) per row) from ``k`` uniforms taken from ``rng``.
    A message costs :func:`message_bits` ``(k, d)`` bits.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Finite values; leading axes are a batch.
    k : int
        Number of coordinates kept, ``1 <= k <= d``.
    rng : numpy.random.Generator or seed
        Source of randomness (anything :func:`numpy.random.default_rng` accepts).
    scale : bool, default True
        Multiply the kept entries by ``d / k`` (unbiased).

    Returns
    -------
    numpy.ndarray, same shape as ``x``

    Raises
    ------
    UserError
        If ``k`` is out of range or ``x`` has NaN or inf.

    Examples
    --------
    >>> y = rand_k([1.0, 2.0, 3.0, 4.0], 2, rng=0)
    >>> int((y != 0).sum())
    2
    >>> bool(np.all(np.isin(y[y != 0], [2.0, 4.0, 6.0, 8.0])))  # kept entries times d/k = 2
    True
    """
    rng = np.random.default_rng(_require_rng(rng, "rand_k"))
    x = array_namespace(x).asarray(x)
    x2, d = _rows(x, k, "rand_k")
    be = backend_for(None, x2)
    if array_namespace(x2) is not np:  # on the device: the k largest of d counter uniforms per row
        idx = be.randk_indices(x2, int(k), int(rng.integers(0, 2**64, dtype=np.uint64)))
        return _scatter(x2, idx, x.shape, d / k if scale else 1.0)
    u = rng.random((x2.shape[0], int(k)))
    idx = be.floyd_sample(u, d)
    return _scatter(x2, idx, x.shape, d / k if scale else 1.0)


@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def rtop_k(x, k: int, r: int, *, rng) -> np.ndarray:
    r"""rTop-k sparsifier: keep a uniformly random ``k``-subset of the top-``r`` coordinates.

    .. math:: \mathrm{rTop}_k(x)_j = x_j \,\mathbb{1}\{j \in U\},\quad
              U \sim \mathrm{Uniform}\{k\text{-subsets of } T_r(x)\},

    unscaled, as in the SGD version of rTop-k (rtopk.md B1, [S]). ``r = k`` is :func:`top_k`
    exactly; ``r = d`` is unscaled :func:`rand_k` (on the same ``rng`` state, the same subset).
    :math:`\mathbb{E}[\mathrm{rTop}_k(x)] = (k/r)\,\mathrm{top}_r(x)` and
    :math:`\mathbb{E}\|x - \mathrm{rTop}_k(x)\|^2 = \|x\|^2 - (k/r)\|\mathrm{top}_r(x)\|^2
    \le (1 - k/d)\|x\|^2` (rtopk.md B2, [N]). Ties in the top-r set go to the lower index.
    A message costs :func:`message_bits` ``(k, d)`` bits.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Finite values; leading axes are a batch.
    k : int
        Number of coordinates kept, ``1 <= k <= r``.
    r : int
        Size of the top set the ``k`` coordinates are drawn from, ``k <= r <= d``.
    rng : numpy.random.Generator or seed
        Source of randomness.

    Returns
    -------
    numpy.ndarray, same shape as ``x``

    Raises
    ------
    UserError
        If ``k`` or ``r`` is out of range or ``x`` has NaN or inf.

    Examples
    --------
    >>> x = [5.0, 0.1, -4.0, 0.2, 3.0]
    >>> rtop_k(x, 2, 2, rng=0).tolist() == top_k(x, 2).tolist()
    True
    >>> set(map(int, (rtop_k(x, 2, 3, rng=1) != 0).nonzero()[0])) <= {0, 2, 4}
    True
    """
    rng = np.random.default_rng(_require_rng(rng, "rtop_k"))
    x = array_namespace(x).asarray(x)
    # the selection checks finiteness in its own pass over x (as top_k's does)
    x2, d = _rows(x, k, "rtop_k", check=False)
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
        raise UserError(f"rtop_k: r must be an integer, got {r!r}")
    if not k <= r <= d:
        raise UserError(f"rtop_k: r = {r} is out of range; use k = {k} <= r <= d = {d}")
    xp = array_namespace(x2)
    # on the host Floyd's uniforms, on the device one counter key the k-subset is drawn from there
    u = rng.random((x2.shape[0], int(k))) if xp is np else int(rng.integers(0, 2**64, dtype=np.uint64))
    dense = xp.empty_like(x2)
    # one kernel: the top-r selection with its finiteness flag, the k-subset and the dense result
    _, finite = backend_for(None, x2).rtopk_indices(x2, int(k), int(r), u, dense)
    if not finite:
        _nonfinite("rtop_k")
    return dense.reshape(x.shape)


def index_bits(d: int) -> int:
    r"""Bits of one coordinate index, :math:`\lceil \log_2 d \rceil`.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 1``.

    Returns
    -------
    int

    Examples
    --------
    >>> index_bits(1024), index_bits(1025), index_bits(1)
    (10, 11, 0)
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise UserError(f"d must be an integer >= 1, got {d!r}")
    return int(d - 1).bit_length()


def message_bits(k: int, d: int, *, value_bits: int = 32) -> int:
    r"""Bits of one sparse message with ``k`` kept coordinates out of ``d``.

    Encoding: ``k`` values of ``value_bits`` bits, plus the positions as ``k`` indices of
    :math:`\lceil\log_2 d\rceil` bits or as a ``d``-bit bitmap, whichever is cheaper:

    .. math:: B(k, d) = k \cdot b_v + \min(k \lceil \log_2 d \rceil,\ d).

    Parameters
    ----------
    k : int
        Kept coordinates, ``1 <= k <= d``.
    d : int
        Dimension.
    value_bits : int, default 32
        Bits per transmitted value (32 for float32).

    Returns
    -------
    int

    Examples
    --------
    >>> message_bits(10, 1024)          # 10 * (32 + 10)
    420
    >>> message_bits(500, 1024)         # the bitmap is cheaper: 500 * 32 + 1024
    17024
    """
    _check_int(d, "message_bits", "d")  # the dimension first: a bad d is blamed as d, not as k
    _check_k(k, d, "message_bits")
    return int(k) * int(value_bits) + min(int(k) * index_bits(d), int(d))
