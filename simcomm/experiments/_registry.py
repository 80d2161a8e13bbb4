"""Registry of experiments: plain functions ``f(params, rng, backend) -> rows``.

An experiment declares the parameters it accepts as :class:`Param` objects, so a spec can be
validated (unknown key, wrong type, out of domain) before anything runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

from simcomm._errors import SpecError, closest
from simcomm._params import Param

__all__ = ["Param", "Experiment", "experiment", "EXPERIMENTS", "get_experiment"]


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
    # importable packages the experiment needs beyond the core install (an extra: "torch"); a check
    # without them lists its claims as not run, in one line, instead of failing on them
    requires: tuple = ()

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
               wall_clock: tuple = (), requires: tuple = ()):
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

    ``requires`` names the packages of an extra the experiment imports (``("torch",)``):
    :func:`simcomm.checking.missing_requirements` reports the claims that cannot run where one is absent.
    """

    def register(func):
        EXPERIMENTS[name] = Experiment(name, _on_backend(func), dict(params or {}), check, (func.__doc__ or "").strip(),
                                       cost, deterministic, tuple(columns), tuple(wall_clock), tuple(requires))
        return func

    return register


def _on_backend(func):
    """``func`` run with its third argument, the backend, active (:func:`simcomm.backends.use`) while it runs."""
    from simcomm.backends import use

    @functools.wraps(func)
    def run(params, rng, backend):
        with use(backend):
            return func(params, rng, backend)

    return run


#: callables that may register more experiments, called when a name is not found
ON_MISS: list[Callable[[], None]] = []


def get_experiment(name: str) -> Experiment:
    """Look up a registered experiment (importing the experiment modules on first use)."""
    from simcomm.experiments import load_all

    load_all()

    if name not in EXPERIMENTS:
        for late in ON_MISS:  # registries that derive experiments (a method a user's plugin registered later)
            late()
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise SpecError(
            f"unknown experiment '{name}'{closest(name, EXPERIMENTS)}; registered: {', '.join(sorted(EXPERIMENTS))} "
            "(your own: load its module with --plugin FILE.py or plugins = [\"FILE.py\"] at the top of the spec)"
        ) from None
