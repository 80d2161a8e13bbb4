"""What the decentralized methods share: the topology, step size and noise settings; their starts and watches.

A decentralized method carries the watch and the start :func:`simcomm.optim.run` uses when the caller
gives none (:class:`~simcomm.optim.Method`'s ``watch`` and ``start``): family ``"nodes"`` starts every
node at the problem's ``x0`` (or the ``x0`` given, shape ``(d,)``), family ``"consensus"`` at the nodes'
own starts ``x0`` (shape ``(n, d)``, required).
"""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm.optim.methods._components import LR

__all__ = ["TOPOLOGY", "LR", "SIGMA", "SEED", "TRACKER_START", "every_node_at", "each_node_at", "family"]

#: a topology's name (built for the problem's n), or a Topology object from Python
TOPOLOGY = Param("str", doc="topology name, e.g. 'ring' or 'exponential' (or a Topology from Python)")
SIGMA = Param("float", default=0.0, low=0.0, doc="gradient noise per coordinate (per-node streams from seed)")
SEED = Param("int", default=0, doc="seed of the per-node noise streams")
TRACKER_START = Param("str", default="gradient", choices=("gradient", "zero"),
                      doc="'gradient': y^{-1} = 0, g^{-1} = 0; 'zero': a tracker that starts at 0 (the control)")


def every_node_at(init):
    """``start(problem, x0)`` of family ``"nodes"``: ``init(x0, n)``, every node at ``x0`` (default ``problem.x0``)."""

    def start(problem, x0):
        return init(problem.x0 if x0 is None else x0, problem.n)

    return start


def each_node_at(init):
    """``start(problem, x0)`` of family ``"consensus"``: ``init(x0)`` from the nodes' own starts ``x0``, ``(n, d)``."""

    def start(problem, x0):
        if x0 is None:
            raise UserError("a consensus method starts from the nodes' own values: pass x0 = X0, an (n, d) array")
        return init(x0)

    return start


def family(method, watch, start):
    """``method`` with the watch ``watch(problem, x, steps, record_every)`` and ``start`` that :func:`run` uses."""
    return method._replace(watch=watch, start=start)
