"""The papers' bounds as pure functions of scalars (imports only math, numpy and theory).

One module per paper: :mod:`theory.expgraph`, :mod:`theory.rtopk`, :mod:`theory.urq`,
:mod:`theory.importance`. Every bound carries ``.info`` (kind, provenance tag, paper, statement).
"""

from theory._bound import BOUNDS, PROVENANCE, BoundInfo, bound

__all__ = ["BOUNDS", "PROVENANCE", "BoundInfo", "bound"]
