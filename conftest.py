"""Test-wide settings that must exist before numba is imported (also for doctests)."""

import os
from pathlib import Path

# numba's on-disk cache lives in a gitignored folder of the checkout, shared by test workers.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).parent / ".numba_cache"))
os.environ.setdefault("MPLBACKEND", "Agg")
