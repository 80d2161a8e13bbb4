r"""Push-sum SGD, SGP (Assran, Loizou, Ballas & Rabbat 2019), over a column-stochastic ``W``.

.. math:: x \leftarrow W\bigl(x - \gamma\,g(z)\bigr), \qquad w \leftarrow W w, \qquad z_i = x_i / w_i

from :math:`w = 1`, the gradients (plus the per-node noise of :func:`~simcomm.optim.run_dsgd`) taken at
the de-biased models :math:`z`; ``debias=False`` takes them at the numerators (SGD over plain
column-stochastic gossip: the control). The iterate is a :class:`~simcomm.optim.PushSumState` (every node
at ``x0``, weights 1), watched by :func:`~simcomm.optim._watch_nodes.pushsum_sgd_watch`;
:func:`~simcomm.optim.run_pushsum_sgd` runs it.
"""

from __future__ import annotations

import numpy as np

from simcomm._params import Param
from simcomm.optim._algebra import assign, chain
from simcomm.optim._blocks_dsgd import gradient_at_nodes
from simcomm.optim._blocks_tracking import push_sum
from simcomm.optim._registry import method
from simcomm.optim._tracking import pushsum_init
from simcomm.optim._watch_nodes import pushsum_sgd_watch
from simcomm.optim.methods._nodes import LR, SEED, SIGMA, TOPOLOGY, every_node_at, family


@method("pushsum_sgd", family="nodes", params={
    "topology": TOPOLOGY, "lr": LR, "sigma": SIGMA, "seed": SEED,
    "debias": Param("bool", default=True, doc="gradients at the ratios z = x / w (False: at the numerators)"),
})
def build(*, topology, lr, sigma=0.0, seed=0, debias=True):
    """Push-sum SGD (SGP): numerators W (x - lr g(z)), weights W w, over a column-stochastic W."""
    oracle = gradient_at_nodes(sigma, seed, "stream", at="z" if debias else "x")
    return family(assign(chain(oracle, push_sum(topology, lr=lr)), name="pushsum_sgd"),
                  lambda problem, x, steps, every: pushsum_sgd_watch(problem, steps, every, debias),
                  every_node_at(lambda x0, n: pushsum_init(np.tile(np.asarray(x0, dtype=np.float64), (n, 1)))))
