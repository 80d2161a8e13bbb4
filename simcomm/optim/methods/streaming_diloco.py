"""Streaming DiLoCo (Douillard et al. 2025 [R]): DiLoCo whose fragments synchronise in turn, overlapped.

The settings of :mod:`simcomm.optim.methods.diloco`, with streaming defaults: 4 fragments, the outer
update merged one inner step later, half local and half global.
"""

from __future__ import annotations

import dataclasses

from simcomm.optim._registry import method
from simcomm.optim.methods.diloco import PARAMS, make

STREAMING = {"fragments": 4, "overlap": 1, "alpha": 0.5}


@method("streaming_diloco", params={k: dataclasses.replace(p, default=STREAMING.get(k, p.default))
                                    for k, p in PARAMS.items()})
def build(*, lr, H=8, inner="sgd", inner_beta=0.9, outer="nesterov", outer_lr=0.7, outer_momentum=0.9,
          compressor="none", feedback="none", fragments=4, overlap=1, alpha=0.5):
    """Streaming DiLoCo: fragments synchronised in turn, the outer update overlapped with inner steps."""
    return make(**{k: v for k, v in locals().items()}, name="streaming_diloco")
