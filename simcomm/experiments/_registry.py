"""Registry of experiments: plain functions ``f(params, rng, backend) -> rows``.

An experiment declares the parameters it accepts as :class:`Param` objects, so a spec can be
validated (unknown key, wrong type, out of domain) before anything runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from simcomm._errors import SpecError, closest

__all__ = ["Param", "Experiment", "experiment", "EXPERIMENTS", "get_experiment"]


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
    keyed_at_default : bool
        ``False`` for a parameter added to an experiment that already has published results (a
        negative-control switch): while it has its default value it is left out of the cell's
        random-stream key (:func:`simcomm.runner.cell_id`), so adding it moves no stream and every
        result computed before it is reproduced bit for bit; any other value is keyed as usual.
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

    def allowed(self) -> str:
        """Describe the allowed values in words."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        lo = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        hi = "" if self.high is None else f"{'<' if self.high_open else '<='} {self.high:g}"
        rng = " and ".join(s for s in (lo, hi) if s)
        words = {"float": "a number", "int": "an integer", "str": "a string", "bool": "true or false"}
        return words[self.kind] + (f" {rng}" if rng else "")

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


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: its name, function, declared parameters and cell check."""

    name: str
    func: Callable
    params: dict = field(default_factory=dict)
    check: Callable | None = None  # check(params) -> None or raise UserError (cross-parameter rules)
    doc: str = ""
    # cost(params) -> (seconds, bytes): rough time and peak memory of ONE replicate of a cell, so a run
    # can be estimated (and a cell that cannot fit in memory refused) before anything starts.
    cost: Callable | None = None
    # True (or a predicate of a cell's params) when the rows do not depend on the rng (a closed form,
    # an eigenvalue, a deterministic recursion): only then may a claim judge one replicate per cell,
    # exactly, without an interval.
    deterministic: bool | Callable = False
    # Design columns the experiment emits inside a cell (a method, a topology, a step count looped over
    # within one run): they split the judged cells as the spec's grid does. Every other column it
    # emits is a measurement and never splits a cell.
    columns: tuple = ()
    # metrics that are wall-clock measurements (a solver's seconds): the runner moves their rows out of
    # the table into meta.json ("wall_clock"), so a resumed or re-run table is identical byte for byte.
    wall_clock: tuple = ()

    def is_deterministic(self, params: dict) -> bool:
        """Whether the rows of the cell ``params`` do not depend on the rng (see ``deterministic``)."""
        return bool(self.deterministic(params) if callable(self.deterministic) else self.deterministic)


    def renamed(self, key: str) -> str | None:
        """The parameter whose former name is ``key`` (see :attr:`Param.former`), else ``None``."""
        return next((name for name, p in self.params.items() if p.former == key), None)

    def validate(self, params: dict, where: str) -> dict:
        """Fill defaults, reject unknown keys, wrong types and out-of-domain values."""
        out = {}
        for key, value in params.items():
            if key not in self.params:
                if new := self.renamed(key):
                    raise SpecError(f"{where}: '{key}' was renamed to '{new}'; write {new} = ... instead")
                raise SpecError(
                    f"{where}: unknown parameter '{key}' for experiment '{self.name}'"
                    f"{closest(key, self.params)}; allowed: {', '.join(sorted(self.params))}"
                )
            out[key] = self.params[key].check(key, value, where)
        for key, p in self.params.items():
            if key not in out:
                if p.default is None:
                    raise SpecError(f"{where}: experiment '{self.name}' needs '{key}' ({p.allowed()})")
                out[key] = p.default
        if self.check is not None:
            try:
                self.check(out)
            except SpecError:
                raise
            except ValueError as exc:
                raise SpecError(f"{where}: {exc}") from None
        return out


EXPERIMENTS: dict[str, Experiment] = {}


def experiment(name: str, *, params: dict | None = None, check: Callable | None = None,
               cost: Callable | None = None, deterministic: bool | Callable = False, columns: tuple = (),
               wall_clock: tuple = ()):
    """Register ``func(params, rng, backend) -> list[dict]`` under ``name``.

    Each returned row is ``dict(metric=str, value=float, **extra_columns)``.

    ``cost(params) -> (seconds, bytes)``, optional, is a rough model of one replicate's run time and
    peak memory (order of magnitude is enough): ``simcomm run``/``check`` print the estimate, refuse
    a cell that cannot fit in memory before it starts, and refuse a run longer than the limit. Without
    it, the run times one replicate of the first cell when the run is large.

    ``deterministic`` (a bool, or a predicate of a cell's params) declares that the rows do not depend
    on ``rng`` (tests check it on two seeds):
    only such an experiment may have one-replicate cells, judged exactly. ``columns`` names the design
    columns the experiment emits within a cell (a method compared inside one run, a step count); the
    judge groups cells by them and by the spec's parameters, never by measured columns.

    ``wall_clock`` names metrics that measure elapsed time (they differ between runs): their rows go
    to ``meta.json`` under ``"wall_clock"``, never into ``table.csv``, so no claim can read them.
    """

    def register(func):
        EXPERIMENTS[name] = Experiment(name, func, dict(params or {}), check, (func.__doc__ or "").strip(), cost,
                                       deterministic, tuple(columns), tuple(wall_clock))
        return func

    return register


def get_experiment(name: str) -> Experiment:
    """Look up a registered experiment (importing the experiment modules on first use)."""
    import simcomm.experiments  # noqa: F401  (registers everything)

    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise SpecError(
            f"unknown experiment '{name}'{closest(name, EXPERIMENTS)}; registered: {', '.join(sorted(EXPERIMENTS))} "
            "(your own: load its module with --plugin FILE.py or plugins = [\"FILE.py\"] at the top of the spec)"
        ) from None
