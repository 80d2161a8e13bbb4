r"""Any PyTorch ``nn.Module`` as a gradient oracle on one flat parameter vector (``torch.func``).

:class:`TorchModel` wraps a classifier (a module mapping a batch of inputs to logits) trained with
softmax cross-entropy, :math:`\ell_n(\theta) = -\log\mathrm{softmax}(f_\theta(x_n))_{y_n}`. Its parameters
are one flat vector :math:`\theta \in \mathbb{R}^D` (``module.named_parameters()`` in order, each
row-major), so the compressors, error feedback and samplers act on it as on the numpy MLP's
(:mod:`simcomm.models._nn`).

The oracle is ``functional_call`` of the module at views into :math:`\theta`, differentiated by
``torch.func.grad`` with respect to the flat vector itself (the gradient comes out flat, no
concatenation), and batched by ``torch.func.vmap``: over the ``n`` workers' minibatches at one shared
:math:`\theta` (:meth:`TorchModel.worker_gradients`, ``(n, B, ...)`` in, ``(n, D)`` out, one call), over
the nodes of a decentralized run, each at its own parameters (:meth:`TorchModel.node_gradients`,
``(n, D)`` and ``(n, B, ...)`` in, ``(n, D)`` out, one call), and over the examples of a batch
(:meth:`TorchModel.per_example_grad_norms`).

Dtypes: the network computes in its own dtype (float32 for a fresh module; ``module.double()`` for
float64). What the optimiser sees is float64 numpy, as from every other model: :math:`\theta` ``(D,)``
in, gradients ``(n, D)`` out. In float64 on the CPU both crossings are free (``torch.from_numpy`` and
``Tensor.numpy()`` share memory); in float32 each is one cast (``D`` and ``n D`` values, written into the
caller's buffer when one is given). ``device="cuda"`` runs the module on a GPU: :math:`\theta` goes there
and the gradients come back once per step.

Modules whose examples interact in a forward pass (``BatchNorm`` in training mode) have no per-example
gradients and are refused; ``GroupNorm``, ``LayerNorm`` or a module in ``eval()`` mode are fine.
Randomness inside the forward pass (dropout) is drawn from torch's generator, differently per worker.
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.models._torch_norms import fast_grad_norms, supports_fast_norms

__all__ = ["TorchModel", "TORCH_INSTALL", "import_torch"]

#: how to get PyTorch (the CPU wheel: pip would otherwise pull a CUDA build)
TORCH_INSTALL = "pip install torch==2.13.0"
#: rows per chunk when a whole data set is evaluated (bounds memory: a chunk of per-example gradients is
#: ``chunk x D`` values)
CHUNK = 1024


def import_torch():
    """``torch``, or a one-line :class:`~simcomm.UserError` saying how to install it."""
    try:
        import torch
    except ImportError:
        raise UserError(f"PyTorch models need torch, which is not installed; {TORCH_INSTALL}") from None
    return torch


class TorchModel:
    r"""A PyTorch classifier as a gradient oracle on a flat float64 parameter vector.

    Parameters
    ----------
    module : torch.nn.Module
        Maps a batch of inputs ``(B, ...)`` to logits ``(B, K)``; all its parameters have one floating
        dtype. It is used in place (moved to ``device``), never copied.
    device : str or torch.device, optional
        Where the module runs (default: where its parameters are).

    Attributes
    ----------
    n_params : int
        :math:`D`, the length of the flat vector (every parameter, ``named_parameters()`` order).
    dtype : torch.dtype
        The dtype the network computes in.

    Examples
    --------
    >>> import torch
    >>> m = TorchModel(torch.nn.Linear(3, 2).double())
    >>> th = m.params(); X = np.ones((2, 4, 3)); y = np.zeros((2, 4), dtype=np.int64)
    >>> m.n_params, m.worker_gradients(th, X, y).shape
    (8, (2, 8))
    """

    def __init__(self, module, *, device=None):
        torch = import_torch()
        if not isinstance(module, torch.nn.Module):
            raise UserError(f"module is a {type(module).__name__}, not a torch.nn.Module")
        params = dict(module.named_parameters())
        if not params:
            raise UserError("the module has no parameters to train")
        dtypes = {p.dtype for p in params.values()}
        if len(dtypes) != 1 or not next(iter(dtypes)).is_floating_point:
            raise UserError(f"the module's parameters have dtypes {sorted(map(str, dtypes))}; use one floating dtype "
                            "(module.float() or module.double())")
        for name, sub in module.named_modules():
            if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm) and sub.training and sub.track_running_stats:
                raise UserError(f"layer '{name}' is BatchNorm in training mode: it mixes the examples of a batch, so "
                                "per-example and per-worker gradients are undefined; use GroupNorm or LayerNorm, or "
                                "call module.eval()")
        self.device = torch.device(device) if device is not None else next(iter(params.values())).device
        self.module = module.to(self.device)
        self.dtype = next(iter(dtypes))
        self.names = tuple(params)
        self.shapes = tuple(tuple(p.shape) for p in params.values())
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = tuple(np.concatenate([[0], np.cumsum(sizes)]).tolist())
        self.n_params = int(self.offsets[-1])
        self._torch = torch
        fn = torch.func
        self._grad = fn.grad(self._mean_loss)
        # workers: theta shared, one minibatch each; examples: theta shared, one example each
        self._grad_workers = fn.vmap(self._grad, in_dims=(None, 0, 0), randomness="different")
        # nodes: one parameter vector and one minibatch each
        self._grad_nodes = fn.vmap(self._grad, in_dims=(0, 0, 0), randomness="different")
        self._grad_examples = fn.vmap(fn.grad(self._one_loss), in_dims=(None, 0, 0), randomness="different")
        #: per-example norms by the one-backward-pass shortcut (Linear/Conv2d networks; False: always vmap)
        self.fast_norms = supports_fast_norms(torch, module)

    def __repr__(self):
        return f"TorchModel({type(self.module).__name__}, D={self.n_params}, {self.dtype}, {self.device})"

    # ------------------------------------------------------------------ the functional form

    def _views(self, flat):
        o = self.offsets
        return {n: flat[o[i]: o[i + 1]].view(s) for i, (n, s) in enumerate(zip(self.names, self.shapes))}

    def _logits(self, flat, X):
        buffers = dict(self.module.named_buffers())
        return self._torch.func.functional_call(self.module, (self._views(flat), buffers), (X,))

    def _mean_loss(self, flat, X, y):
        return self._torch.nn.functional.cross_entropy(self._logits(flat, X), y)

    def _one_loss(self, flat, x, y):
        return self._mean_loss(flat, x[None], y[None])

    def _weighted_loss(self, flat, X, y, w):
        losses = self._torch.nn.functional.cross_entropy(self._logits(flat, X), y, reduction="none")
        return (losses * w).sum()

    # ------------------------------------------------------------------ crossings

    def theta(self, theta):
        r""":math:`\theta` as a tensor in the network's dtype on its device (shares memory where it can)."""
        t = theta if isinstance(theta, self._torch.Tensor) else self._torch.from_numpy(np.ascontiguousarray(theta))
        if t.shape != (self.n_params,):
            raise UserError(f"theta has shape {tuple(t.shape)}; the model needs a flat vector of {self.n_params} "
                            "parameters")
        return t.to(device=self.device, dtype=self.dtype)

    def inputs(self, X):
        """Inputs as a tensor in the network's dtype on its device (shares a numpy array's memory where it can)."""
        t = X if isinstance(X, self._torch.Tensor) else self._torch.from_numpy(np.ascontiguousarray(X))
        return t.to(device=self.device, dtype=self.dtype if t.is_floating_point() else t.dtype)

    def labels(self, y):
        """Labels as an int64 tensor on the module's device."""
        t = y if isinstance(y, self._torch.Tensor) else self._torch.from_numpy(np.ascontiguousarray(y))
        return t.to(device=self.device, dtype=self._torch.int64)

    def _out(self, t, out):
        """A gradient tensor as float64 numpy: ``t`` itself where it already is, else cast into ``out``."""
        t = t.detach()
        if out is None and t.dtype == self._torch.float64 and t.device.type == "cpu":
            return t.numpy()  # no copy
        arr = t.cpu().numpy()
        if out is None:
            return arr.astype(np.float64)
        out[...] = arr
        return out

    # ------------------------------------------------------------------ the oracle

    def params(self) -> np.ndarray:
        r"""The module's current parameters as one flat float64 vector (a copy): a start :math:`\theta_0`."""
        with self._torch.no_grad():
            flat = self._torch.cat([p.detach().reshape(-1).to("cpu", self._torch.float64)
                                    for p in dict(self.module.named_parameters()).values()])
        return flat.numpy()

    def load(self, theta) -> None:
        r"""Write :math:`\theta` into the module's own parameters (to use the trained module as usual)."""
        t = self.theta(theta)
        with self._torch.no_grad():
            for name, v in self._views(t).items():
                self.module.get_parameter(name).copy_(v)

    def worker_gradients(self, theta, Xb, yb, *, out: np.ndarray | None = None) -> np.ndarray:
        r"""Every worker's minibatch-mean gradient in one batched call: ``(n, B, ...)`` in, ``(n, D)`` out.

        Row ``i`` is :math:`\nabla_\theta \frac1B\sum_b \ell(\theta; x_{ib}, y_{ib})`
        (``vmap`` over the workers of ``grad`` of the mean loss; a test checks it against a loop of
        ``torch.autograd``).

        Parameters
        ----------
        theta : numpy.ndarray, shape (D,)
        Xb : array, shape (n, B, ...)
        yb : array of int, shape (n, B)
        out : numpy.ndarray, shape (n, D), optional
            Float64 buffer that receives the gradients.

        Returns
        -------
        numpy.ndarray, float64, shape (n, D)
        """
        return self._out(self._grad_workers(self.theta(theta), self.inputs(Xb), self.labels(yb)), out)

    def thetas(self, Theta):
        """Node parameters ``(n, D)`` as a tensor in the network's dtype on its device."""
        t = Theta if isinstance(Theta, self._torch.Tensor) else self._torch.from_numpy(np.ascontiguousarray(Theta))
        if t.ndim != 2 or t.shape[1] != self.n_params:
            raise UserError(f"Theta has shape {tuple(t.shape)}; the model needs one row of {self.n_params} "
                            "parameters per node, shape (n, D)")
        return t.to(device=self.device, dtype=self.dtype)

    def node_gradients(self, Theta, Xb, yb, *, out: np.ndarray | None = None) -> np.ndarray:
        r"""Every node's minibatch-mean gradient at its own parameters, in one batched call: ``(n, D)`` out.

        Row ``i`` is :math:`\nabla_\theta \frac1B\sum_b \ell(\theta_i; x_{ib}, y_{ib})` (``vmap`` of
        ``grad`` of the mean loss over the rows of ``Theta`` and the minibatches together): the oracle of
        decentralized SGD, where every node holds a model of its own. With all rows equal it is
        :meth:`worker_gradients`.

        Parameters
        ----------
        Theta : numpy.ndarray, shape (n, D)
            One parameter vector per node.
        Xb : array, shape (n, B, ...)
        yb : array of int, shape (n, B)
        out : numpy.ndarray, shape (n, D), optional
            Float64 buffer that receives the gradients.

        Returns
        -------
        numpy.ndarray, float64, shape (n, D)

        Examples
        --------
        >>> import torch
        >>> m = TorchModel(torch.nn.Linear(3, 2).double())
        >>> Th = np.stack([m.params(), 2 * m.params()])
        >>> X = np.ones((2, 4, 3)); y = np.zeros((2, 4), dtype=np.int64)
        >>> G = m.node_gradients(Th, X, y)
        >>> G.shape, np.allclose(G[1], m.worker_gradients(Th[1], X[1:], y[1:])[0])
        ((2, 8), True)
        """
        T = self.thetas(Theta)
        if len(yb) != T.shape[0]:
            raise UserError(f"{T.shape[0]} nodes' parameters but {len(yb)} minibatches; give one minibatch per node")
        return self._out(self._grad_nodes(T, self.inputs(Xb), self.labels(yb)), out)

    def gradient(self, theta, X, y) -> np.ndarray:
        r"""Gradient of the mean loss over ``(X, y)``, flat float64 ``(D,)`` (in chunks of rows)."""
        w = np.full(len(y), 1.0 / len(y))
        return self.weighted_gradient(theta, X, y, w)

    def weighted_gradient(self, theta, X, y, weights) -> np.ndarray:
        r"""Flat :math:`\sum_n w_n \nabla\ell_n(\theta)` (the importance-sampled estimate), float64 ``(D,)``."""
        torch = self._torch
        t = self.theta(theta)
        g = torch.zeros(self.n_params, dtype=torch.float64, device=self.device)
        wgrad = torch.func.grad(self._weighted_loss)
        w_all = torch.from_numpy(np.asarray(weights, dtype=np.float64))
        for s in range(0, len(y), CHUNK):
            sl = slice(s, s + CHUNK)
            w = w_all[sl].to(device=self.device, dtype=self.dtype)
            g += wgrad(t, self.inputs(X[sl]), self.labels(y[sl]), w).to(torch.float64)
        return self._out(g, None)

    def per_example_grad_norms(self, theta, X, y) -> np.ndarray:
        r"""Norms :math:`\|\nabla\ell_n(\theta)\|_2` of every example's gradient, float64 ``(B,)``.

        Networks of Linear and Conv2d layers only (:func:`simcomm.models.lenet5`, a user's MLP or CNN) take
        one forward and one backward pass per chunk (:mod:`simcomm.models._torch_norms`, the C7 shortcut
        extended to convolutions); any other module: ``vmap`` over the examples of ``grad`` of one example's
        loss (memory: a chunk of per-example gradients, ``CHUNK x D`` values). Both in chunks of rows.
        """
        t = self.theta(theta)
        norms = []
        for s in range(0, len(y), CHUNK):
            Xc, yc = self.inputs(X[s: s + CHUNK]), self.labels(y[s: s + CHUNK])
            fast = fast_grad_norms(self, t, Xc, yc) if self.fast_norms else None
            norms.append(fast if fast is not None else self._grad_examples(t, Xc, yc).norm(dim=1))
        return self._torch.cat(norms).detach().to("cpu", self._torch.float64).numpy()

    def logits(self, theta, X) -> np.ndarray:
        """Logits ``(B, K)`` as float64 numpy (no gradient; in chunks of rows)."""
        t = self.theta(theta)
        with self._torch.no_grad():
            parts = [self._logits(t, self.inputs(X[s: s + CHUNK])) for s in range(0, len(X), CHUNK)]
        return self._torch.cat(parts).to("cpu", self._torch.float64).numpy()

    def loss(self, theta, X, y) -> float:
        r"""Mean cross-entropy :math:`\frac1B\sum_n \ell_n` over ``(X, y)``."""
        torch = self._torch
        z = torch.from_numpy(self.logits(theta, X))
        return float(torch.nn.functional.cross_entropy(z, self.labels(y).cpu()))

    def loss_accuracy(self, theta, X, y) -> tuple[float, float]:
        """Mean loss and the fraction of examples whose largest logit is the label, from one forward pass."""
        torch = self._torch
        z = self.logits(theta, X)
        yy = self.labels(y).cpu().numpy()
        loss = float(torch.nn.functional.cross_entropy(torch.from_numpy(z), torch.from_numpy(yy)))
        return loss, float(np.mean(z.argmax(axis=1) == yy))

    def accuracy(self, theta, X, y) -> float:
        """Fraction of examples whose largest logit is the label."""
        return self.loss_accuracy(theta, X, y)[1]
