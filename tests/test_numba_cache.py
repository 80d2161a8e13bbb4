"""numba's on-disk cache must give every compiled kernel its own entry.

numba keys a cache entry by the Python function's name and source line plus the signature, not by
the ``parallel`` flag. One Python body wrapped twice (``njit(parallel=True)(f)`` and ``njit(f)``) shared
an entry: whichever compiled first was loaded for both, so the threaded DmSGD step silently ran on one
thread (half speed) or the serial driver ran threaded code (a segfault). This test fails on any such
pair in the numba backend.
"""

import importlib
import pkgutil
from collections import defaultdict

from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

import simcomm.backends._numba as numba_backend


def _cached_dispatchers():
    for info in pkgutil.iter_modules(numba_backend.__path__):
        module = importlib.import_module(f"{numba_backend.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and not isinstance(obj._cache, NullCache):
                yield f"{info.name}.{name}", obj


def test_no_two_cached_kernels_share_a_python_function():
    by_code = defaultdict(dict)  # code -> {dispatcher: name}; a kernel imported by another module is one entry
    found = list(_cached_dispatchers())
    for name, dispatcher in found:
        by_code[dispatcher.py_func.__code__].setdefault(dispatcher, name)
    assert len(found) > 10, "expected the numba backend's cached kernels to be found"
    shared = [sorted(d.values()) for d in by_code.values() if len(d) > 1]
    assert not shared, f"these cached kernels share one Python function (and one cache entry): {shared}"
