r"""The topology registry: every constructor a name can reach, with its parameters and declared properties.

A constructor ``f(n, **params) -> Topology`` becomes buildable by name (``simcomm topology NAME``, a
spec's ``topology = "NAME"`` or ``"NAME:k=2"``, :func:`simcomm.topology.build`) by one decorator::

    @topology("ring", symmetric=True)
    def ring(n: int) -> Topology: ...

It declares what :func:`~simcomm.topology.build` ``(name, n)`` gives with the constructor's defaults:

* ``params``: the keywords it takes besides ``n`` (``shape``, ``p``, ``rule``, ``rng``, ``k`` or its
  own, e.g. ``{"s": "targets per node"}``); their defaults are the constructor's own. ``build`` refuses
  a keyword the constructor does not declare, except ``rule`` and ``rng``, which every name accepts
  (the CLI always passes them) and only the declaring constructors receive;
* ``stochasticity`` (``"doubly"``, ``"row"``, ``"column"``: :data:`~simcomm.topology.STOCHASTICITIES`),
  ``symmetric`` (every layer has ``W = W^T``), ``time_varying`` (a periodic sequence of layers),
  ``random`` (one draw per call from ``rng``) and ``exact`` (the product of one period is exactly
  :math:`J = \mathbf 1\mathbf 1^\top/n`: ``True``, or a predicate of ``n`` for constructors exact only
  for some ``n``).

The spec choices, the CLI help, ``simcomm list --topologies`` and the contract test
(``tests/test_topology_contract.py``) read this registry; no list of names is typed anywhere else.
This module imports nothing from :mod:`simcomm.topology`, so the constructor modules can use the
decorator without importing each other.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from simcomm._errors import UserError, closest
from simcomm._params import Param

__all__ = ["topology", "TopologyInfo", "TOPOLOGIES", "get_topology", "topology_names", "SHARED_PARAMS", "AMBIENT"]

#: Keywords shared by several constructors: kind, domain and the help text the CLI and ``simcomm list`` show.
SHARED_PARAMS = {
    "shape": Param("str", doc="grid/torus shape RxC (default: the most square factorisation of n)"),
    "p": Param("float", low=0.0, low_open=True, high=1.0, doc="edge probability in (0, 1]"),
    "rule": Param("str", choices=("metropolis", "max_degree"), doc="weights of undirected graphs: metropolis or "
                                                                  "max_degree"),
    "rng": Param("int", low=0, doc="seed or numpy Generator of the one draw"),
    "k": Param("int", low=1, doc="maximum number of peers per step"),
}
#: Keywords every name accepts and only the constructors that declare them receive.
AMBIENT = ("rule", "rng")
_STOCHASTICITIES = ("doubly", "row", "column")  # simcomm.topology.STOCHASTICITIES (no import: module doc)


@dataclass(frozen=True)
class TopologyInfo:
    """A registered topology constructor and what it declares (module doc).

    Attributes
    ----------
    name : str
    make : callable
        ``make(n, **params) -> Topology``.
    params : dict of str to Param
        Declared keywords: kind, domain and help text (defaults are the constructor's own, :meth:`defaults`).
    stochasticity : {"doubly", "row", "column"}
    symmetric : bool
    time_varying : bool
    random : bool
    exact : bool or callable
        See :meth:`exact_for`.
    aliases : tuple of str
        Other names ``build`` accepts for it.
    """

    name: str
    make: Callable
    params: dict = field(default_factory=dict)
    stochasticity: str = "doubly"
    symmetric: bool = True
    time_varying: bool = False
    random: bool = False
    exact: bool | Callable = False
    aliases: tuple = ()

    def exact_for(self, n: int) -> bool:
        """Whether the product of one period is exactly ``J`` for ``n`` nodes (as declared)."""
        return bool(self.exact(n) if callable(self.exact) else self.exact)

    def defaults(self) -> dict:
        """The declared keywords' defaults, read from the constructor's signature."""
        sig = inspect.signature(self.make).parameters
        return {k: sig[k].default for k in self.params if k in sig and sig[k].default is not inspect.Parameter.empty}

    @property
    def doc(self) -> str:
        """First line of the constructor's docstring (plain text)."""
        import re

        line = (self.make.__doc__ or "").strip().splitlines()[0] if self.make.__doc__ else ""
        return re.sub(r":\w+:", "", line).replace("`", "")


#: Every registered constructor, by name, in registration order.
TOPOLOGIES: dict[str, TopologyInfo] = {}


def topology(name: str, *, params=(), stochasticity: str = "doubly", symmetric: bool = True,
             time_varying: bool = False, random: bool = False, exact: bool | Callable = False, aliases=()):
    """Register ``make(n, **params) -> Topology`` under ``name`` (a decorator; module doc).

    Parameters
    ----------
    name : str
        What :func:`~simcomm.topology.build`, specs and the CLI call it.
    params : sequence of str, or dict of str to Param
        Keywords the constructor takes besides ``n``: names of :data:`SHARED_PARAMS`, or a dict that
        declares the others (``None`` takes the shared declaration).
    stochasticity, symmetric, time_varying, random, exact
        Declared properties (module doc); the contract test holds every constructor to them.
    aliases : sequence of str
        Short names.

    Returns
    -------
    callable
        The decorator; it returns the constructor unchanged.

    Examples
    --------
    >>> from simcomm.topology import TOPOLOGIES
    >>> TOPOLOGIES["ring"].symmetric, TOPOLOGIES["one_peer_exponential"].exact_for(8)
    (True, True)
    """
    if stochasticity not in _STOCHASTICITIES:
        raise ValueError(f"topology {name!r}: stochasticity must be one of {_STOCHASTICITIES}, got {stochasticity!r}")
    docs = {k: (params[k] if isinstance(params, dict) else None) or SHARED_PARAMS.get(k) for k in params}
    missing = [k for k, v in docs.items() if not isinstance(v, Param)]
    if missing:
        raise ValueError(f"topology {name!r}: declare {missing} (params={{name: Param(kind, ..., doc=...)}})")

    def register(make):
        # a name or alias of ANOTHER entry may not be taken (re-registering a name replaces it)
        taken = {a for other in TOPOLOGIES.values() if other.name != name for a in (other.name, *other.aliases)}
        clash = sorted({name, *aliases} & taken)
        if clash:
            raise ValueError(f"topology name(s) {clash} already registered")
        TOPOLOGIES[name] = TopologyInfo(name, make, docs, stochasticity, bool(symmetric), bool(time_varying),
                                        bool(random), exact, tuple(aliases))
        return make

    return register


def topology_names(**declared) -> tuple:
    """Registered names whose declared properties equal ``declared`` (e.g. ``random=False``), in order.

    Examples
    --------
    >>> "one_peer_exponential" in topology_names(time_varying=True)
    True
    """
    bad = [k for k in declared if k not in TopologyInfo.__dataclass_fields__]
    if bad:
        raise TypeError(f"topology_names: unknown properties {bad}")
    return tuple(n for n, info in TOPOLOGIES.items() if all(getattr(info, k) == v for k, v in declared.items()))


def get_topology(name: str) -> TopologyInfo:
    """The registered constructor called ``name`` (or one of its aliases); a one-line error with the closest match.

    Examples
    --------
    >>> get_topology("base").name
    'base_graph'
    """
    if name in TOPOLOGIES:
        return TOPOLOGIES[name]
    for info in TOPOLOGIES.values():
        if name in info.aliases:
            return info
    known = list(TOPOLOGIES)
    raise UserError(f"unknown topology '{name}'{closest(name, known)}; choose one of {', '.join(known)}")
