r"""Push-sum average consensus (Kempe, Dobra & Gehrke 2003) over a column-stochastic ``W``.

.. math:: x \leftarrow W x, \qquad w \leftarrow W w, \qquad z_i = x_i / w_i

from each node's own numerators and :math:`w = 1`: the sum of the numerators is kept (columns sum to
1), the weights carry the bias of the mixing, and the ratios :math:`z_i` tend to the average. The
topology may be drawn afresh every step (a callable ``rng -> Topology``, from the run's stream). The
iterate is a :class:`~simcomm.optim.PushSumState` (start: :func:`~simcomm.optim.pushsum_init`);
:func:`~simcomm.optim.run_pushsum` runs it with :func:`~simcomm.optim._watch_tracking.pushsum_watch`.
"""

from __future__ import annotations

from simcomm.optim._blocks_tracking import assign, push_sum
from simcomm.optim._registry import method
from simcomm.optim.methods._nodes import TOPOLOGY


@method("pushsum", family="nodes", params={"topology": TOPOLOGY})
def build(*, topology):
    """Push-sum consensus: numerators and weights mixed by the same column-stochastic W."""
    return assign(push_sum(topology), name="pushsum")
