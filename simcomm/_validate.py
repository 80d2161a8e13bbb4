"""Argument checks every layer shares: integers, finite numbers in a range, one-of choices, generators.

Each check returns the normalised value (``int``, ``float``, the choice, a ``numpy.random.Generator``)
or raises :class:`~simcomm.UserError` with the house one-liner, ``"<what> must be <allowed>, got
<value>"`` (plus a hint where there is one), which the CLI prints as one line with exit code 2. A bool
is never an integer or a number here (``True`` for ``n`` is a mistake, not 1).

The backend is normalised by :func:`simcomm.backends.get_backend` (a name, a module or ``None``), the
one place that knows the backends; this module sits below it and imports nothing from simcomm but
the errors.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError, closest

__all__ = ["integer", "positive_int", "real", "step_size", "one_of", "generator", "is_integer", "is_real",
           "finite_array", "positive"]


def is_integer(value) -> bool:
    """Whether ``value`` is a Python or numpy integer (a bool is not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value) -> bool:
    """Whether ``value`` is a Python or numpy real number (a bool is not)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _range(low, high, low_open=False, high_open=False) -> str:
    lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
    if lo and hi:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    return lo or hi


def integer(value, what: str, *, low: int | None = None, high: int | None = None, hint: str = "") -> int:
    """``value`` as an ``int`` if it is an integer within ``[low, high]``, else a one-line error.

    Examples
    --------
    >>> integer(3, "k", low=1)
    3
    >>> integer(0, "k", low=1)
    Traceback (most recent call last):
    ...
    simcomm._errors.UserError: k must be an integer >= 1, got 0
    """
    ok = is_integer(value) and (low is None or value >= low) and (high is None or value <= high)
    if not ok:
        span = _range(low, high)
        raise UserError(f"{what} must be an integer{' ' + span if span else ''}, got {value!r}"
                        f"{'; ' + hint if hint else ''}")
    return int(value)


def positive_int(value, what: str, hint: str = "") -> int:
    """:func:`integer` with ``low=1``."""
    return integer(value, what, low=1, hint=hint)


def real(value, what: str, *, low: float | None = None, high: float | None = None, low_open: bool = False,
         high_open: bool = False, hint: str = "") -> float:
    """``value`` as a ``float`` if it is a finite number in the range, else a one-line error.

    Examples
    --------
    >>> real(0.5, "beta", low=0.0, high=1.0, high_open=True)
    0.5
    >>> real(float("nan"), "sigma", low=0.0)
    Traceback (most recent call last):
    ...
    simcomm._errors.UserError: sigma must be a finite number >= 0, got nan
    """
    ok = is_real(value) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        span = _range(low, high, low_open, high_open)
        raise UserError(f"{what} must be a finite number{' ' + span if span else ''}, got {value!r}"
                        f"{'; ' + hint if hint else ''}")
    return float(value)


def step_size(lr, what: str = "step size lr") -> float:
    """A step size: a finite number ``> 0``.

    Examples
    --------
    >>> step_size(0.1)
    0.1
    """
    return real(lr, what, low=0.0, low_open=True)


def one_of(value, choices, what: str):
    """``value`` if it is one of ``choices``, else ``unknown <what> 'x' (did you mean 'y'?); choose one of ...``.

    Examples
    --------
    >>> one_of("push", ("push", "pull"), "weighting")
    'push'
    """
    if value not in choices:
        raise UserError(f"unknown {what} '{value}'{closest(value, choices)}; choose one of "
                        f"{', '.join(str(c) for c in choices)}")
    return value


def generator(rng, what: str | None = None) -> np.random.Generator:
    """``numpy.random.default_rng(rng)``; with ``what``, ``None`` is refused (no unseeded draw).

    Examples
    --------
    >>> generator(3).integers(10) == generator(3).integers(10)
    np.True_
    """
    if what is not None and rng is None:
        raise UserError(f"{what} is random: pass rng= (a seed or a numpy Generator), one draw per call")
    return np.random.default_rng(rng)


def finite_array(a, what: str, dtype=np.float64) -> np.ndarray:
    """``a`` as an array of ``dtype`` (``None``: its own), or one line naming the first NaN/inf entry.

    Training on a NaN or inf only diverges, so it is refused up front.

    Examples
    --------
    >>> finite_array([[1, 2], [3, 4]], "X").dtype
    dtype('float64')
    """
    arr = np.asarray(a, dtype=dtype)
    if not np.all(np.isfinite(arr)):
        where = np.argwhere(~np.isfinite(arr))
        at = f" (first at index {tuple(int(i) for i in where[0])})" if arr.ndim else ""
        raise UserError(f"{what} has {len(where)} NaN or inf entr{'y' if len(where) == 1 else 'ies'}{at}; "
                        "clean or drop them before training")
    return arr


def positive(name: str, value, *, integer: bool = False, zero: bool = False):
    """``value`` as a float (an int with ``integer``) if finite and > 0 (>= 0 with ``zero``), else a one-line error."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(float(value)) and (float(value) >= 0 if zero else float(value) > 0)
    if ok and integer and float(value) != int(value):
        ok = False
    if not ok:
        need = "an integer >= 1" if integer else ("a finite number >= 0" if zero else "a finite number > 0")
        raise UserError(f"{name} = {value!r} is not allowed; use {need}")
    return int(value) if integer else float(value)
