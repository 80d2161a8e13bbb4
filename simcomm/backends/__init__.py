"""Compute backends: ``numpy`` (the readable reference), ``numba`` (default on CPU), ``cupy`` (GPU).

Every backend is a module exposing the same kernel names with the same signatures, plus ``NAME``,
``xp`` (the array namespace) and ``NONFINITE_SAFE_SELECTION`` (whether the error-feedback selection
kernels accept non-finite rows, so a caller may check finiteness after them instead of before).
Asking for a backend that cannot run here raises
:class:`~simcomm.BackendUnavailable`; nothing falls back silently.

Examples
--------
>>> from simcomm.backends import get_backend
>>> get_backend("numpy").NAME
'numpy'
"""

from __future__ import annotations

import importlib
from types import ModuleType

from simcomm._errors import BackendUnavailable, closest
from simcomm.backends._xp import (
    array_namespace,
    backend_for,
    framework_arrays,
    from_framework,
    is_device,
    is_framework_array,
    namespace_of_backend,
    to_backend,
    to_host,
)

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "get_backend", "available_backends", "array_namespace", "backend_for",
           "framework_arrays", "from_framework", "is_device", "is_framework_array", "namespace_of_backend",
           "to_backend", "to_host"]

BACKENDS = ("numpy", "numba", "cupy")
DEFAULT_BACKEND = "numba"
_INSTALL = {
    "numba": "pip install numba",
    "cupy": "pip install 'simcomm[gpu]' on a machine with an NVIDIA GPU and CUDA 12",
}


def get_backend(name: str | ModuleType | None = None) -> ModuleType:
    """Return the backend module called ``name`` (default: ``numba``).

    Raises
    ------
    BackendUnavailable
        If the name is unknown or the backend cannot run on this machine.
    """
    if isinstance(name, ModuleType):
        return name
    name = DEFAULT_BACKEND if name is None else name
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend '{name}'{closest(name, BACKENDS)}; "
                                 f"choose one of {', '.join(BACKENDS)}")
    try:
        return importlib.import_module(f"simcomm.backends._{name}")
    except ImportError as exc:
        raise BackendUnavailable(f"backend '{name}' is not available here ({exc}); "
                                 f"install it with: {_INSTALL[name]}") from None


def available_backends() -> list[str]:
    """Names of the backends that can run on this machine."""
    out = []
    for name in BACKENDS:
        try:
            get_backend(name)
        except BackendUnavailable:
            continue
        out.append(name)
    return out
