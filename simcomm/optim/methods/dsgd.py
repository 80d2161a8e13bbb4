r"""Decentralized (momentum) SGD in adapt-then-combine form (papers/exponential_graph.md (d) [C]).

Node :math:`i` keeps its model :math:`x_i` and a LOCAL momentum buffer :math:`m_i` (not averaged):

.. math:: g_i = \nabla f_i(x_i) + \sigma\xi_{i,k}, \qquad m_i \leftarrow \beta m_i + g_i, \qquad
          x_i \leftarrow \sum_j W^{(k)}_{ij}\,(x_j - \gamma_k m_j),

over a static or time-varying doubly stochastic topology (``"parallel"``: :math:`W = J`, parallel
SGD). DSGD is :math:`\beta = 0`. The noise :math:`\xi_{i,k}` comes from node ``i``'s own stream keyed by
``seed`` (not the run's ``rng``), so :mod:`simcomm.mpi`'s ranks reproduce a run. It runs on a
:class:`~simcomm.models.NodeProblem` from every node at ``x0`` with the nodes' watch
(:func:`simcomm.optim._decentralized.dsgd_watch`), what :func:`simcomm.optim.run` picks by itself;
:func:`simcomm.optim.run_dsgd` is the user's entry point.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._blocks_dsgd import NOISES, dmsgd, gradient_at_nodes
from simcomm.optim._decentralized import dsgd_init, dsgd_watch
from simcomm.optim._registry import method
from simcomm.optim._schedules import SCHEDULES
from simcomm.optim.methods._components import LR
from simcomm.optim.methods._nodes import every_node_at, family


@method("dsgd", family="nodes", params={
    "topology": Param("str", doc="topology name (simcomm.topology.build), 'parallel' (W = J), or a Topology"),
    "lr": LR,
    "beta": Param("float", default=0.0, low=0.0, high=1.0, high_open=True, doc="local momentum (0: DSGD)"),
    "sigma": Param("float", default=0.0, low=0.0, doc="gradient noise per coordinate"),
    "seed": Param("int", default=0, low=0, doc="root of the nodes' noise streams"),
    "noise": Param("str", default="auto", choices=NOISES,
                   doc="'stream' (per-node generators), 'counter' (counter normals), 'auto' (by backend)"),
    "schedule": Param("str", default="constant", choices=SCHEDULES, doc="step-size schedule"),
    "k0": Param("float", default=10.0, doc="decay scale of the inv_sqrt schedule"),
})
def build(*, topology, lr, beta=0.0, sigma=0.0, seed=0, noise="auto", schedule="constant", k0=10.0):
    """Decentralized momentum SGD (ATC, local momentum) with per-node gradient noise."""
    return family(dmsgd(gradient_at_nodes(sigma, seed, noise), topology, lr, beta, schedule, k0, name="dsgd"),
                  lambda problem, x, steps, every: dsgd_watch(problem, topology, steps, every),
                  every_node_at(lambda x0, n: dsgd_init(x0, n).x))
