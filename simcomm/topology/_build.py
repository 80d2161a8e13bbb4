"""Topologies by name: what ``simcomm topology NAME``, the specs' ``topology`` strings and the MPI run call.

The one place that knows every constructor (static graphs, the exponential family, the Base-(k+1)
family and the fastest-mixing weights), so the constructor modules never import each other.
"""

from __future__ import annotations

import difflib
import math

from simcomm._errors import UserError
from simcomm.topology import _basegraph
from simcomm.topology._directed import directed_exponential, directed_ring, random_matching
from simcomm.topology._fmmc import fastest_mixing
from simcomm.topology._graphs import (
    Topology,
    _ceil_log2,
    _check_n,
    _check_rule,
    complete,
    erdos_renyi,
    exponential,
    grid,
    hypercube,
    one_peer_exponential,
    ring,
    star,
    torus,
)

__all__ = ["build", "NAMES", "ALIASES", "WITH_K", "WEIGHTS"]


# --------------------------------------------------------------------------- by name (CLI)

#: Names accepted by :func:`build` (and ``simcomm topology NAME``).
NAMES = ("ring", "star", "grid", "torus", "hypercube", "complete", "erdos_renyi", "exponential", "one_peer_exponential",
         "directed_ring", "directed_exponential", "random_matching",
         "base_graph", "simple_base_graph", "hyper_hypercube", "one_peer_hypercube")
#: Short names accepted by :func:`build` for the Base-(k+1) family.
ALIASES = {"base": "base_graph", "simple_base": "simple_base_graph"}
#: Constructors that take a maximum degree ``k`` (``--k``; ``"NAME:k=K"`` in a spec's topology string).
WITH_K = ("base_graph", "simple_base_graph", "hyper_hypercube")
#: Weightings accepted by :func:`build` besides the rule: ``fastest`` = :func:`simcomm.topology.fastest_mixing`.
WEIGHTS = ("rule", "fastest")


def _split_k(name: str, k):
    """``"base_graph:k=2"`` -> ``("base_graph", 2)``; a plain name keeps ``k``."""
    if not isinstance(name, str) or ":" not in name:
        return name, k
    head, _, tail = name.partition(":")
    key, _, value = tail.partition("=")
    if key.strip() != "k" or not value.strip().isdigit():
        raise UserError(f"topology '{name}' is not understood; write NAME or NAME:k=K (e.g. base_graph:k=2)")
    if k is not None and int(value) != k:
        raise UserError(f"topology '{name}' says k={value} but k={k} was also given; give k once")
    return head.strip(), int(value)


def _parse_shape(shape, n: int, name: str) -> tuple[int, int]:
    if shape is None:
        # the most square factorisation r <= c with r >= 2
        r = math.isqrt(n)
        while r >= 2 and n % r:
            r -= 1
        if r < 2:
            raise UserError(f"{name} needs n = r*c with both sides >= 2, and n={n} has no such factorisation; "
                            "choose another n")
        return r, n // r
    if isinstance(shape, str):
        parts = shape.lower().replace("*", "x").split("x")
        try:
            r, c = (int(s) for s in parts)
        except ValueError:
            raise UserError(f"shape must look like RxC (e.g. 4x8), got {shape!r}") from None
    else:
        try:
            r, c = (int(s) for s in shape)
        except (TypeError, ValueError):
            raise UserError(f"shape must be two integers (r, c), got {shape!r}") from None
    if r < 2 or c < 2:
        raise UserError(f"{name} sides must both be >= 2, got {r}x{c}")
    if r * c != n:
        raise UserError(f"{name} shape {r}x{c} has {r * c} nodes but n={n}; make r*c equal n")
    return r, c


def build(name: str, n: int, *, shape=None, p: float | None = None, rule: str = "metropolis", rng=None,
          k: int | None = None, weights: str = "rule") -> Topology:
    r"""Build a topology from a constructor name and a node count (what ``simcomm topology`` calls).

    Parameters
    ----------
    name : str
        One of :data:`NAMES`.
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
        Randomness for ``erdos_renyi`` and ``random_matching`` (one draw).
    k : int, optional
        Maximum number of peers per step for ``base_graph``, ``simple_base_graph`` and
        ``hyper_hypercube`` (default 1); also written ``"base_graph:k=2"`` in ``name``.
    weights : {"rule", "fastest"}
        ``fastest`` replaces the weights of a static undirected graph by the fastest-mixing ones
        (:func:`simcomm.topology.fastest_mixing`, needs cvxpy).

    Raises
    ------
    UserError
        Unknown name (with the closest match), ``n < 2``, bad shape, ``p`` outside ``(0, 1]``, ...

    Examples
    --------
    >>> from simcomm.topology import build
    >>> build("torus", 12).shape
    (3, 4)
    """
    name, k = _split_k(name, k)
    name = ALIASES.get(name, name)
    if weights not in WEIGHTS:
        raise UserError(f"unknown weights '{weights}'; choose one of {', '.join(WEIGHTS)}")
    if weights == "fastest":
        return fastest_mixing(build(name, n, shape=shape, p=p, rule=rule, rng=rng, k=k))
    if name in NAMES[-4:]:
        if k is not None and name not in WITH_K:
            raise UserError(f"--k applies to {', '.join(WITH_K)}, not to {name}")
        if shape is not None or p is not None:
            raise UserError(f"--shape and --p do not apply to {name}")
        if name == "one_peer_hypercube":
            return _basegraph.one_peer_hypercube(n)
        return getattr(_basegraph, name)(n, 1 if k is None else k)
    if k is not None:
        raise UserError(f"--k applies to {', '.join(WITH_K)}, not to {name}")
    if name not in NAMES:
        match = difflib.get_close_matches(str(name), NAMES, n=1)
        hint = f" (did you mean '{match[0]}'?)" if match else ""
        raise UserError(f"unknown topology '{name}'{hint}; choose one of {', '.join(NAMES)}")
    n = _check_n(n)
    _check_rule(rule)
    if shape is not None and name not in ("grid", "torus"):
        raise UserError(f"--shape applies to grid and torus only, not to {name}")
    if p is not None and name != "erdos_renyi":
        raise UserError(f"--p applies to erdos_renyi only, not to {name}")
    if name == "ring":
        return ring(n)
    if name == "star":
        return star(n, rule=rule)
    if name in ("grid", "torus"):
        r, c = _parse_shape(shape, n, name)
        return grid(r, c, rule=rule) if name == "grid" else torus(r, c)
    if name == "hypercube":
        if n & (n - 1):
            raise UserError(f"hypercube needs n = 2^dim nodes (a power of 2), got n={n}; "
                            f"try n={1 << _ceil_log2(n)} or n={1 << (_ceil_log2(n) - 1)}")
        return hypercube(n.bit_length() - 1)
    if name == "complete":
        return complete(n)
    if name == "erdos_renyi":
        return erdos_renyi(n, 0.5 if p is None else p, rng=rng, rule=rule)
    if name == "exponential":
        return exponential(n)
    if name == "directed_ring":
        return directed_ring(n)
    if name == "directed_exponential":
        return directed_exponential(n)
    if name == "random_matching":
        return random_matching(n, rng=rng)
    return one_peer_exponential(n)
