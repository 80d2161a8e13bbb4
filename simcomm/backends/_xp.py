"""Array namespaces: which module (numpy or cupy) holds an array, and moving arrays to a backend.

Code above the backends writes ``xp = array_namespace(x)`` and calls ``xp.zeros``, ``xp.sqrt``, ...
so one code path serves host arrays (numpy) and device arrays (cupy). Nothing here imports cupy unless
a cupy array or the cupy backend is already in play, so the numpy and numba paths never touch it.

Framework arrays (PyTorch, JAX, anything else with ``__dlpack__``) come in through
:func:`framework_arrays`: the decorated function sees a numpy view of a CPU tensor (or a CuPy view of
a CUDA one), made by DLPack without a copy, and its array results go back to the caller's kind the
same way (``array_api_compat.array_namespace(x).from_dlpack``), so a torch tensor in gives a torch
tensor out that shares the result's memory.

Examples
--------
>>> import numpy as np
>>> array_namespace(np.zeros(2)) is np
True
>>> to_host(np.ones(2)).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType

import numpy as np

__all__ = ["array_namespace", "is_device", "to_host", "to_backend", "namespace_of_backend", "backend_for",
           "is_framework_array", "from_framework", "framework_arrays"]

# DLPack device types (dlpack.h, DLDeviceType): host memory, CUDA, CUDA host-pinned, ROCm
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM = 1, 2, 3, 10
_PLAIN = (np.ndarray, np.generic, list, tuple, int, float, bool, complex)


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


def is_framework_array(x) -> bool:
    """Whether ``x`` is an array of another framework (torch, JAX, ...): DLPack-capable, neither numpy nor CuPy."""
    return not isinstance(x, _PLAIN) and hasattr(x, "__dlpack__") and not is_device(x)


def from_framework(x):
    """``(view, back)``: ``x`` as a numpy (CPU) or CuPy (CUDA) array sharing its memory, and the way back.

    ``back(y)`` turns an array result into the caller's kind, again by DLPack without a copy (a torch
    tensor for a torch input, a JAX array for a JAX input). Anything that is not a framework array is
    returned as it is, with ``back`` the identity. A torch tensor that requires grad is detached first
    (compression is not differentiable; no copy is made).

    Raises
    ------
    UserError
        An array on a device other than the CPU or a CUDA GPU, a CUDA array without CuPy installed, or a
        dtype numpy cannot hold (bfloat16): one line saying how to pass it instead.

    Examples
    --------
    >>> v, back = from_framework(np.ones(2))
    >>> back(v) is v
    True
    """
    if not is_framework_array(x):
        return x, _same
    from simcomm._errors import UserError

    if getattr(x, "requires_grad", False):
        x = x.detach()
    dev = x.__dlpack_device__()[0]
    what = f"a {type(x).__module__.split('.')[0]} array"
    try:
        if dev in (_DL_CPU, _DL_CUDA_HOST):
            view = np.from_dlpack(x)
        elif dev in (_DL_CUDA, _DL_ROCM):
            try:
                import cupy
            except ImportError:
                raise UserError(f"{what} on a GPU needs CuPy to be read without a copy: pip install 'simcomm[gpu]', "
                                "or move it to the host first (x.cpu())") from None
            view = cupy.from_dlpack(x)
        else:
            raise UserError(f"{what} on DLPack device type {dev} cannot be read here; move it to the CPU first")
    except (TypeError, BufferError, RuntimeError) as exc:
        raise UserError(f"{what} of dtype {getattr(x, 'dtype', '?')} cannot be shared with numpy ({exc}); "
                        "pass float32 or float64 (x.float())") from None
    return view, functools.partial(_back, _framework_namespace(x))


def _same(y):
    return y


def _framework_namespace(x):
    import array_api_compat

    return array_api_compat.array_namespace(x)


def _back(xp, y):
    if isinstance(y, tuple):
        return tuple(_back(xp, v) for v in y)
    if isinstance(y, np.ndarray) or is_device(y):
        if isinstance(y, np.ndarray) and not y.flags.writeable:
            y = y.copy()  # DLPack exports only writeable numpy arrays
        return xp.from_dlpack(y)
    return y


def framework_arrays(fn):
    """Decorator: the first argument may be a framework array; array results come back in its kind.

    The wrapped function receives a numpy (or CuPy) view of the argument made by :func:`from_framework`,
    never a copy; numpy, CuPy and array-like inputs pass straight through (one ``isinstance`` test).
    """

    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        if isinstance(x, _PLAIN) or not hasattr(x, "__dlpack__") or is_device(x):
            return fn(x, *args, **kwargs)
        view, back = from_framework(x)
        return back(fn(view, *args, **kwargs))

    return wrapper
