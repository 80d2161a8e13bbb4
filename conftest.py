"""Test-wide settings that must exist before numba is imported (also for doctests)."""

import os
from pathlib import Path

# numba's on-disk cache lives in a gitignored folder of the checkout, shared by test workers.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).parent / ".numba_cache"))
os.environ.setdefault("MPLBACKEND", "Agg")

# Doctest collection imports every module; the GPU backend needs CuPy (tests/test_gpu.py says why it skips).
import importlib.util  # noqa: E402

collect_ignore_glob = [] if importlib.util.find_spec("cupy") else ["simcomm/backends/_cupy/*"]
# simcomm.torch's examples run a torch module; without the torch extra they are not collected (tests/test_torch_*.py
# skip with the reason).
if not importlib.util.find_spec("torch"):
    collect_ignore_glob += ["simcomm/torch/*"]
