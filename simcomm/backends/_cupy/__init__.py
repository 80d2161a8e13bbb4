"""The ``cupy`` backend (optional ``gpu`` extra). Importing it without CuPy or a GPU raises ImportError."""

import cupy as xp  # noqa: F401

try:
    _n_devices = xp.cuda.runtime.getDeviceCount()
except Exception as exc:  # pragma: no cover - CUDA driver missing
    raise ImportError(f"CuPy is installed but CUDA is not usable: {exc}") from None
if _n_devices < 1:  # pragma: no cover - needs a GPU
    raise ImportError("CuPy is installed but no CUDA device is visible")

NAME = "cupy"
