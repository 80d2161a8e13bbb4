r"""Push-sum SGD, SGP (Assran, Loizou, Ballas & Rabbat 2019), over a column-stochastic ``W``.

.. math:: x \leftarrow W\bigl(x - \gamma\,g(z)\bigr), \qquad w \leftarrow W w, \qquad z_i = x_i / w_i

from :math:`w = 1`, the gradients (plus the per-node noise of :func:`~simcomm.optim.run_dsgd`) taken at
the de-biased models :math:`z`; ``debias=False`` takes them at the numerators (SGD over plain
column-stochastic gossip: the control). The iterate is a :class:`~simcomm.optim.PushSumState`;
:func:`~simcomm.optim.run_pushsum_sgd` runs it with :func:`~simcomm.optim._watch_tracking.pushsum_sgd_watch`.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain
from simcomm.optim._blocks_tracking import assign, per_node_gradients, push_sum
from simcomm.optim._registry import method
from simcomm.optim.methods._nodes import LR, SEED, SIGMA, TOPOLOGY


@method("pushsum_sgd", family="nodes", params={
    "topology": TOPOLOGY, "lr": LR, "sigma": SIGMA, "seed": SEED,
    "debias": Param("bool", default=True, doc="gradients at the ratios z = x / w (False: at the numerators)"),
})
def build(*, topology, lr, sigma=0.0, seed=0, debias=True):
    """Push-sum SGD (SGP): numerators W (x - lr g(z)), weights W w, over a column-stochastic W."""
    return assign(chain(per_node_gradients(sigma, seed, at="z" if debias else "x"), push_sum(topology, lr=lr)),
                  name="pushsum_sgd")
