r"""Unbiased random quantizers (URQs): QSGD, ternary, stochastic rounding, Bernoulli sparsification.

A URQ satisfies :math:`\mathbb{E}\,Q(v) = v` and :math:`\mathbb{E}\|Q(v)-v\|^2 \le \beta\|v\|^2`
(equivalently :math:`\mathbb{E}\|Q(v)\|^2 \le \alpha\|v\|^2` with :math:`\alpha = 1+\beta`); notes
``urq_delay.md`` B1 and table B3 ([N]: derived and Monte-Carlo checked, not quoted from the paper).

Each quantizer ``q`` is a function ``q(x, param, *, rng, backend)`` that quantizes every row
``x[..., :]`` independently (norms are taken along the last axis), plus attributes:

* ``q.beta(d, param)``: worst-case variance factor :math:`\beta(d)` (``inf`` where none exists);
* ``q.variance(v, param)``: the exact :math:`\mathbb{E}\|Q(v)-v\|^2` for a given ``v`` (closed form);
* ``q.bits(d, param)``: bits per message under the encoding documented in its docstring.

Randomness: one 64-bit key per call is drawn from ``rng``; coordinate ``i`` of the flattened batch uses
the ``i``-th uniform of a counter-based stream keyed by it (see :mod:`simcomm.backends._numpy.quant`),
so the numpy and numba backends agree bit for bit and the noise never depends on ``x``. Uniforms have
24 bits for float32 data and 53 bits for float64, so a rounding probability is realised to within
:math:`2^{-24}` (float32) or :math:`2^{-53}` (float64): below the data's own resolution.

:func:`quantizer` returns the same operators as a :class:`Quantizer` record with the parameter bound,
which is what the optimisers in :mod:`simcomm.optim` take.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from simcomm._errors import UserError

__all__ = ["qsgd", "ternary", "stochastic_round", "bernoulli_sparsify", "quantizer", "Quantizer", "QUANTIZERS"]


def _prepare(x, name: str, check: bool = True):
    """Return ``(x2d, shape)``: a C-contiguous float32/float64 (rows, d) view, rejecting NaN/inf.

    ``check=False`` when the caller detects non-finite input itself from a row reduction (no extra pass).
    """
    a = np.asarray(x)
    if np.iscomplexobj(a):
        _complex(name)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    if a.ndim == 0:
        raise UserError(f"{name}: x must have at least one axis (got a scalar); pass a 1-D vector or a batch")
    if check and not np.isfinite(a).all():
        _nonfinite(name)
    shape = a.shape
    d = shape[-1]
    return np.ascontiguousarray(a.reshape(-1, d)), shape


def _complex(name):
    raise UserError(f"{name}: x is complex; quantize real vectors (pass x.real and x.imag separately)")


def require_rng(rng, name: str):
    """Return ``rng`` unless it is ``None``: randomness is never drawn from an unseeded generator."""
    if rng is None:
        raise UserError(f"{name}: pass rng= (a seed or a numpy Generator); it draws random numbers and never "
                        "falls back to an unseeded generator")
    return rng


def _nonfinite(name):
    raise UserError(f"{name}: x contains NaN or inf; quantize finite vectors only")


def _out(out, a, shape):
    if out is None:
        return np.empty_like(a)
    if out.shape != shape or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise UserError(f"out must be a C-contiguous {a.dtype} array of shape {shape}, got {out.dtype} {out.shape}")
    return out.reshape(a.shape)


def _backend(backend):
    from simcomm.backends import get_backend

    return get_backend(backend)


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
def qsgd(x, s: int, *, rng, backend=None, out=None) -> np.ndarray:
    r"""QSGD with ``s`` levels (Alistarh et al. 2017), 2-norm scaled.

    .. math:: Q(v)_i = \|v\|_2\,\mathrm{sign}(v_i)\,\ell_i/s,\qquad
              \ell_i = \lfloor r_i\rfloor + \mathrm{Bern}(r_i - \lfloor r_i\rfloor),\quad r_i = s|v_i|/\|v\|_2.

    Unbiased; exact variance :math:`(\|v\|^2/s^2)\sum_i p_i(1-p_i)` with :math:`p_i` the fractional part
    of :math:`r_i` (``qsgd.variance``); worst case :math:`\beta(d) = \min(d/s^2, \sqrt d/s)` (``qsgd.beta``).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to quantize; each row (last axis) is one message.
    s : int
        Number of levels, ``s >= 1`` (``s = 1`` is 2-norm-scaled ternary).
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    backend : str, optional
        ``"numpy"`` or ``"numba"`` (default); both give identical results for the same ``rng``.
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
    Encoding behind ``qsgd.bits(d, s) = 32 + d*ceil(log2(2s+1))``: a float32 norm and one signed level
    in ``{-s..s}`` per coordinate, fixed width (notes B3, "naive"; Elias coding would use fewer).

    Examples
    --------
    >>> import numpy as np
    >>> q = qsgd(np.array([3.0, -4.0]), 5, rng=0)   # s|v_i|/||v|| = 3, 4 are integers: no rounding
    >>> q.tolist()
    [3.0, -4.0]
    >>> qsgd.beta(100, 4), qsgd.bits(100, 4)
    (2.5, 432)
    """
    s = _check_s(s)
    a, shape = _prepare(x, "qsgd", check=False)
    be = _backend(backend)
    norms = be.row_norms(a)
    if not np.isfinite(norms).all():  # NaN/inf anywhere in a row makes its norm non-finite
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


qsgd.beta = lambda d, s: min(d / s**2, math.sqrt(d) / s)  # notes B3: alpha = 1 + min(d/s^2, sqrt(d)/s)
qsgd.variance = _qsgd_variance
qsgd.bits = lambda d, s: 32 + d * math.ceil(math.log2(2 * s + 1))


# ------------------------------------------------------------------------------------------ ternary
def ternary(x, *, rng, backend=None, out=None) -> np.ndarray:
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
    backend : str, optional
        ``"numpy"`` or ``"numba"`` (default).
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)`` with entries in ``{-m, 0, m}`` per row, ``m`` the row's infinity norm.

    Notes
    -----
    Encoding behind ``ternary.bits(d) = 32 + 8*ceil(d/5)``: a float32 scale and five trits per byte
    (:math:`3^5 = 243 \le 256`), i.e. 1.6 bits per coordinate (entropy bound :math:`\log_2 3`).

    Examples
    --------
    >>> import numpy as np
    >>> ternary(np.array([2.0, -2.0, 0.0]), rng=0).tolist()   # |v_i| = m: kept with probability 1
    [2.0, -2.0, 0.0]
    >>> ternary.bits(10)
    48
    """
    a, shape = _prepare(x, "ternary", check=False)
    be = _backend(backend)
    scales = be.row_absmax(a)
    if not np.isfinite(scales).all():  # row_absmax is nan for a row holding NaN or inf
        _nonfinite("ternary")
    res = _out(out, a, shape)
    be.ternary_quantize(a, scales, _key(rng, "ternary"), res)
    return res.reshape(shape)


