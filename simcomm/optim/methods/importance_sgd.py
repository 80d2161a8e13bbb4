r"""Importance-sampled SGD (ISSGD) of a model on data (papers/importance_sampling.md (d)).

At step :math:`t` the master forms a proposal :math:`q \propto \omega + c` over the ``N`` examples
(fresh gradient norms, smoothed ones, or the stale scores of ``workers`` workers; uniform: plain SGD),
draws :math:`I_1..I_M \sim q` with replacement (:math:`M` the problem's ``batch_size``) and steps on the
unbiased estimate :math:`\hat g = \frac1M\sum_m g_{I_m}/(N q_{I_m})`: :math:`\theta_{t+1} = \theta_t - \eta \hat g`.
The proposal for step :math:`t` is formed as soon as :math:`\theta_t` is (:func:`simcomm.optim._blocks_nn.lookahead`),
so a record at :math:`t` reads it.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain
from simcomm.optim._blocks import scale_by_lr
from simcomm.optim._blocks_nn import PROPOSALS, lookahead, proposal, sampled_gradient
from simcomm.optim._registry import method
from simcomm.optim.methods._components import LR
from simcomm.sampling import Staleness


@method("importance_sgd", family="model", params={
    "lr": LR,
    "proposal": Param("str", default="stale", choices=PROPOSALS, doc="how the examples are drawn"),
    "smoothing": Param("float", default=0.0, low=0.0, doc="added to every score ('smoothed', 'stale')"),
    "workers": Param("int", default=1, low=1, doc="workers computing scores ('stale')"),
    "staleness": Param("str", default="period", choices=("period", "delay"), doc="the workers' refresh schedule"),
    "period": Param("int", default=1, low=1, doc="refresh period (staleness 'period')"),
    "mean_delay": Param("float", default=1.0, low=1.0, doc="mean job duration (staleness 'delay')"),
    "unweighted": Param("bool", default=False, doc="drop the importance weights (a biased negative control)"),
    "score_offset": Param("int", default=0, low=0,
                          doc="negative control only: stale scores used for the example that many ids further on"),
})
def build(*, lr, proposal="stale", smoothing=0.0, workers=1, staleness="period", period=1, mean_delay=1.0,
          unweighted=False, score_offset=0):
    """Importance-sampled SGD: a proposal over the examples, a weighted minibatch gradient, a step."""
    sched = staleness if isinstance(staleness, Staleness) else Staleness(staleness, int(period), float(mean_delay))
    step = chain(sampled_gradient(unweighted), scale_by_lr(lr))
    return lookahead(_proposal(proposal, smoothing, sched, workers, int(score_offset)), step,
                     name="importance_sgd")


_proposal = proposal
