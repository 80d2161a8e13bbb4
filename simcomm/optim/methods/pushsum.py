r"""Push-sum average consensus (Kempe, Dobra & Gehrke 2003) over a column-stochastic ``W``.

.. math:: x \leftarrow W x, \qquad w \leftarrow W w, \qquad z_i = x_i / w_i

from each node's own numerators and :math:`w = 1`: the sum of the numerators is kept (columns sum to
1), the weights carry the bias of the mixing, and the ratios :math:`z_i` tend to the average. The
topology may be drawn afresh every step (a callable ``rng -> Topology``, from the run's stream). The
iterate is a :class:`~simcomm.optim.PushSumState` (start: :func:`~simcomm.optim.pushsum_init` of the nodes'
own values), watched by :func:`~simcomm.optim._watch_nodes.pushsum_watch`; :func:`~simcomm.optim.run_pushsum`
runs it.
"""

from __future__ import annotations

from simcomm.optim._algebra import assign
from simcomm.optim._blocks_tracking import push_sum
from simcomm.optim._registry import method
from simcomm.optim._tracking import pushsum_init
from simcomm.optim._watch_nodes import pushsum_watch
from simcomm.optim.methods._nodes import TOPOLOGY, each_node_at, family


@method("pushsum", family="consensus", params={"topology": TOPOLOGY})
def build(*, topology):
    """Push-sum consensus: numerators and weights mixed by the same column-stochastic W."""
    return family(assign(push_sum(topology), name="pushsum"),
                  lambda problem, x, steps, every: pushsum_watch(x, steps, every), each_node_at(pushsum_init))
