r"""One compressor type: small frozen dataclasses that describe themselves, in one registry.

Every compressor ``c`` is a :class:`Compressor` (in the spirit of optax's gradient transformations:
settings fixed when it is built, application pure), registered by name with
:func:`register_compressor`; :data:`COMPRESSORS` is the registry that spec choices, the CLI, the wire
format and the tests (the conformance battery in ``tests/test_conform.py``, the library-internal
invariants in ``tests/test_compressor_contract.py``) are derived from. A compressor owns:

* ``c.apply(x, *, rng)`` compresses every row ``x[..., :]`` independently; it calls the
  array function of the same name (:func:`~simcomm.compress.top_k`, :func:`~simcomm.compress.qsgd`,
  ...), so the two give identical results on the same generator state;
* ``c.bits(d)``: bits of one message of ``d`` coordinates under the encoding its wire form uses
  (``bits_exact``: whether every message has exactly that many, or it is an expectation);
* ``c.beta(d)``: the worst-case variance factor :math:`\beta(d)` of an unbiased compressor
  (:math:`\mathbb{E}\|C(v)-v\|^2 \le \beta\|v\|^2`, ``inf`` where no relative bound exists), ``None``
  for a biased one; ``c.alpha(d) = 1 + beta(d)``; ``c.unbiased``;
* ``c.error_factor(d)``: the worst-case :math:`\mathbb{E}\|C(v)-v\|^2/\|v\|^2` of any compressor
  (``beta`` for an unbiased one; below 1 for a contraction; ``None`` where none is stated);
* ``c.deterministic``: ``C(x)`` draws no randomness (the same output for every ``rng``);
* ``c.variance(v)``: the exact :math:`\mathbb{E}\|C(v)-v\|^2` where a closed form is known;
* its settings (the dataclass fields, declared with :func:`setting`; ``type(c).settings()``), from
  which specs and ``simcomm payload`` take their parameters;
* its wire form: ``c.to_message(x, rng=...)`` is the :class:`~simcomm.compress.Message` one node
  sends for the vector ``x`` (same selections and randomness as ``apply``), ``c.decode(msg)`` the
  vector it stands for; :mod:`simcomm.network` encodes messages to bytes;
* an optional fused error-feedback path: a compressor that sends some of ``p``'s own entries
  unscaled (``c.sends_entries``) gives ``c.select_rows(P, *, rng, top=None)`` (the kept
  indices of every row, drawing exactly the uniforms ``apply`` draws) and ``c.top_set(d)`` (the size
  ``r`` of the top set they are drawn from, ``None`` when the choice does not depend on the values);
  ``c.lossless`` means nothing is ever kept back. Every other compressor runs error feedback through
  the generic path :math:`m = C(p)`, :math:`e' = p - m`.

:func:`compressor_from_name` maps a spec's name and settings to one of them.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcomm._errors import UserError, closest
from simcomm._params import Param, top_level_split
from simcomm.backends import array_namespace, backend_for, framework_arrays, from_framework, is_framework_array
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
from simcomm.compress._sparsify import _check_int, _check_k, _nonfinite, message_bits, rand_k, rtop_k, top_k
from simcomm.compress._wire import Message, to_bfloat16

__all__ = [
    "Compressor", "Sparsifier", "Identity", "TopK", "RandK", "RTopK", "QSGD", "Ternary", "StochasticRound", "Bernoulli",
    "compressor_from_name", "compressor_from_label", "compressor_from_settings", "compressor_names", "COMPRESSORS",
    "setting",
    "register_compressor", "VALUE_DTYPES",
]

#: value dtypes a dense or sparse message may carry on the wire
VALUE_DTYPES = ("float32", "float16", "bfloat16")

#: the registry: name -> compressor class (filled by :func:`register_compressor`, in definition order)
COMPRESSORS: dict[str, type] = {}


def register_compressor(name: str):
    """Class decorator: register a :class:`Compressor` subclass under ``name`` (its ``name`` attribute).

    Examples
    --------
    >>> COMPRESSORS["top_k"] is TopK
    True
    """

    def deco(cls):
        if name in COMPRESSORS and COMPRESSORS[name] is not cls:
            raise ValueError(f"compressor name '{name}' is already registered by {COMPRESSORS[name].__name__}")
        cls.name = name
        COMPRESSORS[name] = cls
        return cls

    return deco


def setting(doc: str, *, default=dataclasses.MISSING, low=None, high=None, choices=None):
    """A compressor field with its one-line doc and domain (read by :meth:`Compressor.settings`)."""
    return dataclasses.field(default=default, metadata=dict(doc=doc, low=low, high=high, choices=choices))


@framework_arrays
def _float(x):
    x = np.asarray(x)
    return np.array(x, dtype=np.float64 if x.dtype not in (np.float32, np.float64) else None)


def _wire_vector(x, name: str) -> np.ndarray:
    """``x`` as one finite, non-empty float vector (the input of a message)."""
    x = np.asarray(x)
    if x.ndim != 1 or x.size == 0:
        raise UserError(f"{name}: x must be one non-empty vector, got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if not np.isfinite(x).all():
        raise UserError(f"{name}: x contains NaN or inf; pass finite values")
    return x


def _cast(v, value_dtype: str) -> np.ndarray:
    if value_dtype == "bfloat16":
        return to_bfloat16(v)
    return np.asarray(v).astype(value_dtype)


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

    A subclass needs only :meth:`apply`. By default a message is dense: ``C(x)`` as ``d`` values of
    ``value_dtype`` (:meth:`bits` is ``32 d``, float32 values). A subclass that sends less defines
    :meth:`bits` (what it reports) and, for a real wire form, :meth:`_message`; unbiased ones set
    ``unbiased = True`` and define :meth:`beta` (and :meth:`variance` where a closed form is known),
    biased ones :meth:`error_factor` where a worst case is known. Register a subclass with
    :func:`register_compressor` to name it in specs and on the command line.

    Examples
    --------
    A user's compressor with ``apply`` only (the shipped optimisers, ``simcomm payload`` and
    ``simcomm conform`` take it as it is):

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Threshold(Compressor):
    ...     tau: float = 0.5
    ...     def apply(self, x, *, rng):
    ...         x = np.asarray(x, dtype=np.float64)
    ...         return np.where(np.abs(x) >= self.tau, x, 0.0)
    >>> c = Threshold()
    >>> c.apply([1.0, 0.1, -2.0], rng=0).tolist(), c.bits(3), c.label
    ([1.0, 0.0, -2.0], 96, 'Threshold(tau=0.5)')
    >>> c.to_message([1.0, 0.1, -2.0]).kind
    'dense'
    """

    #: name in specs and in :func:`compressor_from_name` (set by :func:`register_compressor`)
    name: ClassVar[str] = ""
    #: E C(x) = x for every x
    unbiased: ClassVar[bool] = False
    #: C(x) = x: error feedback keeps no memory
    lossless: ClassVar[bool] = False
    #: every message has exactly ``bits(d)`` bits (``False``: ``bits`` is an expectation or a bound)
    bits_exact: ClassVar[bool] = True
    #: the message is a subset of the input's own entries, unscaled (the fused error-feedback path)
    sends_entries: ClassVar[bool] = False
    #: C(x) is a function of x: no randomness is drawn (rng is ignored)
    deterministic: ClassVar[bool] = False

    @classmethod
    def settings(cls) -> tuple[Param, ...]:
        """The declared settings (dataclass fields), in order, as :class:`~simcomm._params.Param` with their names."""
        out = []
        for f in dataclasses.fields(cls):
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            default = None if f.default is dataclasses.MISSING else f.default
            md = f.metadata
            out.append(Param(kind, default, low=md.get("low"), high=md.get("high"), choices=md.get("choices"),
                             doc=md.get("doc", ""), name=f.name))
        return tuple(out)

    def __init_subclass__(cls, **kw):
        # Every bits(d) / beta(d) a subclass defines checks d first, so a bad d is blamed as d (not
        # as k), and beta(0) is an error rather than 0.0.
        super().__init_subclass__(**kw)
        for method in ("bits", "beta"):
            if method in cls.__dict__ and not getattr(cls.__dict__[method], "_checks_d", False):
                setattr(cls, method, _checking_d(cls.__dict__[method]))

    @abc.abstractmethod
    def apply(self, x, *, rng) -> np.ndarray:
        """Compress each row of ``x`` (the last axis holds the ``d`` coordinates)."""

    @_checking_d
    def bits(self, d: int) -> float:
        """Bits of one message of ``d`` coordinates (default: the dense wire form, ``32 d``)."""
        return 32 * d

    def beta(self, d: int) -> float | None:
        r"""Worst-case :math:`\mathbb{E}\|C(v)-v\|^2/\|v\|^2` over ``v`` in dimension ``d`` (``None`` if biased)."""
        return None

    def alpha(self, d: int) -> float | None:
        r"""Second-moment factor :math:`\alpha = 1 + \beta` (``None`` if biased)."""
        b = self.beta(d)
        return None if b is None else 1.0 + b

    def error_factor(self, d: int) -> float | None:
        r"""Worst-case :math:`\mathbb{E}\|C(v)-v\|^2/\|v\|^2` over ``v`` (``beta`` if unbiased; ``None``: not stated).

        Below 1 it is a contraction: :math:`\mathbb{E}\|C(v)-v\|^2 \le (1-\delta)\|v\|^2` with
        :math:`\delta = 1 - ` ``error_factor(d)``.
        """
        return self.beta(d) if self.unbiased else None

    def variance(self, v) -> np.ndarray | None:
        r"""Exact :math:`\mathbb{E}\|C(v)-v\|^2` per row of ``v`` (``None`` where no closed form is given)."""
        return None

    def top_set(self, d: int) -> int | None:
        """Size of the top set :meth:`select_rows` draws from (``None``: not a top-set sparsifier)."""
        return None

    def to_message(self, x, *, rng=None, value_dtype: str = "float32") -> Message:
        """The wire-form :class:`~simcomm.compress.Message` of the vector ``x`` (the draws ``apply`` makes).

        Parameters
        ----------
        x : array_like, shape (d,)
            Finite values.
        rng : numpy.random.Generator or seed, optional
            The compressor's randomness (as in :meth:`apply`).
        value_dtype : {"float32", "float16", "bfloat16"}
            Dtype of dense and sparse values on the wire.

        Returns
        -------
        Message
        """
        if value_dtype not in VALUE_DTYPES:
            raise UserError(f"unknown value dtype '{value_dtype}'; choose one of {', '.join(VALUE_DTYPES)}")
        x = _wire_vector(x, self.name or type(self).__name__)
        return self._message(x, np.random.default_rng(rng), value_dtype)

    def _message(self, x: np.ndarray, rng: np.random.Generator, value_dtype: str) -> Message:
        """Wire form of the checked vector ``x`` (see :meth:`to_message`); default: ``C(x)`` sent dense."""
        y = self.apply(x, rng=rng)
        try:
            y = np.asarray(from_framework(y)[0] if is_framework_array(y) else y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise UserError(f"{self.label}.apply returned {type(y).__name__}, not an array of numbers ({exc}); "
                            "return C(x) as an array shaped like x") from None
        if y.shape != x.shape:
            raise UserError(f"{self.label}.apply returned shape {y.shape} for a vector of shape {x.shape}; "
                            "return C(x) shaped like x")
        return Message("dense", x.size, value_dtype, values=_cast(y, value_dtype))

    def decode(self, msg: Message) -> np.ndarray:
        """The vector (float64, length ``msg.d``) that a message of this compressor stands for."""
        return msg.dense()

    @property
    def label(self) -> str:
        """Short label with the settings, e.g. ``qsgd(s=4)``."""
        fields = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in vars(self).items())
        name = self.name or type(self).__name__  # an unregistered (user's) class goes by its class name
        return f"{name}({fields})" if fields else name


