"""Record per-step flattened gradients of a user's torch module, compactly, for the real-gradient analyses."""

from __future__ import annotations

import numpy as np

__all__ = ["GradientRecorder"]

#: default memory bound of a recorder's rows (1 GiB of float32)
DEFAULT_MAX_BYTES = 2**30


class GradientRecorder:
    """Collect ``module``'s gradients after each backward pass as float32 rows, within a memory bound.

    Call :meth:`record` after ``loss.backward()`` (before ``optimizer.zero_grad()``) in the training loop;
    :attr:`gradients` is then the ``(rows, D)`` float32 array that :func:`simcomm.models.fit_sparse_skewed`,
    :func:`simcomm.network.advise` and the top-k share analyses take, ``D`` the number of trainable
    parameters (in ``module.parameters()`` order; a parameter without a gradient this step contributes
    zeros). :meth:`save` writes them to a file ``simcomm advise`` reads.

    Memory: at most :attr:`max_rows` rows are held, ``max_rows = min(max_rows, max_bytes // (4 D))``, so
    the recorder never holds more than ``max_bytes`` (default 1 GiB: 10 rows of a 25 M-parameter model).
    Past that, the rows kept are a uniform sample of the steps offered (reservoir sampling, seeded by
    ``rng``), listed in step order.

    Parameters
    ----------
    module : torch.nn.Module
    every : int, default 1
        Offer one step in ``every`` to the sample.
    max_rows : int, optional
        At most this many rows (default: as many as ``max_bytes`` allows).
    max_bytes : int, default 2**30
        Memory bound of the rows kept (4 bytes per coordinate).
    rng : numpy.random.Generator or seed, default 0
        Draws the sample once it is full.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> rec = GradientRecorder(net, max_rows=3)
    >>> for _ in range(5):
    ...     net.zero_grad()
    ...     net(torch.ones(5, 3)).pow(2).sum().backward()
    ...     rec.record()
    >>> rec.gradients.shape, rec.gradients.dtype, len(rec.steps)
    ((3, 8), dtype('float32'), 3)
    """

    def __init__(self, module, every: int = 1, *, max_rows: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 rng=0):
        from simcomm._errors import UserError

        for name, v in (("every", every), ("max_bytes", max_bytes)) + ((("max_rows", max_rows),) if max_rows
                                                                        is not None else ()):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise UserError(f"GradientRecorder: {name} = {v!r} is not allowed; use an integer >= 1")
        self.params = [p for p in module.parameters() if p.requires_grad]
        if not self.params:
            raise UserError("GradientRecorder: the module has no trainable parameters")
        self.d = int(sum(p.numel() for p in self.params))
        fit = int(max_bytes) // (4 * self.d)
        if fit < 1:
            raise UserError(f"GradientRecorder: one gradient of D = {self.d:,} parameters needs {4 * self.d:,} bytes, "
                            f"more than max_bytes = {max_bytes:,}; raise max_bytes")
        self.max_rows = fit if max_rows is None else min(int(max_rows), fit)
        self.every = int(every)
        self._rng = np.random.default_rng(rng)
        self._rows: list[np.ndarray] = []
        self._steps: list[int] = []
        self._calls = 0
        self._offered = 0

    @property
    def nbytes(self) -> int:
        """Bytes the rows held take now (at most ``4 * D * max_rows``)."""
        return 4 * self.d * len(self._rows)

    def record(self) -> None:
        """Offer this step's flattened gradient to the sample (one float32 copy on the host when kept)."""
        step = self._calls
        self._calls += 1
        if step % self.every:
            return
        slot = len(self._rows) if len(self._rows) < self.max_rows else int(self._rng.integers(0, self._offered + 1))
        self._offered += 1
        if slot >= self.max_rows:
            return
        import torch

        with torch.no_grad():
            parts = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.params]
            row = torch.cat(parts).to("cpu", torch.float32).numpy().copy()
        if slot == len(self._rows):
            self._rows.append(row)
            self._steps.append(step)
        else:
            self._rows[slot], self._steps[slot] = row, step

    @property
    def steps(self) -> np.ndarray:
        """Training step (0 = the first :meth:`record` call) of each row of :attr:`gradients`, increasing."""
        return np.sort(np.asarray(self._steps, dtype=np.int64))

    @property
    def gradients(self) -> np.ndarray:
        """``(rows kept, D)`` float32, in step order."""
        if not self._rows:
            return np.zeros((0, self.d), dtype=np.float32)
        order = np.argsort(self._steps, kind="stable")
        return np.stack([self._rows[i] for i in order])

    def save(self, path):
        """Write the rows kept and their steps to ``path`` (``.npz``; see :func:`simcomm.models.save_gradients`).

        Returns
        -------
        pathlib.Path
        """
        from simcomm._errors import UserError
        from simcomm.models import save_gradients

        if not self._rows:
            raise UserError("GradientRecorder.save: nothing recorded yet; call record() after loss.backward()")
        return save_gradients(path, self.gradients, self.steps)
