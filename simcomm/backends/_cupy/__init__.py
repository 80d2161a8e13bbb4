"""The ``cupy`` backend (optional ``gpu`` extra): the numpy kernels' names and signatures on a GPU.

Importing it without CuPy or without a CUDA device raises ImportError, which
:func:`simcomm.backends.get_backend` turns into a one-line ``BackendUnavailable``.

Kernels are fused CUDA kernels (:mod:`._src`, compiled on first use): one pass per operation, the
counter-based uniforms of the CPU backends computed in registers, a radix select for top-k. They take
device (CuPy) arrays and return device arrays, so a run whose state lives on the device never crosses
the bus; host (numpy) arrays are still accepted, copied in and the result copied back, which is correct
but pays two transfers per call. Quantizers, gossip and the DSGD step equal the numpy reference bit for
bit; reductions (row norms, the EF server sum) agree within rounding.
"""

import cupy as xp  # noqa: F401

try:
    _n_devices = xp.cuda.runtime.getDeviceCount()
except Exception as exc:  # pragma: no cover - CUDA driver missing
    raise ImportError(f"CuPy is installed but CUDA is not usable: {exc}") from None
if _n_devices < 1:  # pragma: no cover - needs a GPU
    raise ImportError("CuPy is installed but no CUDA device is visible")

from simcomm.backends._cupy.dsgd import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.ef import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.elem import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.gossip import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.noise import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.quant import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.select import *  # noqa: F401,F403,E402
from simcomm.backends._kernels import KERNELS  # noqa: E402

__all__ = [*KERNELS, "NAME", "xp", "NONFINITE_SAFE_SELECTION"]  # the kernel table, simcomm.backends._kernels

NAME = "cupy"
#: callers check finiteness before the EF selection kernels (see simcomm.backends)
NONFINITE_SAFE_SELECTION = False
