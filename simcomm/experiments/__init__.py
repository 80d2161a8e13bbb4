"""Registered experiments, one module per paper. Importing this package registers them all."""

import importlib
import pkgutil

from simcomm.experiments._registry import EXPERIMENTS, Experiment, Param, experiment, get_experiment

__all__ = ["EXPERIMENTS", "Experiment", "Param", "experiment", "get_experiment"]

# Every public module in this package registers its experiments on import.
for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
