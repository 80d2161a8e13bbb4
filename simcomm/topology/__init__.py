r"""Communication topologies: graph constructors, mixing weights, gossip and spectral quantities.

ONE weight convention: ``W[i, j]`` is the weight node ``i`` puts on node ``j``'s model, so a gossip
step is ``X <- W @ X`` (:func:`mix`). :math:`\rho = \|W - J\|_2` and the spectral gap is
:math:`1 - \rho` (papers/exponential_graph.md (a)).

Examples
--------
>>> from simcomm.topology import exponential, describe
>>> describe(exponential(8))["rho"]
0.5

Every constructor reachable by name is registered with ``@topology(name, params=..., ...)`` and its
declared properties (:mod:`simcomm.topology._registry`); :data:`TOPOLOGIES` holds them, and
``NAMES`` (every name), ``ALIASES`` and ``WITH_K`` (the names taking ``k``) are read from it.
"""

from simcomm.topology._basegraph import base_graph, hyper_hypercube, one_peer_hypercube, simple_base_graph
from simcomm.topology._build import build, split_name
from simcomm.topology._directed import WEIGHTINGS, directed_exponential, directed_ring, random_matching, s_out
from simcomm.topology._drops import DROP_KINDS, EdgeList, LinkFailures, edge_list, unreliable_mix
from simcomm.topology._equitopo import OFFSET_LAWS, d_equistatic, equistatic_offsets, one_peer_equidyn, u_equistatic
from simcomm.topology._fmmc import FMMCInfo, fastest_mixing
from simcomm.topology._graphs import (
    RULES,
    STOCHASTICITIES,
    Topology,
    circulant,
    complete,
    erdos_renyi,
    exponential,
    from_matrix,
    from_networkx,
    grid,
    hypercube,
    one_peer_exponential,
    ring,
    star,
    time_varying,
    torus,
)
from simcomm.topology._mixing import (
    DENSE_MAX,
    FFT_OFFSETS,
    is_doubly_stochastic,
    max_degree,
    mix,
    mixing_matrix,
    sparse_matrix,
    to_networkx,
)
from simcomm.topology._registry import TOPOLOGIES, TopologyInfo, get_topology, topology, topology_names
from simcomm.topology._spectral import (
    circulant_eigenvalues,
    describe,
    deviation_after,
    product_deviation,
    rate_per_step,
    rho,
    spectral_gap,
)

__all__ = [
    "circulant",
    "ALIASES",
    "NAMES",
    "WITH_K",
    "TOPOLOGIES",
    "TopologyInfo",
    "get_topology",
    "topology",
    "topology_names",
    "RULES",
    "STOCHASTICITIES",
    "WEIGHTINGS",
    "DENSE_MAX",
    "FFT_OFFSETS",
    "split_name",
    "DROP_KINDS",
    "OFFSET_LAWS",
    "d_equistatic",
    "equistatic_offsets",
    "one_peer_equidyn",
    "u_equistatic",
    "EdgeList",
    "LinkFailures",
    "edge_list",
    "unreliable_mix",
    "FMMCInfo",
    "Topology",
    "base_graph",
    "build",
    "circulant_eigenvalues",
    "complete",
    "describe",
    "directed_exponential",
    "directed_ring",
    "deviation_after",
    "erdos_renyi",
    "exponential",
    "fastest_mixing",
    "from_matrix",
    "from_networkx",
    "grid",
    "hyper_hypercube",
    "hypercube",
    "is_doubly_stochastic",
    "max_degree",
    "mix",
    "mixing_matrix",
    "one_peer_exponential",
    "one_peer_hypercube",
    "product_deviation",
    "random_matching",
    "rate_per_step",
    "rho",
    "ring",
    "s_out",
    "simple_base_graph",
    "sparse_matrix",
    "spectral_gap",
    "star",
    "time_varying",
    "to_networkx",
    "torus",
]


def __getattr__(attr):
    # derived from the registry at each access, so a constructor registered later is listed too
    if attr in ("NAMES", "ALIASES", "WITH_K"):
        from simcomm.topology import _build

        return getattr(_build, attr)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
