r"""A PyTorch model trained on data by ``n`` workers: :class:`TorchProblem`, the model family's oracle in torch.

:class:`TorchProblem` is a :class:`~simcomm.optim.ModelProblem` whose model is a
:class:`simcomm.models.TorchModel` (any ``nn.Module``; :func:`simcomm.models.lenet5`,
:func:`simcomm.models.small_resnet`), so every method of the model family runs on it unchanged:
``ef_sgd`` (its fused error-feedback kernels included), ``importance_sgd``, and their watches
(:class:`~simcomm.optim.EFWatch`, :class:`~simcomm.optim.ImportanceWatch`) with the same records.

The minibatches are drawn exactly as :class:`~simcomm.optim.ModelProblem` draws them (the same uniforms
give the same examples), then gathered on the torch side: the training set is converted to the
network's dtype and device once (on the CPU a float32 array in a float32 network is shared, not copied).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.models import TorchModel
from simcomm.optim._blocks_nn import ModelProblem

__all__ = ["TorchProblem"]


class TorchProblem(ModelProblem):
    r"""A :class:`~simcomm.models.TorchModel` trained on ``(X, y)`` by ``n`` workers (see :class:`ModelProblem`).

    Parameters
    ----------
    model : simcomm.models.TorchModel
    X, y : numpy.ndarray
        Training inputs ``(N, ...)`` (whatever the module takes per row) and labels ``(N,)``.
    n, batch_size, shards, X_test, y_test, batch_rng
        As for :class:`ModelProblem`.

    Examples
    --------
    >>> import torch
    >>> from simcomm.models import TorchModel
    >>> net = TorchModel(torch.nn.Linear(4, 3))
    >>> rng = np.random.default_rng(0); X = rng.standard_normal((20, 4)).astype(np.float32)
    >>> p = TorchProblem(net, X, rng.integers(0, 3, 20), n=2, batch_size=5)
    >>> p.minibatch_gradients(np.random.default_rng(1), net.params()).shape
    (2, 15)
    """

    def __init__(self, model, X, y, *, n: int = 1, batch_size: int = 32, shards=None, X_test=None, y_test=None,
                 batch_rng=None):
        if not isinstance(model, TorchModel):
            raise UserError(f"model is a {type(model).__name__}; wrap the module: simcomm.models.TorchModel(module)")
        y = np.asarray(y)
        if len(X) != y.shape[0] or (X_test is not None and len(X_test) != len(y_test)):
            raise UserError(f"X has {len(X)} rows but y has {y.shape[0]} labels; give one label per row")
        super().__init__(model, X, y, n=n, batch_size=batch_size, shards=shards, X_test=X_test, y_test=y_test,
                         batch_rng=batch_rng)
        self._X, self._y = model.inputs(X), model.labels(y)
        self._test = None if X_test is None else (model.inputs(X_test), model.labels(y_test))

    def _rows(self, idx):
        return self.model.labels(idx)  # an int64 index tensor on the model's device

    def minibatch_gradients(self, rng, theta, out=None) -> np.ndarray:
        """Every worker's gradient at ``theta`` on ``batch_size`` examples drawn from its shard: ``(n, D)``."""
        b = self._rows(self.batch_indices(rng))
        return self.model.worker_gradients(theta, self._X[b], self._y[b], out=out)

    def worker_minibatch_gradients(self, rng, thetas) -> np.ndarray:
        """Worker ``i``'s gradient at its own model ``thetas[i]`` on a minibatch of its shard: ``(n, D)``."""
        b = self._rows(self.batch_indices(rng))
        return self.model.node_gradients(thetas, self._X[b], self._y[b])

    def norms(self, theta, idx=None) -> np.ndarray:
        """Per-example gradient norms at ``theta`` (of the examples ``idx``, or all)."""
        if idx is None:
            return self.model.per_example_grad_norms(theta, self._X, self._y)
        b = self._rows(np.asarray(idx))
        return self.model.per_example_grad_norms(theta, self._X[b], self._y[b])

    def weighted_gradient(self, theta, idx, weights) -> np.ndarray:
        r"""Flat :math:`\sum_m w_m g_{I_m}` over the training examples ``idx`` (repeats allowed), ``(D,)``."""
        b = self._rows(np.asarray(idx))
        return self.model.weighted_gradient(theta, self._X[b], self._y[b], weights)

    def full_gradient(self, theta) -> np.ndarray:
        """Gradient of the mean training loss, ``(D,)``."""
        return self.model.gradient(theta, self._X, self._y)

    def loss_accuracy(self, theta) -> tuple[float, float]:
        """The mean training loss and the test accuracy (NaN without a test set)."""
        tl = self.model.loss(theta, self._X, self._y)
        return tl, self.model.accuracy(theta, *self._test) if self._test is not None else float("nan")
