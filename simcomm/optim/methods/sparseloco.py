r"""SparseLoCo (Sarfi et al. 2025 [R]): DiLoCo's rounds with sparse low-bit pseudo-gradients and decayed error feedback.

Every worker takes ``H`` inner steps (SGD, heavy ball or Adam, as in :mod:`.diloco`), forms its
pseudo-gradient :math:`\Delta_i = x - x_i`, adds its decayed memory :math:`p_i = \beta e_i + \Delta_i`, sends
:math:`C(p_i)` (default: the top ``k`` entries with 2-bit values, :class:`~simcomm.compress.TopKQuant`) and
keeps :math:`e_i = p_i - C(p_i)`; the server steps :math:`x \leftarrow x - \eta\,\frac1n\sum_i C(p_i)` with no
outer momentum (the memory takes its place). One composition of :func:`simcomm.optim.local_updates`.

>>> from simcomm.models import quadratic
>>> from simcomm.optim import build_method, run
>>> tr = run(quadratic(4, 50, mu=0.1, rng=0), build_method("sparseloco", lr=0.2, H=4, k=10), 400, rng=0)
>>> bool(tr.f_gap[0, -1] < 1e-2 * tr.f_gap[0, 0]), bool(tr.bits[-1] == 100 * 4 * (32 + 10 * (6 + 2)))
(True, True)
"""

from __future__ import annotations

from simcomm._params import Param
from simcomm.optim._algebra import chain
from simcomm.optim._blocks import adam, aggregate, local_gradients, momentum, scale_by_lr
from simcomm.optim._blocks_decay import decayed_feedback
from simcomm.optim._local import local_updates
from simcomm.optim._registry import method
from simcomm.optim.methods._components import as_compressor
from simcomm.optim.methods.diloco import INNER

PARAMS = {
    "H": Param("int", default=8, low=1, doc="inner steps per round"),
    "inner": Param("str", default="sgd", choices=INNER, doc="the workers' optimiser"),
    "lr": Param("float", low=0.0, low_open=True, doc="inner step size"),
    "inner_beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="inner momentum (momentum)"),
    "outer_lr": Param("float", default=1.0, low=0.0, low_open=True, doc="outer step size"),
    "k": Param("int", default=2, low=0, doc="pseudo-gradient entries sent per worker (0: all)"),
    "value_bits": Param("int", default=2, low=1, high=16, doc="bits of each sent value"),
    "ef_beta": Param("float", default=0.95, low=0.0, high=1.0, doc="decay of the error-feedback memory (0: none)"),
    "compressor": Param("str", default="", doc="a compressor label replacing top_k_quant(k, value_bits)"),
}


@method("sparseloco", params=PARAMS)
def build(*, lr, H=8, inner="sgd", inner_beta=0.9, outer_lr=1.0, k=2, value_bits=2, ef_beta=0.95, compressor=""):
    """SparseLoCo: H inner steps, top-k low-bit pseudo-gradients with decayed error feedback, outer SGD."""
    C = as_compressor(compressor or f"top_k_quant(k={k},bits_per_value={value_bits})")
    inner_dir = {"momentum": [momentum(inner_beta)], "adam": [adam()]}.get(inner, [])
    return local_updates(H, chain(local_gradients(), *inner_dir, scale_by_lr(lr)),
                         chain(decayed_feedback(C, ef_beta), aggregate("mean"), scale_by_lr(outer_lr)),
                         bits_per_value=C.bits, name="sparseloco")