@register_compressor("none")
@dataclass(frozen=True)
class Identity(Compressor):
    r"""No compression: full-precision float32 messages (``32 d`` bits), :math:`\beta = 0`.

    Examples
    --------
    >>> Identity().apply([1, 2], rng=0).tolist(), Identity().bits(10)
    ([1.0, 2.0], 320)
    """

    deterministic: ClassVar[bool] = True

    unbiased: ClassVar[bool] = True
    lossless: ClassVar[bool] = True

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return _float(x)  # a copy, float64 unless x is float32/float64 already

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 * d

    def beta(self, d: int) -> float:  # noqa: D102
        return 0.0

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return np.zeros(np.shape(v)[:-1])

    def _message(self, x, rng, value_dtype):
        return Message("dense", x.size, value_dtype, values=_cast(x, value_dtype))


@dataclass(frozen=True)
class Sparsifier(Compressor):
    """A compressor that sends ``k`` of the ``d`` coordinates (:func:`message_bits` ``(k, d)`` bits).

    Its wire form is a ``sparse`` message: the sent values (times :meth:`entry_scale`) at their sorted
    indices, chosen by :meth:`select_rows`.
    """

    def bits(self, d: int) -> int:  # noqa: D102
        return message_bits(self.k, d)

    sends_entries: ClassVar[bool] = True

    def entry_scale(self, d: int) -> float:
        """Factor the kept entries are multiplied by (1: unscaled)."""
        return 1.0

    @abc.abstractmethod
    def select_rows(self, P: np.ndarray, *, rng, top: np.ndarray | None = None) -> np.ndarray:
        """Kept indices of every row of ``P``, shape ``(n, k)``.

        ``P`` is a C-contiguous ``(n, d)`` float array; ``top`` (optional) the ascending indices of each
        row's ``top_set(d)`` largest magnitudes, already computed by a fused kernel. The uniforms drawn
        from ``rng`` are the ones :meth:`apply` draws, so the kept set is the same.
        """

    def _check_d(self, d: int) -> None:
        _check_k(self.k, d, self.name)

    def _message(self, x, rng, value_dtype):
        d = x.size
        self._check_d(d)
        idx = self.select_rows(np.ascontiguousarray(x.reshape(1, d)), rng=rng)[0]
        scale = self.entry_scale(d)
        vals = x[idx] * scale if scale != 1.0 else x[idx]
        order = np.argsort(idx, kind="stable")
        return Message("sparse", d, value_dtype, values=_cast(vals[order], value_dtype),
                       indices=np.asarray(idx, dtype=np.int64)[order])


