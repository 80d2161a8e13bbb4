"""Host/device plumbing shared by the CuPy kernels: moving arrays, launch shapes, cached small arrays."""

from __future__ import annotations

import functools

import cupy as cp
import numpy as np

__all__ = ["like_input", "grid_1d", "col_blocks", "ROWS_PER_LAUNCH", "small_device", "as_rows"]

#: CUDA's limit on gridDim.y: kernels with one block row per matrix row are launched in batches of rows
ROWS_PER_LAUNCH = 65535
_THREADS = 256


def like_input(result, template):
    """Return ``result`` on the host when ``template`` was not a CuPy array, else on the device."""
    return result if isinstance(template, cp.ndarray) else cp.asnumpy(result)


def as_rows(x):
    """``x`` as a C-contiguous device array (a copy only when it is on the host or strided)."""
    return cp.ascontiguousarray(cp.asarray(x))


def _sms() -> int:
    """Multiprocessors of the current device (queried once per device: launches ask for it on every call)."""
    return _sms_of(cp.cuda.Device().id)


@functools.lru_cache(maxsize=None)
def _sms_of(device: int) -> int:
    return cp.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]


def grid_1d(size: int, per_thread: int = 4) -> tuple[tuple[int], tuple[int]]:
    """Grid and block of a grid-stride loop over ``size`` elements (a few waves of 256-thread blocks)."""
    blocks = max(1, min(-(-size // (_THREADS * per_thread)), _sms() * 16))
    return (blocks,), (_THREADS,)


def col_blocks(d: int, rows: int) -> int:
    """Blocks per row for a (row, column-slab) launch: enough blocks in all to fill the device."""
    want = max(1, (_sms() * 16) // max(1, min(rows, ROWS_PER_LAUNCH)))
    return max(1, min(-(-d // _THREADS), want))


_SMALL: dict = {}


def small_device(a, dtype):
    """A small host array (shifts, weights, CSR arrays) on the device, cached by content.

    The gossip kernels are called with the same few arrays every step; copying them once keeps the
    step free of host-to-device transfers.
    """
    if isinstance(a, cp.ndarray):
        return a.astype(dtype, copy=False)
    h = np.ascontiguousarray(a, dtype=dtype)
    key = (h.dtype.str, h.shape, h.tobytes())
    hit = _SMALL.get(key)
    if hit is None:
        if len(_SMALL) > 256:
            _SMALL.clear()
        hit = _SMALL[key] = cp.asarray(h)
    return hit
