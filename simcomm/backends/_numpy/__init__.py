"""The ``numpy`` backend: kernels grouped by domain, all re-exported here under one namespace."""

import numpy as xp  # noqa: F401  (the array namespace of this backend)

from simcomm.backends._kernels import KERNELS  # noqa: E402
from simcomm.backends._numpy.dsgd import *  # noqa: F401,F403
from simcomm.backends._numpy.ef import *  # noqa: F401,F403
from simcomm.backends._numpy.elem import *  # noqa: F401,F403
from simcomm.backends._numpy.gossip import *  # noqa: F401,F403
from simcomm.backends._numpy.noise import *  # noqa: F401,F403
from simcomm.backends._numpy.quant import *  # noqa: F401,F403
from simcomm.backends._numpy.select import *  # noqa: F401,F403

__all__ = [*KERNELS, "NAME", "xp", "NONFINITE_SAFE_SELECTION"]  # the kernel table, simcomm.backends._kernels

NAME = "numpy"
#: callers check finiteness before the EF selection kernels (see simcomm.backends)
NONFINITE_SAFE_SELECTION = False
