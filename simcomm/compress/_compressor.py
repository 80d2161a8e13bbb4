r"""One compressor type: small frozen dataclasses with their settings bound at construction.

Every compressor ``c`` is a :class:`Compressor` (in the spirit of optax's gradient transformations:
settings fixed when it is built, application pure):

* ``c.apply(x, *, rng, backend=None)`` compresses every row ``x[..., :]`` independently; it calls the
  array function of the same name (:func:`~simcomm.compress.top_k`, :func:`~simcomm.compress.qsgd`,
  ...), so the two give identical results on the same generator state;
* ``c.bits(d)``: bits of one message of ``d`` coordinates under the encoding its array function
  documents;
* ``c.beta(d)``: the worst-case variance factor :math:`\beta(d)` of an unbiased compressor
  (:math:`\mathbb{E}\|C(v)-v\|^2 \le \beta\|v\|^2`, ``inf`` where no relative bound exists), ``None``
  for a biased one; ``c.alpha(d) = 1 + beta(d)``; ``c.unbiased``;
* ``c.variance(v)``: the exact :math:`\mathbb{E}\|C(v)-v\|^2` where a closed form is known;
* sparsifiers also have the row-batch path the error-feedback loop fuses with its memory update:
  ``c.top_set(d)`` (the size ``r`` of the top set the kept coordinates are drawn from, ``None`` when the
  choice does not depend on the values) and ``c.select_rows(P, *, rng, backend, top=None)`` (the kept
  indices of every row, drawing exactly the uniforms ``apply`` draws).

:func:`compressor_from_name` maps a spec's name and settings to one of them.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError, closest
from simcomm.backends._xp import array_namespace, framework_arrays
from simcomm.compress._quantize import (
    _bern_variance,
    _check_delta,
    _check_p,
    _check_s,
    _qsgd_variance,
    _sr_bits,
    _sr_variance,
    _ternary_variance,
    bernoulli_sparsify,
    qsgd,
    stochastic_round,
    ternary,
)
from simcomm.compress._sparsify import _check_int, message_bits, rand_k, rtop_k, top_k

__all__ = [
    "Compressor", "Sparsifier", "Identity", "TopK", "RandK", "RTopK", "QSGD", "Ternary", "StochasticRound", "Bernoulli",
    "compressor_from_name", "COMPRESSORS",
]


def _checking_d(method):
    import functools

    @functools.wraps(method)
    def checked(self, d, *args, **kw):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise UserError(f"{type(self).__name__}.{method.__name__}: d = {d!r} is not allowed; use the vector "
                            "length, an integer d >= 1")
        return method(self, int(d), *args, **kw)

    checked._checks_d = True
    return checked


@dataclass(frozen=True)
class Compressor(abc.ABC):
    """Base class of every compressor: the settings are the dataclass fields.

    Subclasses define :meth:`apply` and :meth:`bits`; unbiased ones also :meth:`beta` and
    :meth:`variance`.
    """

    #: name in specs and in :func:`compressor_from_name`
    name: ClassVar[str] = ""
    #: E C(x) = x for every x
    unbiased: ClassVar[bool] = False

    def __init_subclass__(cls, **kw):
        # Every bits(d) / beta(d) a subclass defines checks d first, so a bad d is blamed as d (not
        # as k), and beta(0) is an error rather than 0.0.
        super().__init_subclass__(**kw)
        for method in ("bits", "beta"):
            if method in cls.__dict__ and not getattr(cls.__dict__[method], "_checks_d", False):
                setattr(cls, method, _checking_d(cls.__dict__[method]))

    @abc.abstractmethod
    def apply(self, x, *, rng, backend=None) -> np.ndarray:
        """Compress each row of ``x`` (the last axis holds the ``d`` coordinates)."""

    @abc.abstractmethod
    def bits(self, d: int) -> float:
        """Bits of one message of ``d`` coordinates."""

    def beta(self, d: int) -> float | None:
        r"""Worst-case :math:`\mathbb{E}\|C(v)-v\|^2/\|v\|^2` over ``v`` in dimension ``d`` (``None`` if biased)."""
        return None

    def alpha(self, d: int) -> float | None:
        r"""Second-moment factor :math:`\alpha = 1 + \beta` (``None`` if biased)."""
        b = self.beta(d)
        return None if b is None else 1.0 + b

    def variance(self, v) -> np.ndarray | None:
        r"""Exact :math:`\mathbb{E}\|C(v)-v\|^2` per row of ``v`` (``None`` where no closed form is given)."""
        return None

    def top_set(self, d: int) -> int | None:
        """Size of the top set :meth:`select_rows` draws from (``None``: not a top-set sparsifier)."""
        return None

    @property
    def label(self) -> str:
        """Short label with the settings, e.g. ``qsgd(s=4)``."""
        fields = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in vars(self).items())
        return f"{self.name}({fields})" if fields else self.name


@framework_arrays
def _float(x):
    x = np.asarray(x)
    return np.array(x, dtype=np.float64 if x.dtype not in (np.float32, np.float64) else None)


@dataclass(frozen=True)
class Identity(Compressor):
    r"""No compression: full-precision float32 messages (``32 d`` bits), :math:`\beta = 0`.

    Examples
    --------
    >>> Identity().apply([1, 2], rng=0).tolist(), Identity().bits(10)
    ([1.0, 2.0], 320)
    """

    name: ClassVar[str] = "none"
    unbiased: ClassVar[bool] = True

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return _float(x)  # a copy, float64 unless x is float32/float64 already

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 * d

    def beta(self, d: int) -> float:  # noqa: D102
        return 0.0

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return np.zeros(np.shape(v)[:-1])


@dataclass(frozen=True)
class Sparsifier(Compressor):
    """A compressor that sends ``k`` of the ``d`` coordinates (:func:`message_bits` ``(k, d)`` bits)."""

    def bits(self, d: int) -> int:  # noqa: D102
        return message_bits(self.k, d)

    @abc.abstractmethod
    def select_rows(self, P: np.ndarray, *, rng, backend=None, top: np.ndarray | None = None) -> np.ndarray:
        """Kept indices of every row of ``P``, shape ``(n, k)``.

        ``P`` is a C-contiguous ``(n, d)`` float array; ``top`` (optional) the ascending indices of each
        row's ``top_set(d)`` largest magnitudes, already computed by a fused kernel. The uniforms drawn
        from ``rng`` are the ones :meth:`apply` draws, so the kept set is the same.
        """


def _backend(backend):
    from simcomm.backends import get_backend

    return get_backend(backend)


@dataclass(frozen=True)
class TopK(Sparsifier):
    """Top-k sparsifier (:func:`~simcomm.compress.top_k`): biased, deterministic.

    Examples
    --------
    >>> TopK(2).apply([3.0, -1.0, -5.0, 2.0], rng=0).tolist(), TopK(2).bits(4)
    ([3.0, 0.0, -5.0, 0.0], 68)
    """

    k: int
    name: ClassVar[str] = "top_k"

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "top_k", "k")

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return top_k(x, self.k, backend=backend)

    def top_set(self, d: int) -> int:  # noqa: D102
        return self.k

    def select_rows(self, P, *, rng, backend=None, top=None):  # noqa: D102
        return _backend(backend).topk_indices(P, self.k) if top is None else top


@dataclass(frozen=True)
class RandK(Sparsifier):
    r"""Rand-k sparsifier (:func:`~simcomm.compress.rand_k`); unbiased with ``scale=True`` (:math:`\beta = d/k - 1`).

    Examples
    --------
    >>> RandK(4).beta(100), RandK(4, scale=False).beta(100), RandK(4).unbiased
    (24.0, None, True)
    """

    k: int
    scale: bool = True
    name: ClassVar[str] = "rand_k"

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "rand_k", "k")

    @property
    def unbiased(self) -> bool:  # noqa: D102
        return bool(self.scale)

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return rand_k(x, self.k, rng=rng, scale=self.scale, backend=backend)

    def beta(self, d: int) -> float | None:  # noqa: D102
        return d / self.k - 1.0 if self.scale else None

    def variance(self, v) -> np.ndarray | None:  # noqa: D102
        if not self.scale:
            return None
        v = np.asarray(v, dtype=np.float64)
        return (v.shape[-1] / self.k - 1.0) * (v * v).sum(axis=-1)

    def select_rows(self, P, *, rng, backend=None, top=None):  # noqa: D102
        rng = np.random.default_rng(rng)
        idx = _backend(backend).floyd_sample(rng.random((P.shape[0], self.k)), P.shape[1])
        return array_namespace(P).asarray(idx)  # the subset is drawn on the host (Floyd), used where P is


@dataclass(frozen=True)
class RTopK(Sparsifier):
    """rTop-k sparsifier (:func:`~simcomm.compress.rtop_k`): a random ``k``-subset of the top ``r``; biased.

    Examples
    --------
    >>> c = RTopK(2, 3)
    >>> int((c.apply([5.0, 0.1, -4.0, 0.2, 3.0], rng=1) != 0).sum()), c.bits(5), c.beta(5)
    (2, 69, None)
    """

    k: int
    r: int
    name: ClassVar[str] = "rtop_k"

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "rtop_k", "k")
        _check_int(self.r, "rtop_k", "r")
        if self.r < self.k:
            raise UserError(f"rtop_k: r = {self.r} is out of range; use k = {self.k} <= r")

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return rtop_k(x, self.k, self.r, rng=rng, backend=backend)

    def top_set(self, d: int) -> int:  # noqa: D102
        return self.r

    def select_rows(self, P, *, rng, backend=None, top=None):  # noqa: D102
        be = _backend(backend)
        rng = np.random.default_rng(rng)
        u = rng.random((P.shape[0], self.k))  # the uniforms rtop_k draws
        if top is None:
            return be.rtopk_indices(P, self.k, self.r, u)
        xp = array_namespace(top)
        return xp.take_along_axis(top, xp.asarray(be.floyd_sample(u, self.r)), axis=1)  # a Floyd k-subset of the top r


@dataclass(frozen=True)
class QSGD(Compressor):
    """QSGD with ``s`` levels (:func:`~simcomm.compress.qsgd`).

    Examples
    --------
    >>> QSGD(4).beta(100), QSGD(4).bits(100)
    (2.5, 432)
    """

    s: int
    name: ClassVar[str] = "qsgd"
    unbiased: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        _check_s(self.s)

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return qsgd(x, self.s, rng=rng, backend=backend)

    def bits(self, d: int) -> int:  # noqa: D102
        # a float32 norm and one signed level in {-s..s} per coordinate, fixed width (notes B3, "naive")
        return 32 + d * math.ceil(math.log2(2 * self.s + 1))

    def beta(self, d: int) -> float:  # noqa: D102
        return min(d / self.s**2, math.sqrt(d) / self.s)  # notes B3: alpha = 1 + min(d/s^2, sqrt(d)/s)

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _qsgd_variance(v, self.s)


@dataclass(frozen=True)
class Ternary(Compressor):
    """Ternary quantization scaled by the infinity norm (:func:`~simcomm.compress.ternary`).

    Examples
    --------
    >>> Ternary().bits(10), Ternary().beta(9)
    (48, 1.0)
    """

    name: ClassVar[str] = "ternary"
    unbiased: ClassVar[bool] = True

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return ternary(x, rng=rng, backend=backend)

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 + 8 * math.ceil(d / 5)  # a float32 scale and five trits per byte

    def beta(self, d: int) -> float:  # noqa: D102
        return (math.sqrt(d) - 1.0) / 2.0  # notes B3 [N]

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _ternary_variance(v)


@dataclass(frozen=True)
class StochasticRound(Compressor):
    """Unbiased stochastic rounding to the grid ``delta * Z`` (:func:`~simcomm.compress.stochastic_round`).

    No relative variance bound (``beta`` is ``inf``); the additive one is :meth:`variance_bound`.

    Examples
    --------
    >>> c = StochasticRound(0.1)
    >>> c.beta(100), c.bits(100), c.bits(100, span=1.0), round(c.variance_bound(100), 12)
    (inf, 3200, 432, 0.25)
    """

    delta: float
    name: ClassVar[str] = "stochastic_round"
    unbiased: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "delta", _check_delta(self.delta))

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return stochastic_round(x, self.delta, rng=rng, backend=backend)

    def bits(self, d: int, span: float | None = None) -> int:
        """Bits per message; ``span`` is the range of the message's values (``None``: 32 bits a coordinate)."""
        return _sr_bits(d, self.delta, span)

    def beta(self, d: int) -> float:  # noqa: D102
        return math.inf

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _sr_variance(v, self.delta)

    def variance_bound(self, d: int) -> float:
        r"""Additive bound :math:`d\delta^2/4` on :math:`\mathbb{E}\|Q(v)-v\|^2`."""
        return d * self.delta**2 / 4.0


