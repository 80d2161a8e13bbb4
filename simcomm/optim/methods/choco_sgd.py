r"""CHOCO-SGD: decentralized SGD with compressed gossip (Koloskova, Stich & Jaggi, ICML 2019, Algorithm 2).

Every node takes a local stochastic gradient step, then a CHOCO-Gossip step (:mod:`.choco_gossip`):

.. math:: x_i^{+} = x_i - \eta\,(\nabla f_i(x_i) + \sigma\xi_i), \qquad q_i = Q(x_i^{+} - \hat x_i), \qquad
          \hat x_j \leftarrow \hat x_j + q_j, \qquad x_i \leftarrow x_i^{+} + \gamma\sum_j W_{ij}(\hat x_j - \hat x_i),

the noise :math:`\xi_i` from node ``i``'s own stream of ``seed``, the compressor's draws from the run's
``rng``. Family ``"nodes"`` (a :class:`~simcomm.models.NodeProblem`; every node at ``x0``, the public
copies at 0; watched by :func:`simcomm.optim._watch_nodes.choco_sgd_watch`); :func:`simcomm.optim.run_choco_sgd`
runs it.
"""

from __future__ import annotations

import numpy as np

from simcomm._params import Param
from simcomm.optim._blocks_dsgd import gradient_at_nodes
from simcomm.optim._blocks_gossip import choco
from simcomm.optim._choco import choco_init
from simcomm.optim._registry import method
from simcomm.optim._watch_nodes import choco_sgd_watch
from simcomm.optim.methods._components import COMPRESSOR, LR, as_compressor
from simcomm.optim.methods._nodes import every_node_at, family
from simcomm.optim.methods.choco_gossip import GAMMA, TOPOLOGY


@method("choco_sgd", family="nodes", params={
    "compressor": COMPRESSOR, "lr": LR, "gamma": GAMMA, "topology": TOPOLOGY,
    "sigma": Param("float", default=0.0, low=0.0, doc="gradient noise sigma (per-node Gaussian)"),
    "seed": Param("int", default=0, low=0, doc="seed of the nodes' noise streams"),
})
def build(*, compressor, lr, gamma, topology="ring", sigma=0.0, seed=0):
    """CHOCO-SGD: a local gradient step, then CHOCO's compressed gossip."""
    oracle = gradient_at_nodes(sigma, seed, "stream", at="x")
    return family(choco(as_compressor(compressor), gamma, topology, lr=lr, oracle=oracle, name="choco_sgd"),
                  lambda problem, x, steps, every: choco_sgd_watch(problem, steps, every),
                  every_node_at(lambda x0, n: choco_init(np.tile(np.asarray(x0, dtype=np.float64), (n, 1)))))
