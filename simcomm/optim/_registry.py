"""The registry of named training methods: every method a composition, declared with its parameters.

A named method is a function ``build(**settings) -> Method`` (:mod:`simcomm.optim._algebra`) registered
with :func:`method` and the :class:`~simcomm._params.Param` schema of its settings, the schema
experiments use. A spec names it (the ``train`` experiment), ``simcomm list --methods`` lists it, and
the contract tests run every registered method. Settings that name a component (a compressor label
such as ``"qsgd(s=4)"``, an error-feedback variant, a topology) are strings in a spec and objects or
strings from Python.

Examples
--------
>>> "compressed_gd" in METHODS
True
>>> get_method("compresed_gd")   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
simcomm._errors.UserError: unknown method 'compresed_gd' (did you mean 'compressed_gd'?); ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from simcomm._errors import UserError, closest

__all__ = ["METHODS", "ACCELERATIONS", "FAMILIES", "MethodInfo", "method", "accelerate", "get_method", "build_method"]

#: name -> :class:`MethodInfo`, in registration order
METHODS: dict[str, "MethodInfo"] = {}
#: method name -> its registered accelerations, tried in order by :func:`simcomm.optim.run`
ACCELERATIONS: dict[str, list] = {}
#: family -> how a method of it is run (the problems it takes, the watch :func:`simcomm.optim.run` picks)
FAMILIES = {
    "server": "spec experiment train_{name}; run(problem, method, steps) on a Problem, the server's Monitor",
    "nodes": "spec experiment train_{name}; run(problem, method, steps) on a NodeProblem, the method's own watch",
    "consensus": "run(None, method, steps, x0=X0) from the nodes' own values, the method's own watch",
    "model": "its public function (simcomm.optim); run(problem, method, steps, watch=...) with EFWatch or "
              "ImportanceWatch",
}


@dataclass(frozen=True)
class MethodInfo:
    """A registered method: its name, builder, declared settings and what it runs on.

    Attributes
    ----------
    name : str
    build : callable
        ``build(**settings) -> Method``.
    params : dict of str to Param
        The settings a spec may give (their defaults fill what it leaves out).
    family : str
        What it runs on (:data:`FAMILIES`): ``"server"`` (a :class:`simcomm.models.Problem` of ``n``
        workers and a server), ``"nodes"`` (a :class:`simcomm.models.NodeProblem`, decentralized, every
        node from the problem's ``x0``), ``"consensus"`` (no problem: the nodes average their own start
        ``X0``, ``(n, d)``) or ``"model"`` (a model trained on data, :class:`simcomm.optim.ModelProblem`).
    doc : str
        The first line of the builder's docstring.
    """

    name: str
    build: Callable
    params: dict = field(default_factory=dict)
    family: str = "server"
    doc: str = ""

    @property
    def run_as(self) -> str:
        """How this method is run (``simcomm list --methods``)."""
        return FAMILIES[self.family].format(name=self.name)

    def settings(self, given: dict, where: str | None = None) -> dict:
        """``given`` checked against :attr:`params` (spec values) with the defaults filled in.

        A value that is not a plain spec value (an object built in Python, e.g. a compressor) is passed on
        unchecked: the builder takes objects and names alike.
        """
        where = where or f"method '{self.name}'"
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise UserError(f"{where}: unknown setting '{unknown[0]}'{closest(unknown[0], self.params)}; "
                            f"'{self.name}' takes {', '.join(self.params) or 'no settings'}")
        out = {}
        for key, p in self.params.items():
            if key in given and given[key] is not None:
                v = given[key]
                out[key] = p.check(key, v, where) if isinstance(v, (bool, int, float, str)) else v
            elif p.default is None:
                raise UserError(f"{where}: setting '{key}' is required ({p.doc}); give {key} = ...")
            else:
                out[key] = p.default
        return out

    def __call__(self, **settings):
        """The method built from ``settings`` (checked, defaults filled)."""
        checked = self.settings(settings)
        return self.build(**checked)._replace(name=self.name, settings=checked)


def method(name: str, *, params: dict, family: str = "server"):
    """Register ``build(**settings) -> Method`` as the named method ``name`` with its declared ``params``."""
    if family not in FAMILIES:
        raise ValueError(f"method '{name}': unknown family '{family}'; use one of {', '.join(FAMILIES)}")

    def deco(fn):
        if name in METHODS and METHODS[name].build is not fn:
            raise ValueError(f"method name '{name}' is already registered by {METHODS[name].build.__qualname__}")
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        METHODS[name] = MethodInfo(name, fn, dict(params), family, doc)
        return fn

    return deco


def accelerate(name: str):
    """Register ``fast(problem, method, steps, **run_options) -> Trace | None`` as an acceleration of ``name``.

    A compiled path of one particular composition (a fused kernel, a whole run in one compiled loop):
    :func:`simcomm.optim.run` tries the registered accelerations of a method in order and uses the first
    that returns a trace; one returns ``None`` where it does not apply (another backend, an observer, a
    problem it does not know), and the composition runs step by step. It runs inside the run's entry
    point, so the backend it computes on is the active one (:func:`simcomm.backends.get_backend`). A
    parity test compares every acceleration with the composition it replaces.
    """

    def deco(fn):
        ACCELERATIONS.setdefault(name, [])
        if fn not in ACCELERATIONS[name]:
            ACCELERATIONS[name].append(fn)
        return fn

    return deco


def get_method(name: str) -> MethodInfo:
    """The registered method ``name``, or a one-line error that lists the names."""
    _load()
    info = METHODS.get(name)
    if info is None:
        raise UserError(f"unknown method '{name}'{closest(name, METHODS)}; use one of {', '.join(METHODS)}")
    return info


def build_method(name: str, **settings):
    """Build the named method from its settings (spec values or objects)."""
    return get_method(name)(**settings)


def _load() -> None:
    import simcomm.optim.methods  # noqa: F401  (registers the shipped methods)
