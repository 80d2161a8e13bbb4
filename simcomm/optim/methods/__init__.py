"""The named training methods, one file each: every one a composition of :mod:`simcomm.optim`'s blocks.

Importing this package registers them in :data:`simcomm.optim.METHODS`: every public module here is
imported. A new method is one file here (a builder decorated with :func:`simcomm.optim.method`) and one
row in the methods' tests.
"""

import importlib
import pkgutil

__all__: list[str] = []

for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
