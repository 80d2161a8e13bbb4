"""Topologies by name: what ``simcomm topology NAME``, the specs' ``topology`` strings and the MPI run call.

Names come from the registry (:mod:`simcomm.topology._registry`): :func:`build` looks the name up,
checks the keywords against what the constructor declares and calls it. Importing this module
imports every constructor module, so every shipped topology is registered by then.
"""

from __future__ import annotations

import inspect

from simcomm._errors import UserError
from simcomm.topology import _basegraph, _directed  # noqa: F401  (importing registers their constructors)
from simcomm.topology._fmmc import fastest_mixing
from simcomm.topology._graphs import Topology, _check_rule
from simcomm.topology._registry import AMBIENT, TOPOLOGIES, get_topology, topology_names

__all__ = ["build", "WEIGHTS", "split_name", "names_with", "registry_aliases"]

#: Weightings accepted by :func:`build` besides the rule: ``fastest`` = :func:`simcomm.topology.fastest_mixing`.
WEIGHTS = ("rule", "fastest")


def names_with(param: str) -> tuple:
    """Registered names whose constructor declares the keyword ``param`` (e.g. ``"k"``)."""
    return tuple(name for name, info in TOPOLOGIES.items() if param in info.params)


def registry_aliases() -> dict:
    """Short name -> registered name, for every alias."""
    return {a: name for name, info in TOPOLOGIES.items() for a in info.aliases}


def _value(text: str):
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def split_name(name):
    """``"base_graph:k=2"`` -> ``("base_graph", {"k": 2})``; ``"s_out:s=3,weighting=push"`` also works.

    Examples
    --------
    >>> split_name("base_graph:k=2"), split_name("ring")
    (('base_graph', {'k': 2}), ('ring', {}))
    """
    if not isinstance(name, str) or ":" not in name:
        return name, {}
    head, _, tail = name.partition(":")
    params = {}
    for item in tail.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise UserError(f"topology '{name}' is not understood; write NAME or NAME:key=value "
                            "(e.g. base_graph:k=2)")
        params[key.strip()] = _value(value)
    return head.strip(), params


def build(name: str, n: int, *, shape=None, p: float | None = None, rule: str = "metropolis", rng=None,
          k: int | None = None, weights: str = "rule", **params) -> Topology:
    r"""Build a registered topology from its name and a node count (what ``simcomm topology`` calls).

    Parameters
    ----------
    name : str
        A registered name (:data:`simcomm.topology.TOPOLOGIES`) or alias, optionally with keywords:
        ``"base_graph:k=2"``.
    n : int
        Number of nodes, ``>= 2``. ``hypercube`` needs a power of 2; ``grid``/``torus`` need
        ``n = r*c`` (``shape`` or the most square factorisation).
    shape : str or (int, int), optional
        ``"RxC"`` or ``(r, c)`` for ``grid`` and ``torus``.
    p : float, optional
        Edge probability for ``erdos_renyi`` (default 0.5, the paper's ½-random graph).
    rule : {"metropolis", "max_degree"}
        Weight rule for undirected graphs. Regular graphs (ring, torus, hypercube, complete) get the
        same weights under both rules; the exponential graphs have fixed uniform weights.
    rng : numpy.random.Generator or seed, optional
        Randomness of the random topologies (``erdos_renyi``, ``random_matching``: one draw).
    k : int, optional
        Maximum number of peers per step for the constructors that declare it (``base_graph``,
        ``simple_base_graph``, ``hyper_hypercube``; default 1); also written ``"base_graph:k=2"``.
    weights : {"rule", "fastest"}
        ``fastest`` replaces the weights of a static undirected graph by the fastest-mixing ones
        (:func:`simcomm.topology.fastest_mixing`, needs cvxpy).
    **params
        Keywords of a constructor that declares its own (e.g. ``s`` of ``s_out``).

    Raises
    ------
    UserError
        Unknown name (with the closest match), a keyword the constructor does not take, ``n < 2``,
        bad shape, ``p`` outside ``(0, 1]``, ...

    Examples
    --------
    >>> from simcomm.topology import build
    >>> build("torus", 12).shape
    (3, 4)
    >>> build("base:k=2", 9).period
    2
    """
    name, extra = split_name(name)
    given = {"shape": shape, "p": p, "k": k, **params}
    for key, value in extra.items():
        if given.get(key) is not None and given[key] != value:
            raise UserError(f"topology '{name}:{key}={value}' says {key}={value} but {key}={given[key]} was also "
                            f"given; give {key} once")
        given[key] = value
    if weights not in WEIGHTS:
        raise UserError(f"unknown weights '{weights}'; choose one of {', '.join(WEIGHTS)}")
    info = get_topology(name)
    if weights == "fastest":
        return fastest_mixing(build(info.name, n, rule=rule, rng=rng, **given))
    for key, value in given.items():
        if value is not None and key not in info.params:
            takers = names_with(key)
            if not takers:
                takes = ", ".join(info.params) or "no keywords"
                raise UserError(f"no topology takes '{key}'; {info.name} takes {takes}")
            only = " only" if len(takers) == 1 else ""
            raise UserError(f"--{key} applies to {', '.join(takers)}{only}, not to {info.name}")
    _check_rule(rule)
    kwargs = {key: value for key, value in given.items() if value is not None}
    kwargs.update({key: value for key, value in (("rule", rule), ("rng", rng)) if key in info.params})
    sig = inspect.signature(info.make).parameters
    need = [key for key in info.params if key not in AMBIENT and key not in kwargs and key in sig
            and sig[key].default is inspect.Parameter.empty]
    if need:
        example = ",".join(f"{key}=..." for key in need)
        raise UserError(f"topology {info.name} needs {', '.join(need)}; write {info.name}:{example}")
    if info.random and kwargs.get("rng") is None:
        raise UserError(f"topology {info.name} is random: pass rng= (a seed or a numpy Generator), one draw per call")
    return info.make(n, **kwargs)


def __getattr__(attr):
    # NAMES / ALIASES / WITH_K were typed lists; they are now read from the registry, live
    if attr == "NAMES":
        return topology_names()
    if attr == "ALIASES":
        return registry_aliases()
    if attr == "WITH_K":
        return names_with("k")
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
