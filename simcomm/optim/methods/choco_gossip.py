r"""CHOCO-Gossip: average consensus with compressed gossip (Koloskova, Stich & Jaggi, ICML 2019, Algorithm 1).

Every node keeps its iterate :math:`x_i` and a public copy :math:`\hat x_i` its neighbours hold too, from
:math:`\hat x = 0`, and sends only the compressed difference:

.. math:: q_i = Q(x_i - \hat x_i), \qquad \hat x_j \leftarrow \hat x_j + q_j, \qquad
          x_i \leftarrow x_i + \gamma \sum_j W_{ij}(\hat x_j - \hat x_i).

``W`` symmetric and doubly stochastic; an unbiased :math:`Q` is sent as :math:`Q/(1+\beta)`
(:func:`simcomm.optim.choco_scale`). Family ``"consensus"``: it runs on the nodes' start ``X0``
(a :class:`~simcomm.optim.ChocoState`), no problem, watched by
:func:`simcomm.optim._watch_nodes.consensus_watch`; :func:`simcomm.optim.run_choco_gossip` runs it.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._blocks_gossip import choco
from simcomm.optim._choco import choco_init
from simcomm.optim._registry import method
from simcomm.optim._watch_nodes import consensus_watch
from simcomm.optim.methods._components import COMPRESSOR, as_compressor
from simcomm.optim.methods._nodes import each_node_at, family

#: the settings every CHOCO method takes
GAMMA = Param("float", low=0.0, low_open=True, doc="consensus step gamma")
TOPOLOGY = Param("str", default="ring", doc="symmetric doubly stochastic topology (a name, or a Topology from Python)")


@method("choco_gossip", family="consensus", params={"compressor": COMPRESSOR, "gamma": GAMMA, "topology": TOPOLOGY})
def build(*, compressor, gamma, topology="ring"):
    """CHOCO-Gossip: compressed differences to public copies, a consensus step gamma on the copies."""
    return family(choco(as_compressor(compressor), gamma, topology, name="choco_gossip"),
                  lambda problem, x, steps, every: consensus_watch(x.x, steps, every), each_node_at(choco_init))
