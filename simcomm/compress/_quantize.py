r"""Unbiased random quantizers (URQs): QSGD, ternary, stochastic rounding, Bernoulli sparsification.

A URQ satisfies :math:`\mathbb{E}\,Q(v) = v` and :math:`\mathbb{E}\|Q(v)-v\|^2 \le \beta\|v\|^2`
(equivalently :math:`\mathbb{E}\|Q(v)\|^2 \le \alpha\|v\|^2` with :math:`\alpha = 1+\beta`); notes
``urq_delay.md`` B1 and table B3 ([N]: derived and Monte-Carlo checked, not quoted from the paper).

Each quantizer is a function ``q(x, param, *, rng)`` that quantizes every row ``x[..., :]``
independently (norms are taken along the last axis). Its worst-case variance factor
:math:`\beta(d)`, exact variance and bits per message belong to the matching
:class:`~simcomm.compress.Compressor` class (:class:`~simcomm.compress.QSGD`,
:class:`~simcomm.compress.Ternary`, :class:`~simcomm.compress.StochasticRound`,
:class:`~simcomm.compress.Bernoulli`), which applies the function with its parameter bound.

Randomness: one 64-bit key per call is drawn from ``rng``; coordinate ``i`` of the flattened batch uses
the ``i``-th uniform of a counter-based stream keyed by it (see :mod:`simcomm.backends._numpy.quant`),
so the numpy and numba backends agree bit for bit and the noise never depends on ``x``. Uniforms have
24 bits for float32 data and 53 bits for float64, so a rounding probability is realised to within
:math:`2^{-24}` (float32) or :math:`2^{-53}` (float64): below the data's own resolution.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import array_namespace, backend_for, framework_arrays

__all__ = ["qsgd", "ternary", "stochastic_round", "bernoulli_sparsify"]


def _prepare(x, name: str, check: bool = True):
    """Return ``(x2d, shape)``: a C-contiguous float32/float64 (rows, d) view, rejecting NaN/inf.

    ``check=False`` when the caller detects non-finite input itself from a row reduction (no extra pass).
    """
    xp = array_namespace(x)
    a = xp.asarray(x)
    if xp.iscomplexobj(a):
        _complex(name)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    if a.ndim == 0:
        raise UserError(f"{name}: x must have at least one axis (got a scalar); pass a 1-D vector or a batch")
    if a.size == 0:
        raise UserError(f"{name}: x is empty (shape {tuple(a.shape)}); pass vectors with d >= 1 coordinates")
    if check and not bool(xp.isfinite(a).all()):
        _nonfinite(name)
    shape = a.shape
    d = shape[-1]
    return xp.ascontiguousarray(a.reshape(-1, d)), shape


def _complex(name):
    raise UserError(f"{name}: x is complex; quantize real vectors (pass x.real and x.imag separately)")


def require_rng(rng, name: str):
    """Return ``rng`` unless it is ``None``: randomness is never drawn from an unseeded generator."""
    if rng is None:
        raise UserError(f"{name}: pass rng= (a seed or a numpy Generator); it draws random numbers and never "
                        "falls back to an unseeded generator")
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng < 0:
        raise UserError(f"{name}: rng = {rng} is not a seed; pass a non-negative integer or a numpy Generator")
    return rng


def _nonfinite(name):
    raise UserError(f"{name}: x contains NaN or inf; quantize finite vectors only")


def _out(out, a, shape):
    """The result buffer: a new array, or ``out`` checked (shape, dtype, contiguity; ``a`` itself or disjoint)."""
    if out is None:
        return array_namespace(a).empty_like(a)
    if out.shape != shape or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise UserError(f"out must be a C-contiguous {a.dtype} array of shape {shape}, got {out.dtype} {out.shape}")
    res = out.reshape(a.shape)
    # the kernels read an entry (or a row's, a bucket's statistics) before writing it, so x itself works
    # in place; a buffer that overlaps x at an offset would be read after it was written
    if isinstance(res, np.ndarray) and isinstance(a, np.ndarray) and np.may_share_memory(res, a) \
            and res.__array_interface__["data"][0] != a.__array_interface__["data"][0]:
        raise UserError("out overlaps x at an offset; pass a separate buffer (or x itself, to write in place)")
    return res


def _finite(v) -> bool:
    return bool(array_namespace(v).isfinite(v).all())


def _key(rng, name: str) -> int:
    return int(np.random.default_rng(require_rng(rng, name)).integers(0, 2**64, dtype=np.uint64))


def _check_s(s) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
        raise UserError(f"qsgd: s = {s!r} is not allowed; use an integer number of levels s >= 1")
    return int(s)


def _check_delta(delta) -> float:
    if not isinstance(delta, (int, float, np.floating, np.integer)) or not (delta > 0) or not math.isfinite(delta):
        raise UserError(f"stochastic_round: delta = {delta!r} is not allowed; use a finite grid step delta > 0")
    return float(delta)


def _check_p(p) -> float:
    if not isinstance(p, (int, float, np.floating, np.integer)) or not (0 < p <= 1):
        raise UserError(f"bernoulli_sparsify: p = {p!r} is not allowed; use a keep probability 0 < p <= 1")
    return float(p)


def _frac_var(t: np.ndarray) -> np.ndarray:
    """Sum over the last axis of f(1 - f), f the fractional part of t: the variance of unbiased rounding."""
    f = t - np.floor(t)
    return (f * (1.0 - f)).sum(axis=-1)


# --------------------------------------------------------------------------------------------- QSGD
@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def qsgd(x, s: int, *, rng, out=None) -> np.ndarray:
    r"""QSGD with ``s`` levels (Alistarh et al. 2017), 2-norm scaled.

    .. math:: Q(v)_i = \|v\|_2\,\mathrm{sign}(v_i)\,\ell_i/s,\qquad
              \ell_i = \lfloor r_i\rfloor + \mathrm{Bern}(r_i - \lfloor r_i\rfloor),\quad r_i = s|v_i|/\|v\|_2.

    Unbiased; exact variance :math:`(\|v\|^2/s^2)\sum_i p_i(1-p_i)` with :math:`p_i` the fractional part
    of :math:`r_i` (``QSGD(s).variance``); worst case :math:`\beta(d) = \min(d/s^2, \sqrt d/s)` (``QSGD(s).beta``).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to quantize; each row (last axis) is one message.
    s : int
        Number of levels, ``s >= 1`` (``s = 1`` is 2-norm-scaled ternary).
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype (saves the allocation).

    Returns
    -------
    numpy.ndarray
        ``Q(x)``, same shape and float dtype as ``x`` (float64 for integer input).

    Raises
    ------
    UserError
        If ``s < 1`` or ``x`` contains NaN/inf.

    Notes
    -----
    Encoding behind ``QSGD(s).bits(d) = 32 + d*ceil(log2(2s+1))``: a float32 norm and one signed level
    in ``{-s..s}`` per coordinate, fixed width (notes B3, "naive"; Elias coding would use fewer).

    Examples
    --------
    >>> import numpy as np
    >>> q = qsgd(np.array([3.0, -4.0]), 5, rng=0)   # s|v_i|/||v|| = 3, 4 are integers: no rounding
    >>> q.tolist()
    [3.0, -4.0]
    """
    s = _check_s(s)
    a, shape = _prepare(x, "qsgd", check=False)
    be = backend_for(None, a)
    norms = be.row_norms(a)
    if not _finite(norms):  # NaN/inf anywhere in a row makes its norm non-finite
        _nonfinite("qsgd")
    res = _out(out, a, shape)
    be.qsgd_quantize(a, norms, s, _key(rng, "qsgd"), res)
    return res.reshape(shape)


def _qsgd_variance(v, s: int) -> np.ndarray:
    s = _check_s(s)
    v = np.asarray(v, dtype=np.float64)
    n2 = (v * v).sum(axis=-1)
    nrm = np.sqrt(n2)
    safe = np.where(nrm > 0, nrm, 1.0)[..., None]
    return n2 / s**2 * _frac_var(s * np.abs(v) / safe)




# ------------------------------------------------------------------------------------------ ternary
@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def ternary(x, *, rng, out=None) -> np.ndarray:
    r"""Ternary quantization scaled by the infinity norm (TernGrad-type, no clipping).

    .. math:: Q(v)_i = \|v\|_\infty\,\mathrm{sign}(v_i)\,\xi_i,\qquad \xi_i\sim\mathrm{Bern}(|v_i|/\|v\|_\infty).

    Unbiased; exact variance :math:`\|v\|_\infty\|v\|_1 - \|v\|_2^2`; worst case
    :math:`\beta(d) = (\sqrt d - 1)/2` (the supremum of :math:`\|v\|_\infty\|v\|_1/\|v\|^2` is
    :math:`(1+\sqrt d)/2`, notes B3 [N]).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to quantize, one message per row.
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)`` with entries in ``{-m, 0, m}`` per row, ``m`` the row's infinity norm.

    Notes
    -----
    Encoding behind ``Ternary().bits(d) = 32 + 8*ceil(d/5)``: a float32 scale and five trits per byte
    (:math:`3^5 = 243 \le 256`), i.e. 1.6 bits per coordinate (entropy bound :math:`\log_2 3`).

    Examples
    --------
    >>> import numpy as np
    >>> ternary(np.array([2.0, -2.0, 0.0]), rng=0).tolist()   # |v_i| = m: kept with probability 1
    [2.0, -2.0, 0.0]
    """
    a, shape = _prepare(x, "ternary", check=False)
    be = backend_for(None, a)
    scales = be.row_absmax(a)
    if not _finite(scales):  # row_absmax is nan for a row holding NaN or inf
        _nonfinite("ternary")
    res = _out(out, a, shape)
    be.ternary_quantize(a, scales, _key(rng, "ternary"), res)
    return res.reshape(shape)


def _ternary_variance(v, param=None) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return np.abs(v).max(axis=-1) * np.abs(v).sum(axis=-1) - (v * v).sum(axis=-1)




# -------------------------------------------------------------------------------- stochastic rounding
@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def stochastic_round(x, delta: float, *, rng, out=None) -> np.ndarray:
    r"""Unbiased stochastic rounding to the grid :math:`\delta\mathbb{Z}`.

    .. math::

        Q(v)_i = \delta\bigl(\lfloor v_i/\delta\rfloor + \mathrm{Bern}(v_i/\delta - \lfloor v_i/\delta\rfloor)\bigr).

    Unbiased; exact variance :math:`\delta^2\sum_i f_i(1-f_i)`, :math:`f_i` the fractional part of
    :math:`v_i/\delta`, hence at most :math:`d\delta^2/4`. The grid does not scale with ``v``, so there is
    no relative bound: ``StochasticRound(delta).beta`` is ``inf`` (use the additive bound
    ``StochasticRound(delta).variance_bound(d) = d*delta**2/4``).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to round.
    delta : float
        Grid step, ``delta > 0``.
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)``, every entry an integer multiple of ``delta`` (up to float rounding of the product).

    Notes
    -----
    Encoding behind ``StochasticRound(delta).bits(d, span)``: a 32-bit integer offset (the smallest
    grid index) and ``ceil(log2(span/delta + 2))`` bits per coordinate, ``span`` the range
    ``max(v) - min(v)`` of the message; with ``span=None`` a 32-bit grid index per coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> stochastic_round(np.array([0.5, -1.0]), 0.5, rng=0).tolist()   # already on the grid
    [0.5, -1.0]
    """
    delta = _check_delta(delta)
    a, shape = _prepare(x, "stochastic_round")
    be = backend_for(None, a)
    res = _out(out, a, shape)
    be.stochastic_round_quantize(a, delta, _key(rng, "stochastic_round"), res)
    return res.reshape(shape)


def _sr_variance(v, delta: float) -> np.ndarray:
    delta = _check_delta(delta)
    return delta**2 * _frac_var(np.asarray(v, dtype=np.float64) / delta)


def _sr_bits(d, delta, span=None):
    if span is None:
        return 32 * d
    return 32 + d * math.ceil(math.log2(span / delta + 2))




# ---------------------------------------------------------------------------- Bernoulli sparsification
@framework_arrays  # torch/JAX arrays in and out by DLPack, no copy
def bernoulli_sparsify(x, p: float, *, rng, out=None) -> np.ndarray:
    r"""Bernoulli sparsification (Wangni et al. 2018) with a common keep probability ``p``, scaled by 1/p.

    .. math:: Q(v)_i = v_i\,\xi_i/p,\qquad \xi_i\sim\mathrm{Bern}(p)\ \text{i.i.d.}

    Unbiased; exact variance :math:`(1/p - 1)\|v\|^2` for every ``v``, so :math:`\beta = 1/p - 1`.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to sparsify.
    p : float
        Keep probability, ``0 < p <= 1``.
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)`` with about ``p*d`` non-zeros per row.

    Notes
    -----
    Encoding behind ``Bernoulli(p).bits(d) = p*d*32 + min(p*d*ceil(log2 d), d)``: the expected
    number of kept coordinates times a float32 value, plus their positions as indices or a ``d``-bit
    bitmap, whichever is cheaper (the sparsifiers' :func:`simcomm.compress.message_bits` encoding).

    Examples
    --------
    >>> import numpy as np
    >>> bernoulli_sparsify(np.ones(4), 1.0, rng=0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    p = _check_p(p)
    a, shape = _prepare(x, "bernoulli_sparsify")
    be = backend_for(None, a)
    res = _out(out, a, shape)
    be.bernoulli_quantize(a, p, _key(rng, "bernoulli_sparsify"), res)
    return res.reshape(shape)


def _bern_variance(v, p: float) -> np.ndarray:
    p = _check_p(p)
    v = np.asarray(v, dtype=np.float64)
    return (1.0 / p - 1.0) * (v * v).sum(axis=-1)


