"""A named, typed, bounded parameter: the one schema of everything a spec or the command line can set.

Experiments (:mod:`simcomm.experiments`), training methods (:mod:`simcomm.optim.methods`), compressors
(:meth:`simcomm.compress.Compressor.settings`) and topology constructors (:mod:`simcomm.topology`)
declare what they accept as :class:`Param` objects, so a spec or a command line is validated (unknown
key, wrong type, out of domain) before anything runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simcomm._errors import SpecError, closest

__all__ = ["Param", "top_level_split"]


@dataclass(frozen=True)
class Param:
    """Declared parameter of an experiment.

    Parameters
    ----------
    kind : {"int", "float", "str", "bool"}
        Type of the value. Ints are accepted where floats are expected.
    default : object, optional
        Value used when the spec does not set it; ``None`` means required.
    low, high : float, optional
        Inclusive domain limits for numbers (``low_open``/``high_open`` make them strict).
    choices : tuple, optional
        Allowed values for strings.
    doc : str
        One line shown by ``simcomm list --params`` and in error messages.
    former : str, optional
        The name the parameter had before a rename. A cell's random stream is keyed by its parameters
        (:func:`simcomm.runner.cell_id`) under their former names, so a rename changes no draw and
        results computed before it are reproduced bit for bit; a spec, ``--set`` or control that still
        uses the former name gets a one-line error naming the new one.
    name : str
        The parameter's name where the schema is a list (a compressor's settings); empty in a dict.
    keyed_at_default : bool
        ``False`` for a parameter added to an experiment that already has published results (a
        negative-control switch): while it has its default value it is left out of the cell's
        random-stream key (:func:`simcomm.runner.cell_id`), so adding it moves no stream and every
        result computed before it is reproduced bit for bit; any other value is keyed as usual.
    column_at_default : bool
        ``False`` for a parameter added later that changes only what is recorded (a trace switch): when
        every cell of a spec has its default value, it is left out of the results table
        (:func:`simcomm.runner.run_many`), so the tables computed before it stay identical byte for byte;
        it changes no draw, so it never enters the random-stream key (the end states are the same with
        the trace on).
    """

    kind: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    doc: str = ""
    former: str | None = None
    keyed_at_default: bool = True
    name: str = ""
    column_at_default: bool = True

    @property
    def required(self) -> bool:
        """Whether a value must be given (no default)."""
        return self.default is None

    def allowed(self) -> str:
        """Describe the allowed values in words."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        lo = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        hi = "" if self.high is None else f"{'<' if self.high_open else '<='} {self.high:g}"
        rng = " and ".join(s for s in (lo, hi) if s)
        words = {"float": "a number", "int": "an integer", "str": "a string", "bool": "true or false"}
        return words.get(self.kind, f"a {self.kind}") + (f" {rng}" if rng else "")

    def check(self, key: str, value: Any, where: str) -> Any:
        """Return ``value`` coerced to the declared kind, or raise :class:`SpecError`."""
        bad = f"{where}: '{key}' = {value!r} is not allowed; use {self.allowed()}"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise SpecError(bad)
            return value
        if self.kind == "str":
            if not isinstance(value, str):
                raise SpecError(bad)
        elif self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(bad)
            if abs(value) > 2**63 - 1:  # numpy's int64 holds every size a cell computes with
                raise SpecError(f"{where}: '{key}' = {value} is too large to compute with; use {self.allowed()} "
                                "that fits in 64 bits (below 2**63)")
        elif self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SpecError(bad)
            value = float(value)
            if not math.isfinite(value):
                raise SpecError(bad)
        if self.choices is not None and value not in self.choices:
            raise SpecError(bad + closest(value, self.choices))
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise SpecError(bad)
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            raise SpecError(bad)
        return value


def top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses (a setting may itself be a label, as in ``compose``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out