def _backend(P):
    return backend_for(None, P)  # the active backend (simcomm.backends.use), or cupy for a device array


@register_compressor("top_k")
@dataclass(frozen=True)
class TopK(Sparsifier):
    """Top-k sparsifier (:func:`~simcomm.compress.top_k`): biased, deterministic.

    Examples
    --------
    >>> TopK(2).apply([3.0, -1.0, -5.0, 2.0], rng=0).tolist(), TopK(2).bits(4)
    ([3.0, 0.0, -5.0, 0.0], 68)
    """

    deterministic: ClassVar[bool] = True

    k: int = setting("kept coordinates, 1 <= k <= d", low=1)

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "top_k", "k")

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return top_k(x, self.k)

    def error_factor(self, d: int) -> float:  # noqa: D102
        return 1.0 - self.k / d  # ||x - top_k(x)||^2 <= (1 - k/d) ||x||^2: the k largest carry >= k/d of it

    def top_set(self, d: int) -> int:  # noqa: D102
        return self.k

    def select_rows(self, P, *, rng, top=None):  # noqa: D102
        return _backend(P).topk_indices(P, self.k) if top is None else top


@register_compressor("rand_k")
@dataclass(frozen=True)
class RandK(Sparsifier):
    r"""Rand-k sparsifier (:func:`~simcomm.compress.rand_k`); unbiased with ``scale=True`` (:math:`\beta = d/k - 1`).

    Examples
    --------
    >>> RandK(4).beta(100), RandK(4, scale=False).beta(100), RandK(4).unbiased
    (24.0, None, True)
    """

    k: int = setting("kept coordinates, 1 <= k <= d", low=1)
    scale: bool = setting("multiply the kept entries by d/k (unbiased)", default=True)

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "rand_k", "k")

    @property
    def unbiased(self) -> bool:  # noqa: D102
        return bool(self.scale)

    @property
    def sends_entries(self) -> bool:  # noqa: D102
        return not self.scale

    def entry_scale(self, d: int) -> float:  # noqa: D102
        return d / self.k if self.scale else 1.0

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return rand_k(x, self.k, rng=rng, scale=self.scale)

    def beta(self, d: int) -> float | None:  # noqa: D102
        return d / self.k - 1.0 if self.scale else None

    def error_factor(self, d: int) -> float:  # noqa: D102
        return d / self.k - 1.0 if self.scale else 1.0 - self.k / d  # unscaled: E||x - C(x)||^2 = (1 - k/d)||x||^2

    def variance(self, v) -> np.ndarray | None:  # noqa: D102
        v = np.asarray(v, dtype=np.float64)
        f = v.shape[-1] / self.k - 1.0 if self.scale else 1.0 - self.k / v.shape[-1]
        return f * (v * v).sum(axis=-1)

    def select_rows(self, P, *, rng, top=None):  # noqa: D102
        rng = np.random.default_rng(rng)
        idx = _backend(P).floyd_sample(rng.random((P.shape[0], self.k)), P.shape[1])
        return array_namespace(P).asarray(idx)  # the subset is drawn on the host (Floyd), used where P is


