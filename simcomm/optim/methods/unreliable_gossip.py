r"""Gossip over unreliable links: Bernoulli or Gilbert-Elliott edge failures and sleeping nodes, every step.

.. math:: x_i \leftarrow x_i + \sum_{j:\ (i,j)\ \text{kept at}\ t} W_{ij}(x_j - x_i)

A failed edge's weight stays with its endpoints (``compensate``), so every realised :math:`W_t` keeps
the average; ``compensate = false`` loses it (the control). The failures of every step are drawn from
the run's ``rng`` (:class:`simcomm.topology.LinkFailures`, whose fields are this method's settings).
Family ``"consensus"``: it runs on the nodes' start (a ``LinkState``), no problem, watched by
:func:`simcomm.optim._watch_nodes.link_watch`; :func:`simcomm.optim.run_unreliable_gossip` runs it.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._blocks_gossip import link_edges, link_init, unreliable_gossip
from simcomm.optim._registry import method
from simcomm.optim._watch_nodes import link_watch
from simcomm.optim.methods._nodes import each_node_at, family
from simcomm.topology import DROP_KINDS, LinkFailures


def _probability(default, doc, **bounds):
    return Param("float", default=default, low=0.0, high=1.0, doc=doc, **bounds)


@method("unreliable_gossip", family="consensus", params={
    "topology": Param("str", default="ring", doc="static symmetric doubly stochastic topology (or its EdgeList)"),
    "q": _probability(0.0, "Bernoulli drop rate per edge and step", high_open=True),
    "kind": Param("str", default="bernoulli", choices=DROP_KINDS, doc="link failure model"),
    "p_gb": _probability(0.0, "Gilbert-Elliott good -> bad probability per step"),
    "p_bg": _probability(1.0, "Gilbert-Elliott bad -> good probability per step", low_open=True),
    "q_good": _probability(0.0, "Gilbert-Elliott drop rate in the good state", high_open=True),
    "q_bad": _probability(1.0, "Gilbert-Elliott drop rate in the bad state"),
    "activation": _probability(1.0, "probability that a node is awake at a step", low_open=True),
    "compensate": Param("bool", default=True, doc="a failed edge's weight stays with its endpoints"),
})
def build(*, topology="ring", q=0.0, kind="bernoulli", p_gb=0.0, p_bg=1.0, q_good=0.0, q_bad=1.0, activation=1.0,
          compensate=True):
    """Gossip over the edges that work at each step (random link failures, sleeping nodes)."""
    failures = LinkFailures(q=q, kind=kind, p_gb=p_gb, p_bg=p_bg, q_good=q_good, q_bad=q_bad, activation=activation)

    def watch(problem, x, steps, every):
        return link_watch(x.x, link_edges(topology, x.x.shape[0]).n_edges, steps, every)

    return family(unreliable_gossip(failures, topology, compensate=compensate, name="unreliable_gossip"), watch,
                  each_node_at(link_init))
