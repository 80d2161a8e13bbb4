"""One tidy view of every optimiser's record: ``trace.table()`` is a long-format pandas DataFrame.

Each trace type keeps its fields (the experiments read them); ``table()`` puts the per-step records of
any of them in the same shape: one row per recorded step (and replicate, where a run holds several),
one column per recorded quantity, ``step`` first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tidy"]


def tidy(steps, columns: dict, replicates: bool = False):
    """Long-format table of per-step records.

    Parameters
    ----------
    steps : array_like, shape (T,)
        Recorded steps.
    columns : dict of str to array_like
        Each of shape ``(T,)``, or ``(R, T)`` with ``replicates=True`` (a ``(T,)`` column is then
        repeated for every replicate).
    replicates : bool
        Whether the records have a leading replicate axis (adds a ``replicate`` column).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> tidy([0, 1], {"loss": [2.0, 1.0]}).to_dict("list")
    {'step': [0, 1], 'loss': [2.0, 1.0]}
    >>> tidy([0, 5], {"gap": [[3.0, 2.0], [4.0, 1.0]]}, replicates=True)["replicate"].tolist()
    [0, 0, 1, 1]
    """
    import pandas as pd

    steps = np.asarray(steps)
    T = steps.size
    if not replicates:
        return pd.DataFrame({"step": steps, **{k: np.asarray(v)[:T] for k, v in columns.items()}})
    R = next((np.shape(v)[0] for v in columns.values() if np.ndim(v) == 2), 1)
    out = {"replicate": np.repeat(np.arange(R), T), "step": np.tile(steps, R)}
    for k, v in columns.items():
        v = np.asarray(v)
        out[k] = v.reshape(-1) if v.ndim == 2 else np.tile(v[:T], R)
    return pd.DataFrame(out)
