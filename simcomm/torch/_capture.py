"""Record per-step flattened gradients of a user's torch module, for the real-gradient analyses."""

from __future__ import annotations

import numpy as np

__all__ = ["GradientRecorder"]


class GradientRecorder:
    """Collect ``module``'s gradients after each backward pass as one flat float64 row per step.

    Call :meth:`record` after ``loss.backward()`` (before ``optimizer.zero_grad()``) in the training loop;
    :attr:`gradients` is then the ``(steps, D)`` array that :func:`simcomm.models.fit_sparse_skewed` and the
    top-k share analyses take, ``D`` the number of trainable parameters (in ``module.parameters()`` order;
    a parameter without a gradient this step contributes zeros).

    Parameters
    ----------
    module : torch.nn.Module
    every : int, default 1
        Keep one step in ``every``.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> rec = GradientRecorder(net)
    >>> for _ in range(4):
    ...     net.zero_grad()
    ...     net(torch.ones(5, 3)).pow(2).sum().backward()
    ...     rec.record()
    >>> rec.gradients.shape
    (4, 8)
    """

    def __init__(self, module, every: int = 1):
        from simcomm._errors import UserError

        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise UserError(f"GradientRecorder: every = {every!r} is not allowed; use an integer >= 1")
        self.params = [p for p in module.parameters() if p.requires_grad]
        if not self.params:
            raise UserError("GradientRecorder: the module has no trainable parameters")
        self.every = every
        self._rows: list[np.ndarray] = []
        self._calls = 0

    def record(self) -> None:
        """Append this step's flattened gradient (one copy to float64 on the host)."""
        self._calls += 1
        if (self._calls - 1) % self.every:
            return
        import torch

        with torch.no_grad():
            parts = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.params]
            self._rows.append(torch.cat(parts).to("cpu", torch.float64).numpy().copy())

    @property
    def gradients(self) -> np.ndarray:
        """``(steps recorded, D)`` float64."""
        if not self._rows:
            return np.zeros((0, sum(p.numel() for p in self.params)))
        return np.stack(self._rows)
