r"""Exact diffusion (Yuan, Ying, Zhao & Sayed 2019, Part I; D² of Tang et al. 2018 with :math:`\bar W = (I + W)/2`).

.. math:: \psi^{k+1} = x^k - \gamma g(x^k), \quad \phi^{k+1} = \psi^{k+1} + x^k - \psi^k, \quad
          x^{k+1} = \bar W \phi^{k+1}

from :math:`\psi^0 = x^0`, over a symmetric doubly stochastic ``W``. ``correction=False`` drops
:math:`x^k - \psi^k` (DSGD with :math:`\bar W`: the negative control). The iterate is an
:class:`~simcomm.optim.EDState` (start: :func:`~simcomm.optim.ed_init`), watched by
:func:`~simcomm.optim._watch_nodes.tracking_watch`; :func:`~simcomm.optim.run_tracking` runs it.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import assign, chain
from simcomm.optim._blocks_dsgd import gradient_at_nodes
from simcomm.optim._blocks_tracking import exact_diffusion
from simcomm.optim._registry import method
from simcomm.optim._tracking import ed_init
from simcomm.optim._watch_nodes import tracking_watch
from simcomm.optim.methods._nodes import LR, SEED, SIGMA, TOPOLOGY, every_node_at, family


@method("exact_diffusion", family="nodes", params={
    "topology": TOPOLOGY, "lr": LR,
    "correction": Param("bool", default=True, doc="keep the correction x^k - psi^k (False: the control)"),
    "sigma": SIGMA, "seed": SEED,
})
def build(*, topology, lr, correction=True, sigma=0.0, seed=0):
    """Exact diffusion: adapt, correct, combine with (I + W)/2 over a symmetric doubly stochastic W."""
    oracle = gradient_at_nodes(sigma, seed, "stream", at="x")
    step = chain(oracle, exact_diffusion(topology, lr=lr, correction=correction))
    return family(assign(step, name="exact_diffusion"),
                  lambda problem, x, steps, every: tracking_watch(problem, steps, every), every_node_at(ed_init))