@register_compressor("rtop_k")
@dataclass(frozen=True)
class RTopK(Sparsifier):
    """rTop-k sparsifier (:func:`~simcomm.compress.rtop_k`): a random ``k``-subset of the top ``r``; biased.

    Examples
    --------
    >>> c = RTopK(2, 3)
    >>> int((c.apply([5.0, 0.1, -4.0, 0.2, 3.0], rng=1) != 0).sum()), c.bits(5), c.beta(5)
    (2, 69, None)
    """

    k: int = setting("kept coordinates, 1 <= k <= r", low=1)
    r: int = setting("size of the top set the k coordinates are drawn from, k <= r <= d", low=1)

    def __post_init__(self):  # noqa: D105
        _check_int(self.k, "rtop_k", "k")
        _check_int(self.r, "rtop_k", "r")
        if self.r < self.k:
            raise UserError(f"rtop_k: r = {self.r} is out of range; use k = {self.k} <= r")

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return rtop_k(x, self.k, self.r, rng=rng)

    def error_factor(self, d: int) -> float:  # noqa: D102
        return 1.0 - self.k / d  # rtopk.md B2 [N]

    def variance(self, v) -> np.ndarray:  # noqa: D102
        # E||x - rTop_k(x)||^2 = ||x||^2 - (k/r) ||top_r(x)||^2 (rtopk.md B2 [N])
        v = np.asarray(v, dtype=np.float64)
        a = np.sort(v * v, axis=-1)[..., ::-1]
        return a.sum(axis=-1) - self.k / self.r * a[..., : self.r].sum(axis=-1)

    def top_set(self, d: int) -> int:  # noqa: D102
        return self.r

    def _check_d(self, d: int) -> None:
        _check_k(self.k, d, "rtop_k")
        if not self.k <= self.r <= d:
            raise UserError(f"rtop_k: r = {self.r} is out of range; use k = {self.k} <= r <= d = {d}")

    def select_rows(self, P, *, rng, top=None):  # noqa: D102
        be = _backend(P)
        rng = np.random.default_rng(rng)
        u = rng.random((P.shape[0], self.k))  # the uniforms rtop_k draws
        if top is None:
            idx, finite = be.rtopk_indices(P, self.k, self.r, u)
            if not finite:
                _nonfinite("rtop_k")
            return idx
        xp = array_namespace(top)
        return xp.take_along_axis(top, xp.asarray(be.floyd_sample(u, self.r)), axis=1)  # a Floyd k-subset of the top r


