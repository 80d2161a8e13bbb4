r"""Gradient tracking in adapt-then-combine form (DIGing: Nedic, Olshevsky & Shi 2017; Xu et al. 2015).

Every node keeps a tracker :math:`y_i` of the average gradient and mixes it with its neighbours':

.. math:: y \leftarrow W\bigl(y + g(x^k) - g(x^{k-1})\bigr), \qquad x \leftarrow W(x - \gamma y),

from :math:`y^{-1} = 0`, :math:`g^{-1} = 0` (``tracker_start="gradient"``: for a doubly stochastic
``W``, :math:`\bar y^k = \bar g^k`, so a fixed point is the optimum whatever the heterogeneity) or
:math:`g^{-1} = g^0` (``"zero"``, the negative control). The iterate is a
:class:`~simcomm.optim.GTState` (start: :func:`~simcomm.optim.gt_init`), watched by
:func:`~simcomm.optim._watch_nodes.tracking_watch`; :func:`~simcomm.optim.run_tracking` runs it.
"""

from __future__ import annotations

from simcomm.optim._algebra import assign, chain
from simcomm.optim._blocks_dsgd import gradient_at_nodes
from simcomm.optim._blocks_tracking import tracking
from simcomm.optim._registry import method
from simcomm.optim._tracking import gt_init
from simcomm.optim._watch_nodes import tracking_watch
from simcomm.optim.methods._nodes import LR, SEED, SIGMA, TOPOLOGY, TRACKER_START, every_node_at, family


@method("gradient_tracking", family="nodes", params={
    "topology": TOPOLOGY, "lr": LR, "tracker_start": TRACKER_START, "sigma": SIGMA, "seed": SEED,
})
def build(*, topology, lr, tracker_start="gradient", sigma=0.0, seed=0):
    """Gradient tracking (ATC): every node tracks the average gradient over a doubly stochastic W."""
    oracle = gradient_at_nodes(sigma, seed, "stream", at="x")
    step = chain(oracle, tracking(topology, lr=lr, tracker_start=tracker_start))
    return family(assign(step, name="gradient_tracking"),
                  lambda problem, x, steps, every: tracking_watch(problem, steps, every), every_node_at(gt_init))
