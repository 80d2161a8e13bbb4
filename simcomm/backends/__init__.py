"""Compute backends: ``numpy`` (the readable reference), ``numba`` (default on CPU), ``cupy`` (GPU).

Every backend is a module exposing the same kernel names with the same signatures, plus ``NAME``,
``xp`` (the array namespace) and ``NONFINITE_SAFE_SELECTION`` (whether the error-feedback selection
kernels accept non-finite rows, so a caller may check finiteness after them instead of before).
Asking for a backend that cannot run here raises
:class:`~simcomm.BackendUnavailable`; nothing falls back silently.

The active backend is one context variable: ``with use("numpy"): ...`` makes ``numpy`` the backend of
everything called in the block (default: ``numba``), and :func:`get_backend` with no argument returns it.
A CuPy array needs no ``use``: it selects the ``cupy`` backend by itself (:func:`backend_for`).

Examples
--------
>>> from simcomm.backends import get_backend, use
>>> get_backend("numpy").NAME
'numpy'
>>> with use("numpy"):
...     get_backend().NAME
'numpy'
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from contextvars import ContextVar
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

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "get_backend", "use", "entry_point", "available_backends",
           "array_namespace", "backend_for", "framework_arrays", "from_framework", "is_device", "is_framework_array",
           "namespace_of_backend", "to_backend", "to_host"]

BACKENDS = ("numpy", "numba", "cupy")
DEFAULT_BACKEND = "numba"
_INSTALL = {
    "numba": "pip install numba",
    "cupy": "pip install 'simcomm[gpu]' on a machine with an NVIDIA GPU and CUDA 12",
}


#: the backend module of the running code (``None``: the default), set by :func:`use`
_ACTIVE: ContextVar[ModuleType | None] = ContextVar("simcomm_backend", default=None)


def get_backend(name: str | ModuleType | None = None) -> ModuleType:
    """Return the backend module called ``name``; without a name, the active one (:func:`use`; default ``numba``).

    Raises
    ------
    BackendUnavailable
        If the name is unknown or the backend cannot run on this machine.
    """
    if isinstance(name, ModuleType):
        return name
    if name is None:
        active = _ACTIVE.get()
        if active is not None:
            return active
        name = DEFAULT_BACKEND
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend '{name}'{closest(name, BACKENDS)}; "
                                 f"choose one of {', '.join(BACKENDS)}")
    try:
        return importlib.import_module(f"simcomm.backends._{name}")
    except ImportError as exc:
        raise BackendUnavailable(f"backend '{name}' is not available here ({exc}); "
                                 f"install it with: {_INSTALL[name]}") from None


@contextlib.contextmanager
def use(backend: str | ModuleType | None):
    """Make ``backend`` (a name or a backend module) the active backend inside the ``with`` block.

    ``use(None)`` keeps the active one, so an entry point given no backend leaves an enclosing ``use`` in
    force. The setting is a :class:`contextvars.ContextVar`: threads and asyncio tasks each see their own.

    Raises
    ------
    BackendUnavailable
        If the backend cannot run here (checked on entry).

    Examples
    --------
    >>> with use("numpy") as be:
    ...     be.NAME, get_backend().NAME
    ('numpy', 'numpy')
    """
    be = get_backend(backend)
    token = _ACTIVE.set(be)
    try:
        yield be
    finally:
        _ACTIVE.reset(token)


def entry_point(fn):
    """Decorator of a function that configures a run: its ``backend=`` keyword is the active backend inside it.

    The function still receives ``backend`` (its explicit kernels keep it); everything it calls that
    takes no backend (compressors, quantizers, ...) computes on it through :func:`use`.
    """

    @functools.wraps(fn)
    def wrapper(*args, backend=None, **kwargs):
        with use(backend):
            return fn(*args, backend=backend, **kwargs)

    return wrapper


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
