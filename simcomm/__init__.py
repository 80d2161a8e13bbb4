"""simcomm: simulate communication-efficient distributed SGD and check the theory against it.

Subpackages: :mod:`simcomm.compress`, :mod:`simcomm.models`, :mod:`simcomm.estimate`,
:mod:`simcomm.optim`, :mod:`simcomm.topology`, :mod:`simcomm.sampling`, :mod:`simcomm.network`,
:mod:`simcomm.backends`.
Machinery: :mod:`simcomm.spec`, :mod:`simcomm.runner`, :mod:`simcomm.claims`,
:mod:`simcomm.plotting`, :mod:`simcomm.results`.

Each subpackage is imported on first use, so ``import simcomm`` stays cheap and
``simcomm.compress.TopK(2)`` works after it without importing the subpackage first.
"""

import importlib

from simcomm._errors import BackendUnavailable, SpecError, UserError

__version__ = "0.1.0"
__all__ = ["BackendUnavailable", "SpecError", "UserError", "__version__"]

#: subpackages and modules loaded on first attribute access
_LAZY = ("backends", "checking", "claims", "cli", "compress", "conform", "conform_fixtures", "cost", "estimate",
         "experiments", "models", "mpi", "network", "optim", "plotting", "report", "results", "runner", "sampling",
         "scaling", "spec", "topology", "torch")


def __getattr__(name: str):
    """Import the subpackage ``name`` on first access (PEP 562)."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'simcomm' has no attribute '{name}'")


def __dir__():
    """Public names, the lazily loaded subpackages included."""
    return sorted(set(globals()) | set(_LAZY))