@register_compressor("qsgd")
@dataclass(frozen=True)
class QSGD(Compressor):
    """QSGD with ``s`` levels (:func:`~simcomm.compress.qsgd`).

    Examples
    --------
    >>> QSGD(4).beta(100), QSGD(4).bits(100)
    (2.5, 432)
    """

    s: int = setting("number of levels, s >= 1", low=1)
    unbiased: ClassVar[bool] = True

    def __post_init__(self):  # noqa: D105
        _check_s(self.s)

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return qsgd(x, self.s, rng=rng)

    def bits(self, d: int) -> int:  # noqa: D102
        # a float32 norm and one signed level in {-s..s} per coordinate, fixed width (notes B3, "naive")
        return 32 + d * math.ceil(math.log2(2 * self.s + 1))

    def beta(self, d: int) -> float:  # noqa: D102
        return min(d / self.s**2, math.sqrt(d) / self.s)  # notes B3: alpha = 1 + min(d/s^2, sqrt(d)/s)

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _qsgd_variance(v, self.s)

    def _message(self, x, rng, value_dtype):
        d, s = x.size, self.s
        q = qsgd(x, s, rng=rng)
        norm = float(np.sqrt(np.sum(np.asarray(x, np.float64) ** 2)))
        # Q_i = norm * sign * l_i / s with integer l_i: recover l_i by rounding (exact up to float error)
        lev = np.rint(q / norm * s).astype(np.int64) if norm > 0 else np.zeros(d, dtype=np.int64)
        return Message("qsgd", d, value_dtype, levels=lev, scale=float(np.float32(norm)), s=s)


