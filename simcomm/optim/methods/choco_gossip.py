r"""CHOCO-Gossip: average consensus with compressed gossip (Koloskova, Stich & Jaggi, ICML 2019, Algorithm 1).

Every node keeps its iterate :math:`x_i` and a public copy :math:`\hat x_i` its neighbours hold too, from
:math:`\hat x = 0`, and sends only the compressed difference:

.. math:: q_i = Q(x_i - \hat x_i), \qquad \hat x_j \leftarrow \hat x_j + q_j, \qquad
          x_i \leftarrow x_i + \gamma \sum_j W_{ij}(\hat x_j - \hat x_i).

``W`` symmetric and doubly stochastic; an unbiased :math:`Q` is sent as :math:`Q/(1+\beta)`
(:func:`simcomm.optim.choco_scale`). Family ``"consensus"``: it runs on the nodes' start ``X0``
(a :class:`~simcomm.optim.ChocoState`), no problem; :func:`simcomm.optim.run_choco_gossip` runs it.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._blocks_gossip import choco
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, as_compressor

#: the settings every CHOCO method takes
GAMMA = Param("float", low=0.0, low_open=True, doc="consensus step gamma")
TOPOLOGY = Param("str", default="ring", doc="symmetric doubly stochastic topology (a name, or a Topology from Python)")


@method("choco_gossip", family="consensus", params={"compressor": COMPRESSOR, "gamma": GAMMA, "topology": TOPOLOGY})
def build(*, compressor, gamma, topology="ring"):
    """CHOCO-Gossip: compressed differences to public copies, a consensus step gamma on the copies."""
    return choco(as_compressor(compressor), gamma, topology, name="choco_gossip")
