r"""DeMo (Peng, Quesnelle and Kingma 2024 [R]): every worker's momentum, chunked-DCT top-k, the rest kept.

At every step worker :math:`i` accumulates :math:`p_i = \beta e_i + g_i` (its momentum), sends the chunked
DCT top-k of it, :math:`q_i = C(p_i)` (:class:`~simcomm.compress.DCTTopK`), and keeps :math:`e_i = p_i - q_i`
(the transmitted part subtracted: error feedback with decay :math:`\beta`); the server steps along the
mean :math:`\frac1n\sum_i q_i` (``sign = True``: along its sign, as DeMo's reference implementation does
[R]). A parameter-server composition: ``local_gradients``, ``decayed_feedback``, ``aggregate``,
``scale_by_lr``.

>>> from simcomm.models import quadratic
>>> from simcomm.optim import build_method, run
>>> tr = run(quadratic(4, 64, mu=0.1, rng=0), build_method("demo", lr=0.1, k=4, chunk=16), 300, rng=0)
>>> bool(tr.f_gap[0, -1] < 1e-3 * tr.f_gap[0, 0]), bool(tr.bits[-1] == 300 * 4 * 4 * 4 * (32 + 4))
(True, True)
"""

from __future__ import annotations

import numpy as np

from simcomm._params import Param
from simcomm.compress import DCTTopK
from simcomm.optim._algebra import chain, descend, stateless
from simcomm.optim._blocks import aggregate, local_gradients, scale_by_lr
from simcomm.optim._blocks_decay import decayed_feedback
from simcomm.optim._registry import method
from simcomm.optim.methods._components import LR, as_compressor


@method("demo", params={
    "lr": LR,
    "beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="momentum (decay of the memory)"),
    "k": Param("int", default=4, low=1, doc="DCT coefficients sent per chunk"),
    "chunk": Param("int", default=64, low=1, doc="coordinates per chunk"),
    "sign": Param("bool", default=False, doc="step along the sign of the averaged message"),
    "compressor": Param("str", default="", doc="a compressor label replacing dct_top_k(k, chunk)"),
})
def build(*, lr, beta=0.9, k=4, chunk=64, sign=False, compressor=""):
    """DeMo: decoupled momentum, its chunked-DCT top-k sent, the rest kept as error feedback."""
    C = as_compressor(compressor) if compressor else DCTTopK(k=k, chunk=chunk)
    sign_dir = [stateless(lambda u, x, ctx: np.sign(u))] if sign else []
    blocks = chain(local_gradients(), decayed_feedback(C, beta), aggregate("mean"), *sign_dir, scale_by_lr(lr))
    return descend(blocks, bits=lambda t, p: t * p.n * C.bits(p.d), name="demo")
