"""Registered experiments, one module per paper.

Importing this package is cheap: the experiment modules (which load the numerical stack) are imported on
the first look-up, by :func:`get_experiment` or by reading :data:`EXPERIMENTS`.
"""

import importlib
import pkgutil

from simcomm.experiments import _registry
from simcomm.experiments._registry import Experiment, Param, experiment, get_experiment

__all__ = ["EXPERIMENTS", "Experiment", "Param", "experiment", "get_experiment", "load_all"]

_LOADED = False


def load_all() -> dict:
    """Import every experiment module (each registers its experiments); the registry, name to :class:`Experiment`."""
    global _LOADED
    if not _LOADED:
        _LOADED = True  # before the imports: a module that looks an experiment up while loading sees the rest later
        try:
            for mod in pkgutil.iter_modules(__path__):
                if not mod.name.startswith("_"):
                    importlib.import_module(f"{__name__}.{mod.name}")
        except BaseException:
            _LOADED = False
            raise
    return _registry.EXPERIMENTS


def __getattr__(name: str):
    """``EXPERIMENTS`` (every experiment registered) and the experiment modules, loaded on first access."""
    registry = load_all()
    if name == "EXPERIMENTS":
        return registry
    if name in globals():
        return globals()[name]
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
