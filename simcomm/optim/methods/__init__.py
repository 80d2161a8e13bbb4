"""The named training methods, one file each: every one a composition of :mod:`simcomm.optim`'s blocks.

Importing this package registers them in :data:`simcomm.optim.METHODS`. A new method is one file here
(a builder decorated with :func:`simcomm.optim.method`) and one row in ``tests/test_methods.py``.
"""

from simcomm.optim.methods import (  # noqa: F401
    async_gd,
    compressed_gd,
    ef21_hb_delayed,
    exact_diffusion,
    gradient_tracking,
    iag,
    pushsum,
    pushsum_sgd,
)

__all__: list[str] = []
