"""The ``numba`` backend: kernels grouped by domain, all re-exported here under one namespace."""

import numba  # noqa: F401  (ImportError here makes the backend unavailable)
import numpy as xp  # noqa: F401  (the array namespace of this backend)

from simcomm.backends._kernels import KERNELS  # noqa: E402
from simcomm.backends._numba.dsgd import *  # noqa: F401,F403
from simcomm.backends._numba.ef import *  # noqa: F401,F403
from simcomm.backends._numba.elem import *  # noqa: F401,F403
from simcomm.backends._numba.gossip import *  # noqa: F401,F403
from simcomm.backends._numba.noise import *  # noqa: F401,F403
from simcomm.backends._numba.quant import *  # noqa: F401,F403
from simcomm.backends._numba.select import *  # noqa: F401,F403

__all__ = [*KERNELS, "NAME", "xp", "NONFINITE_SAFE_SELECTION"]  # the kernel table, simcomm.backends._kernels

NAME = "numba"
#: the EF selection kernels take NaN rows without failing, so callers may check finiteness after them
NONFINITE_SAFE_SELECTION = True
