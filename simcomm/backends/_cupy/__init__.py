"""The ``cupy`` backend (optional ``gpu`` extra): the numpy kernels' names and signatures on a GPU.

Importing it without CuPy or without a CUDA device raises ImportError, which
:func:`simcomm.backends.get_backend` turns into a one-line ``BackendUnavailable``.

Kernels take host (numpy) or device (CuPy) arrays and return arrays of the kind they were given, so
the library's public functions run unchanged on this backend. Randomness stays on the host: the
uniforms or counter keys come from the caller's ``numpy.random.Generator`` exactly as for numpy,
which gives bit-for-bit parity of selections (reductions agree within rounding).
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
from simcomm.backends._cupy.gossip import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.quant import *  # noqa: F401,F403,E402
from simcomm.backends._cupy.select import *  # noqa: F401,F403,E402

NAME = "cupy"
#: callers check finiteness before the EF selection kernels (see simcomm.backends)
NONFINITE_SAFE_SELECTION = False