@dataclass(frozen=True)
class Bernoulli(Compressor):
    """Bernoulli sparsification: keep probability ``p``, scaled by ``1/p``.

    See :func:`~simcomm.compress.bernoulli_sparsify`.

    Examples
    --------
    >>> Bernoulli(0.5).alpha(100), Bernoulli(0.5).label
    (2.0, 'bernoulli(p=0.5)')
    """

    p: float
    name: ClassVar[str] = "bernoulli"
    unbiased: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "p", _check_p(self.p))

    def apply(self, x, *, rng, backend=None) -> np.ndarray:  # noqa: D102
        return bernoulli_sparsify(x, self.p, rng=rng, backend=backend)

    def bits(self, d: int) -> float:  # noqa: D102
        # expected kept values as float32 plus their positions as indices or a bitmap, whichever is cheaper
        p = self.p
        return 32 * p * d + min(p * d * math.ceil(math.log2(max(d, 2))), d)

    def beta(self, d: int) -> float:  # noqa: D102
        return 1.0 / self.p - 1.0

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _bern_variance(v, self.p)


#: the compressor class behind each name :func:`compressor_from_name` accepts
COMPRESSORS = {c.name: c for c in (Identity, TopK, RandK, RTopK, QSGD, Ternary, StochasticRound, Bernoulli)}


