"""Array namespaces: which module (numpy or cupy) holds an array, and moving arrays to a backend.

Code above the backends writes ``xp = array_namespace(x)`` and calls ``xp.zeros``, ``xp.sqrt``, ...
so one code path serves host arrays (numpy) and device arrays (cupy). Nothing here imports cupy unless
a cupy array or the cupy backend is already in play, so the numpy and numba paths never touch it.

Examples
--------
>>> import numpy as np
>>> array_namespace(np.zeros(2)) is np
True
>>> to_host(np.ones(2)).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np

__all__ = ["array_namespace", "is_device", "to_host", "to_backend", "namespace_of_backend", "backend_for"]


def is_device(x) -> bool:
    """Whether ``x`` is a CuPy array (checked without importing cupy)."""
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def array_namespace(*arrays) -> ModuleType:
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        if is_device(a):
            return sys.modules["cupy"]
    return np


def namespace_of_backend(backend) -> ModuleType:
    """The array namespace a backend computes in (``backend.xp``; numpy for numpy and numba)."""
    return getattr(backend, "xp", np)


def to_host(x):
    """``x`` as a numpy array (a device array is copied to the host; anything else goes through ``np.asarray``)."""
    if is_device(x):
        return x.get()
    return np.asarray(x)


def to_backend(x, backend, dtype=None):
    """``x`` in the backend's namespace (a host-to-device copy for cupy; ``np.asarray`` otherwise)."""
    xp = namespace_of_backend(backend)
    if xp is np:
        return np.asarray(to_host(x), dtype=dtype)
    return xp.asarray(x, dtype=dtype)


def backend_for(backend, *arrays):
    """The backend module for ``arrays``: ``backend``, or ``cupy`` if it is ``None`` and an array is on the device.

    Raises
    ------
    UserError
        If a device array is given to a CPU backend (one line, saying how to fix it).
    """
    from simcomm._errors import UserError
    from simcomm.backends import get_backend

    on_device = any(is_device(a) for a in arrays)
    if backend is None and on_device:
        backend = "cupy"
    be = get_backend(backend)
    if on_device and namespace_of_backend(be) is np:
        raise UserError(f"the input is a CuPy (device) array but the backend is '{be.NAME}'; use backend='cupy' "
                        "or pass host arrays (x.get())")
    return be
