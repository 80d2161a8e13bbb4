r"""Compressed incremental aggregated gradient (IAG) (notes ``urq_delay.md`` A3).

The server keeps every worker's last compressed gradient :math:`u_i` (all taken at :math:`x_0` first);
one worker refreshes its entry per step, :math:`x_{k+1} = x_k - \gamma\frac1n\sum_i u_i`.
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import IAG_ORDERS, iag_memory, scale_by_lr
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, LR, as_compressor


@method("iag", params={
    "compressor": COMPRESSOR, "lr": LR,
    "order": Param("str", default="cyclic", choices=IAG_ORDERS, doc="which worker communicates at each step"),
})
def build(*, compressor, lr, order="cyclic"):
    """Compressed IAG: one worker refreshes its compressed gradient in the server's table per step."""
    C = as_compressor(compressor)
    # n messages at x_0, then one per step
    return descend(chain(iag_memory(C, order), scale_by_lr(lr)), bits=lambda k, p: (p.n + k) * C.bits(p.d), name="iag")