def compressor_from_name(name: str, **settings) -> Compressor:
    """Build the compressor ``name`` with ``settings`` (the class's fields): how specs name compressors.

    Parameters
    ----------
    name : str
        A key of :data:`COMPRESSORS`: ``"none"``, ``"top_k"``, ``"rand_k"``, ``"rtop_k"``, ``"qsgd"``,
        ``"ternary"``, ``"stochastic_round"``, ``"bernoulli"``.
    **settings
        The class's fields, e.g. ``k=``, ``r=``, ``s=``, ``p=``, ``delta=``, ``scale=``.

    Returns
    -------
    Compressor

    Raises
    ------
    UserError
        Unknown name, a missing or unknown setting, or a setting out of its domain.

    Examples
    --------
    >>> compressor_from_name("rtop_k", k=2, r=8)
    RTopK(k=2, r=8)
    >>> compressor_from_name("qsdg", s=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simcomm._errors.UserError: unknown compressor 'qsdg' (did you mean 'qsgd'?); choose one of none, top_k, ...
    """
    cls = COMPRESSORS.get(name)
    if cls is None:
        raise UserError(f"unknown compressor '{name}'{closest(name, COMPRESSORS)}; "
                        f"choose one of {', '.join(COMPRESSORS)}")
    try:
        return cls(**settings)
    except TypeError:
        import dataclasses

        fields = [f.name for f in dataclasses.fields(cls)]
        raise UserError(f"compressor '{name}' takes {', '.join(fields) or 'no settings'}; "
                        f"got {', '.join(settings) or 'none'}") from None