@register_compressor("ternary")
@dataclass(frozen=True)
class Ternary(Compressor):
    """Ternary quantization scaled by the infinity norm (:func:`~simcomm.compress.ternary`).

    Examples
    --------
    >>> Ternary().bits(10), Ternary().beta(9)
    (48, 1.0)
    """

    unbiased: ClassVar[bool] = True

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return ternary(x, rng=rng)

    def bits(self, d: int) -> int:  # noqa: D102
        return 32 + 8 * math.ceil(d / 5)  # a float32 scale and five trits per byte

    def beta(self, d: int) -> float:  # noqa: D102
        return (math.sqrt(d) - 1.0) / 2.0  # notes B3 [N]

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _ternary_variance(v)

    def _message(self, x, rng, value_dtype):
        d = x.size
        q = ternary(x, rng=rng)
        m = float(np.abs(x).max())
        lev = np.sign(q).astype(np.int64) if m > 0 else np.zeros(d, dtype=np.int64)
        return Message("ternary", d, value_dtype, levels=lev, scale=float(np.float32(m)))


@register_compressor("stochastic_round")
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

    delta: float = setting("grid step, delta > 0", low=0.0)
    unbiased: ClassVar[bool] = True
    bits_exact: ClassVar[bool] = False  # the fixed-width coding's width follows the message's range

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "delta", _check_delta(self.delta))

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return stochastic_round(x, self.delta, rng=rng)

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

    def _message(self, x, rng, value_dtype):
        q = stochastic_round(x, self.delta, rng=rng)
        lev = np.rint(q / float(self.delta)).astype(np.int64)
        if lev.min() < -(2**31) or lev.max() - lev.min() > 2**31:
            raise UserError("stochastic_round: the grid indices do not fit the 32-bit offset; use a larger delta")
        return Message("sround", x.size, value_dtype, levels=lev, scale=float(self.delta))


@register_compressor("bernoulli")
@dataclass(frozen=True)
class Bernoulli(Compressor):
    """Bernoulli sparsification: keep probability ``p``, scaled by ``1/p``.

    See :func:`~simcomm.compress.bernoulli_sparsify`.

    Examples
    --------
    >>> Bernoulli(0.5).alpha(100), Bernoulli(0.5).label
    (2.0, 'bernoulli(p=0.5)')
    """

    p: float = setting("keep probability, 0 < p <= 1", low=0.0, high=1.0)
    unbiased: ClassVar[bool] = True
    bits_exact: ClassVar[bool] = False  # the number of kept coordinates is random: bits is its expectation

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "p", _check_p(self.p))

    def apply(self, x, *, rng) -> np.ndarray:  # noqa: D102
        return bernoulli_sparsify(x, self.p, rng=rng)

    def bits(self, d: int) -> float:  # noqa: D102
        # expected kept values as float32 plus their positions as indices or a bitmap, whichever is cheaper
        p = self.p
        return 32 * p * d + min(p * d * math.ceil(math.log2(max(d, 2))), d)

    def beta(self, d: int) -> float:  # noqa: D102
        return 1.0 / self.p - 1.0

    def variance(self, v) -> np.ndarray:  # noqa: D102
        return _bern_variance(v, self.p)

    def _message(self, x, rng, value_dtype):
        out = bernoulli_sparsify(x, self.p, rng=rng)
        # a kept coordinate is x_i / p, so it is non-zero exactly where x_i is; zeros carry nothing
        idx = np.flatnonzero(out)
        return Message("sparse", x.size, value_dtype, values=_cast(out[idx], value_dtype), indices=idx.astype(np.int64))


def _unknown(name: str):
    raise UserError(f"unknown compressor '{name}'{closest(name, COMPRESSORS)}; "
                    f"choose one of {', '.join(COMPRESSORS)}")


