"""Settings the decentralized methods share: the topology, the step size, the per-node gradient noise."""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim.methods._components import LR

__all__ = ["TOPOLOGY", "LR", "SIGMA", "SEED", "TRACKER_START"]

#: a topology's name (built for the problem's n), or a Topology object from Python
TOPOLOGY = Param("str", doc="topology name, e.g. 'ring' or 'exponential' (or a Topology from Python)")
SIGMA = Param("float", default=0.0, low=0.0, doc="gradient noise per coordinate (per-node streams from seed)")
SEED = Param("int", default=0, doc="seed of the per-node noise streams")
TRACKER_START = Param("str", default="gradient", choices=("gradient", "zero"),
                      doc="'gradient': y^{-1} = 0, g^{-1} = 0; 'zero': a tracker that starts at 0 (the control)")