def _ternary_variance(v, param=None) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return np.abs(v).max(axis=-1) * np.abs(v).sum(axis=-1) - (v * v).sum(axis=-1)


ternary.beta = lambda d, param=None: (math.sqrt(d) - 1.0) / 2.0
ternary.variance = _ternary_variance
ternary.bits = lambda d, param=None: 32 + 8 * math.ceil(d / 5)


# -------------------------------------------------------------------------------- stochastic rounding
def stochastic_round(x, delta: float, *, rng, backend=None, out=None) -> np.ndarray:
    r"""Unbiased stochastic rounding to the grid :math:`\delta\mathbb{Z}`.

    .. math:: Q(v)_i = \delta\bigl(\lfloor v_i/\delta\rfloor + \mathrm{Bern}(v_i/\delta - \lfloor v_i/\delta\rfloor)\bigr).

    Unbiased; exact variance :math:`\delta^2\sum_i f_i(1-f_i)`, :math:`f_i` the fractional part of
    :math:`v_i/\delta`, hence at most :math:`d\delta^2/4`. The grid does not scale with ``v``, so there is
    no relative bound: ``stochastic_round.beta`` is ``inf`` (use the additive bound
    ``stochastic_round.variance_bound(d, delta) = d*delta**2/4``).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors to round.
    delta : float
        Grid step, ``delta > 0``.
    rng : numpy.random.Generator or seed
        Required (``None`` is refused: no unseeded fallback).
        Source of the one 64-bit key used for this call.
    backend : str, optional
        ``"numpy"`` or ``"numba"`` (default).
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)``, every entry an integer multiple of ``delta`` (up to float rounding of the product).

    Notes
    -----
    Encoding behind ``stochastic_round.bits(d, delta, span)``: a 32-bit integer offset (the smallest
    grid index) and ``ceil(log2(span/delta + 2))`` bits per coordinate, ``span`` the range
    ``max(v) - min(v)`` of the message; with ``span=None`` a 32-bit grid index per coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> stochastic_round(np.array([0.5, -1.0]), 0.5, rng=0).tolist()   # already on the grid
    [0.5, -1.0]
    >>> stochastic_round.bits(100, 0.1, span=1.0)
    432
    """
    delta = _check_delta(delta)
    a, shape = _prepare(x, "stochastic_round")
    be = _backend(backend)
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


