r"""Asynchronous compressed gradient descent with bounded delays (notes ``urq_delay.md`` A2).

.. math:: x_{k+1} = x_k - \gamma\,\frac1n\sum_{i=1}^n Q_i\bigl(\nabla f_i(x_{k-\tau_i(k)})\bigr),
          \qquad 0 \le \tau_i(k) \le \min(\tau, k),

and, with a clock, one worker's update per server step on the workers' own clocks,
:math:`x_{k+1} = x_k - \frac{\gamma}{n} Q(\nabla f_{w_k}(x_{k-\tau_k}))` (:func:`simcomm.optim.async_compressed_gd`).
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain, descend
from simcomm.optim._blocks import DELAY_MODELS, aggregate, clocked, compress, delayed, local_gradients, scale_by_lr
from simcomm.optim._registry import method
from simcomm.optim.methods._components import COMPRESSOR, LR, as_compressor


@method("async_gd", params={
    "compressor": COMPRESSOR, "lr": LR,
    "tau": Param("int", default=0, low=0, doc="delay bound"),
    "delay": Param("str", default="constant", choices=DELAY_MODELS, doc="delay model"),
})
def build(*, compressor, lr, tau=0, delay="constant"):
    """Compressed gradient descent where worker i reads an iterate up to tau steps old."""
    C = as_compressor(compressor)
    blocks = chain(delayed(local_gradients(), tau, delay), compress(C), aggregate("mean"), scale_by_lr(lr))
    return descend(blocks, bits=lambda k, p: k * p.n * C.bits(p.d), name="async_gd")


def build_clocked(*, compressor, lr, clock, n: int):
    """One worker's compressed gradient per server update, on the workers' own clocks (step ``lr / n``)."""
    C = as_compressor(compressor)
    return descend(chain(clocked(clock), compress(C), scale_by_lr(lr / n)), bits=lambda k, p: k * C.bits(p.d),
                   name="async_gd_clocked")