def compressor_from_name(name: str, **settings) -> Compressor:
    """Build the compressor ``name`` with ``settings`` (the class's fields): how specs name compressors.

    Parameters
    ----------
    name : str
        A key of :data:`COMPRESSORS` (``"none"``, ``"top_k"``, ``"rand_k"``, ``"rtop_k"``, ``"qsgd"``, ...).
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
        _unknown(name)
    declared = {s.name: s for s in cls.settings()}
    unknown = [key for key in settings if key not in declared]
    if unknown:
        raise UserError(f"compressor '{name}' takes {', '.join(declared) or 'no settings'}; "
                        f"got {', '.join(settings) or 'none'}")
    missing = [s for s in declared.values() if s.required and settings.get(s.name) is None]
    if missing:
        s = missing[0]
        raise UserError(f"{name} needs {s.name} ({s.doc}); pass {s.name}= (or --{s.name} on the command line)")
    return cls(**settings)


def compressor_from_settings(name: str, available: dict, **overrides) -> Compressor:
    """Build ``name`` from the settings it declares, taken from ``available`` (the rest is ignored).

    How experiments and the CLI build any registered compressor from one pool of parameters:
    ``overrides`` replace entries of ``available``; a value ``None`` counts as not given.

    Examples
    --------
    >>> compressor_from_settings("qsgd", {"s": 4, "k": 10})
    QSGD(s=4)
    """
    cls = COMPRESSORS.get(name)
    if cls is None:
        _unknown(name)
    pool = {**available, **overrides}
    return compressor_from_name(name, **{s.name: pool[s.name] for s in cls.settings()
                                         if pool.get(s.name) is not None})


def compressor_names(available=(), *, unbiased: bool | None = None, defaults: dict | None = None) -> tuple[str, ...]:
    """Registered names that can be built from the settings named in ``available`` (required ones included).

    With ``unbiased`` given, keep those whose instance built from ``defaults`` (values for ``available``)
    has that unbiasedness. The list a spec's ``Param(choices=...)`` takes.

    Examples
    --------
    >>> compressor_names(("k", "r"))[:4]
    ('none', 'top_k', 'rand_k', 'rtop_k')
    """
    avail = set(available)
    out = []
    for name, cls in COMPRESSORS.items():
        if not all(s.name in avail for s in cls.settings() if s.required):
            continue
        if unbiased is not None and compressor_from_settings(name, defaults or {}).unbiased != unbiased:
            continue
        out.append(name)
    return tuple(out)


def compressor_from_label(text: str) -> Compressor:
    """Build a compressor from its label, ``name`` or ``name(key=value, ...)`` (the inverse of ``.label``).

    Values are read by the setting's declared kind (``true``/``false`` for bools). How a spec names any
    registered compressor with its settings in one string parameter.

    Examples
    --------
    >>> compressor_from_label("scaled_sign(norm=l2)"), compressor_from_label("rand_k(k=4, scale=false)")
    (ScaledSign(norm='l2'), RandK(k=4, scale=False))
    >>> compressor_from_label(QSGD(4).label) == QSGD(4)
    True
    """
    text = str(text).strip()
    name, _, rest = text.partition("(")
    name = name.strip()
    cls = COMPRESSORS.get(name)
    if cls is None:
        _unknown(name)
    if rest and not rest.endswith(")"):
        raise UserError(f"compressor '{text}': write name(key=value, ...) with a closing parenthesis")
    kinds = {s.name: s.kind for s in cls.settings()}
    settings = {}
    for item in filter(None, (p.strip() for p in top_level_split(rest[:-1]))) if rest else ():
        key, eq, value = (t.strip() for t in item.partition("="))
        if not eq or key not in kinds:
            raise UserError(f"compressor '{text}': '{item}' is not a setting; {name} takes "
                            f"{', '.join(kinds) or 'no settings'} as key=value")
        kind = kinds[key]
        try:
            if kind == "bool":
                if value.lower() not in ("true", "false"):
                    raise ValueError
                settings[key] = value.lower() == "true"
            else:
                settings[key] = {"int": int, "float": float}.get(kind, str)(value)
        except ValueError:
            raise UserError(f"compressor '{text}': {key} = {value!r} is not a valid {kind}") from None
    return compressor_from_name(name, **settings)
