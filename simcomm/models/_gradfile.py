"""Recorded gradients on disk: one ``.npz`` of float32 rows (the steps kept) and their step numbers.

:class:`simcomm.torch.GradientRecorder` writes it (``rec.save(path)``), :func:`load_gradients` reads it back,
``simcomm advise`` ranks compressors on it. The file holds plain arrays only (no pickle): ``gradients``
(float32, ``(T, D)``), ``steps`` (int64, ``(T,)``, the training step of each row) and ``format``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from simcomm._errors import UserError

__all__ = ["GRADIENT_FORMAT", "save_gradients", "load_gradients"]

#: the ``format`` entry of a gradient file (a later layout changes the number)
GRADIENT_FORMAT = "simcomm-gradients-1"


def save_gradients(path, gradients, steps=None) -> Path:
    """Write recorded gradients to ``path`` (``.npz``, float32 rows), atomically.

    Parameters
    ----------
    path : str or pathlib.Path
        Target file; ``.npz`` is appended when missing.
    gradients : array_like, shape (T, D)
        One flattened gradient per row (stored as float32).
    steps : array_like of int, shape (T,), optional
        Training step of each row (default ``0..T-1``).

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile, os
    >>> p = save_gradients(os.path.join(tempfile.mkdtemp(), "g"), np.ones((2, 3)), steps=[0, 5])
    >>> G, steps = load_gradients(p)
    >>> G.dtype, G.shape, steps.tolist()
    (dtype('float32'), (2, 3), [0, 5])
    """
    from simcomm.results import atomic_write_bytes

    G = np.asarray(gradients, dtype=np.float32)
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 1:
        raise UserError(f"save_gradients: gradients of shape {G.shape} are not allowed; pass (steps, D) with "
                        "at least one recorded step")
    steps = np.arange(G.shape[0], dtype=np.int64) if steps is None else np.asarray(steps, dtype=np.int64)
    if steps.shape != (G.shape[0],):
        raise UserError(f"save_gradients: {steps.shape[0] if steps.ndim else 1} step numbers for {G.shape[0]} rows")
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    buf = io.BytesIO()
    np.savez(buf, gradients=G, steps=steps, format=np.array(GRADIENT_FORMAT))
    atomic_write_bytes(path, buf.getvalue())
    return path


def load_gradients(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a gradient file written by :func:`save_gradients` (or ``GradientRecorder.save``).

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    gradients : numpy.ndarray of float32, shape (T, D)
    steps : numpy.ndarray of int64, shape (T,)

    Raises
    ------
    UserError
        A missing or unreadable file, another kind of ``.npz``, no rows, or a NaN/inf entry (one line).
    """
    path = Path(path)
    what = f"gradient file '{path}'"
    if path.is_dir():
        raise UserError(f"{what} is a folder; pass the .npz written by GradientRecorder.save")
    if not path.exists():
        raise UserError(f"{what} does not exist; record one with simcomm.torch.GradientRecorder(...).save(path)")
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
            if not {"gradients", "steps"} <= keys:
                has = ", ".join(sorted(keys)) or "none"
                raise UserError(f"{what} has no 'gradients'/'steps' arrays (it has {has}); "
                                "write it with GradientRecorder.save or simcomm.models.save_gradients")
            G, steps = z["gradients"], z["steps"]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, UserError):
            raise
        raise UserError(f"{what} is not a readable .npz ({type(exc).__name__}); write it with "
                        "GradientRecorder.save") from None
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 2 or steps.shape != (G.shape[0],):
        raise UserError(f"{what} holds gradients of shape {G.shape}; it needs (steps >= 1, D >= 2) and one step "
                        "number per row")
    if not np.issubdtype(G.dtype, np.floating):
        raise UserError(f"{what} holds {G.dtype} gradients; they must be floating point")
    if not np.all(np.isfinite(G)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(G), axis=1))[0])
        raise UserError(f"{what}: the gradient of step {int(steps[bad])} has NaN or inf entries; record a run "
                        "that did not diverge")
    return np.asarray(G, dtype=np.float32), np.asarray(steps, dtype=np.int64)