stochastic_round.beta = lambda d, delta: math.inf
stochastic_round.variance = _sr_variance
stochastic_round.variance_bound = lambda d, delta: d * delta**2 / 4.0
stochastic_round.bits = _sr_bits


# ---------------------------------------------------------------------------- Bernoulli sparsification
def bernoulli_sparsify(x, p: float, *, rng, backend=None, out=None) -> np.ndarray:
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
    backend : str, optional
        ``"numpy"`` or ``"numba"`` (default).
    out : numpy.ndarray, optional
        Preallocated C-contiguous result of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        ``Q(x)`` with about ``p*d`` non-zeros per row.

    Notes
    -----
    Encoding behind ``bernoulli_sparsify.bits(d, p) = p*d*32 + min(p*d*ceil(log2 d), d)``: the expected
    number of kept coordinates times a float32 value, plus their positions as indices or a ``d``-bit
    bitmap, whichever is cheaper (the sparsifiers' :func:`simcomm.compress.message_bits` encoding).

    Examples
    --------
    >>> import numpy as np
    >>> bernoulli_sparsify(np.ones(4), 1.0, rng=0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    >>> bernoulli_sparsify.beta(1000, 0.25)
    3.0
    """
    p = _check_p(p)
    a, shape = _prepare(x, "bernoulli_sparsify")
    be = _backend(backend)
    res = _out(out, a, shape)
    be.bernoulli_quantize(a, p, _key(rng, "bernoulli_sparsify"), res)
    return res.reshape(shape)


def _bern_variance(v, p: float) -> np.ndarray:
    p = _check_p(p)
    v = np.asarray(v, dtype=np.float64)
    return (1.0 / p - 1.0) * (v * v).sum(axis=-1)


bernoulli_sparsify.beta = lambda d, p: 1.0 / p - 1.0
bernoulli_sparsify.variance = _bern_variance
bernoulli_sparsify.bits = lambda d, p: 32 * p * d + min(p * d * math.ceil(math.log2(max(d, 2))), d)


# ----------------------------------------------------------------------------------- bound records
class Quantizer(NamedTuple):
    """A URQ with its parameter bound: what :mod:`simcomm.optim` takes.

    ``apply(x, rng, backend)`` quantizes each row of ``x``; ``beta(d)``, ``alpha(d) = 1 + beta(d)``,
    ``bits(d)`` and ``variance(v)`` (``None`` where no closed form is provided) describe it.
    """

    name: str
    param: float | None
    apply: Callable
    beta: Callable
    bits: Callable
    variance: Callable | None

    def alpha(self, d: int) -> float:
        """Second-moment factor :math:`\\alpha = 1 + \\beta` (notes B1)."""
        return 1.0 + self.beta(d)

    @property
    def label(self) -> str:
        """Short label, e.g. ``qsgd(s=4)``."""
        key = {"qsgd": "s", "stochastic_round": "delta", "bernoulli": "p", "rand_k": "k"}.get(self.name)
        return self.name if key is None else f"{self.name}({key}={self.param:g})"


def _identity(x, rng=None, backend=None):
    return np.array(x, dtype=np.float64 if np.asarray(x).dtype not in (np.float32, np.float64) else None)


def _rand_k_apply(k):
    def apply(x, rng, backend=None):
        from simcomm.compress import rand_k  # the sparsifier helper's scaled rand_k (E C(x) = x)

        return rand_k(x, k, rng=rng, scale=True, backend=backend)

    return apply


#: names accepted by :func:`quantizer` and the parameter each one takes
QUANTIZERS = {"none": None, "qsgd": "s", "ternary": None, "stochastic_round": "delta", "bernoulli": "p", "rand_k": "k"}


def quantizer(name: str, param=None) -> Quantizer:
    """Return the URQ ``name`` with its parameter bound (``s``, ``delta``, ``p`` or ``k``).

    Parameters
    ----------
    name : {"none", "qsgd", "ternary", "stochastic_round", "bernoulli", "rand_k"}
        ``"none"`` is the identity (full-precision float32 messages); ``"rand_k"`` is the scaled
        random-k sparsifier of :func:`simcomm.compress.rand_k` (:math:`\\beta = d/k - 1`).
    param : int or float, optional
        The quantizer's parameter; ignored by ``none`` and ``ternary``.

    Returns
    -------
    Quantizer

    Raises
    ------
    UserError
        Unknown name or a parameter out of its domain.

    Examples
    --------
    >>> q = quantizer("bernoulli", 0.5)
    >>> q.alpha(100), q.label
    (2.0, 'bernoulli(p=0.5)')
    """
    if name == "none":
        return Quantizer("none", None, _identity, lambda d: 0.0, lambda d: 32 * d, lambda v: np.zeros(np.shape(v)[:-1]))
    if name == "qsgd":
        s = _check_s(param)
        return Quantizer(name, s, lambda x, rng, backend=None: qsgd(x, s, rng=rng, backend=backend),
                         lambda d: qsgd.beta(d, s), lambda d: qsgd.bits(d, s), lambda v: _qsgd_variance(v, s))
    if name == "ternary":
        return Quantizer(name, None, lambda x, rng, backend=None: ternary(x, rng=rng, backend=backend),
                         ternary.beta, ternary.bits, _ternary_variance)
    if name == "stochastic_round":
        delta = _check_delta(param)
        return Quantizer(name, delta, lambda x, rng, backend=None: stochastic_round(x, delta, rng=rng, backend=backend),
                         lambda d: math.inf, lambda d: _sr_bits(d, delta), lambda v: _sr_variance(v, delta))
    if name == "bernoulli":
        p = _check_p(param)
        return Quantizer(name, p, lambda x, rng, backend=None: bernoulli_sparsify(x, p, rng=rng, backend=backend),
                         lambda d: 1.0 / p - 1.0, lambda d: bernoulli_sparsify.bits(d, p),
                         lambda v: _bern_variance(v, p))
    if name == "rand_k":
        if isinstance(param, bool) or not isinstance(param, (int, np.integer)) or param < 1:
            raise UserError(f"rand_k: k = {param!r} is not allowed; use an integer k >= 1")
        k = int(param)

        def var(v):
            v = np.asarray(v, dtype=np.float64)
            return (v.shape[-1] / k - 1.0) * (v * v).sum(axis=-1)

        def bits(d):
            from simcomm.compress import message_bits  # same encoding as the sparsifiers

            return message_bits(k, d)

        return Quantizer(name, k, _rand_k_apply(k), lambda d: d / k - 1.0, bits, var)
    from simcomm.experiments._registry import closest

    raise UserError(f"unknown quantizer '{name}'{closest(name, QUANTIZERS)}; choose one of {', '.join(QUANTIZERS)}")
