r"""Multinomial logistic regression and small ReLU MLPs in numpy, on flat parameter vectors.

A network with layer sizes ``(d, h_1, ..., h_{L-1}, K)`` computes, for a batch ``X`` of shape ``(B, d)``,

.. math:: a^{(l)} = h^{(l-1)} W^{(l)} + b^{(l)}, \quad h^{(l)} = \max(a^{(l)}, 0), \quad h^{(0)} = X,

with logits :math:`a^{(L)}` (no activation) and softmax cross-entropy. ``sizes = (d, K)`` is
multinomial logistic regression. The per-example loss is

.. math:: \ell_n(\theta) = -\log \mathrm{softmax}(a^{(L)}_n)_{y_n} + \tfrac{\lambda}{2} \sum_l \|W^{(l)}\|_F^2,

so the full loss is :math:`L = \frac1N\sum_n \ell_n` and :math:`\nabla L = \frac1N\sum_n g_n` with
:math:`g_n = \nabla \ell_n` (biases are not regularised). All parameters live in one flat float64
vector (layer by layer: ``W`` row-major with shape ``(in, out)``, then ``b``), so compressors and samplers
act on the flat gradient.

Per-example gradient norms (papers/importance_sampling.md C7 [N]): with
:math:`\delta_n^{(l)} = \partial \ell_n / \partial a_n^{(l)}` (row ``n`` of the backprop matrix of the
*summed* loss), :math:`\partial\ell_n/\partial W^{(l)} = h_n^{(l-1)} {\delta_n^{(l)}}^\top + \lambda W^{(l)}`, hence

.. math:: \|g_n\|^2 = \sum_l \|\delta^{(l)}_n\|^2 (\|h^{(l-1)}_n\|^2 + 1)
          + 2\lambda\, \delta^{(l)}_n \cdot (a^{(l)}_n - b^{(l)}) + \lambda^2 \|W^{(l)}\|_F^2,

using :math:`h^{(l-1)}_n W^{(l)} = a^{(l)}_n - b^{(l)}`: one forward and one backward pass, no outer product.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.models._ops import cross_entropy, cross_entropy_grad, mlp_backward, mlp_forward

__all__ = [
    "MLP",
    "mlp",
    "logistic_regression",
    "init_params",
    "unflatten",
    "predict_logits",
    "loss",
    "accuracy",
    "gradient",
    "weighted_gradient",
    "minibatch_gradient",
    "per_example_losses",
    "per_example_gradients",
    "per_example_grad_norms",
    "worker_gradients",
]


class MLP(NamedTuple):
    r"""Architecture of a fully connected ReLU network with softmax cross-entropy.

    Attributes
    ----------
    sizes : tuple of int
        Layer widths ``(d_in, h_1, ..., n_classes)``; two entries mean logistic regression.
    l2 : float
        L2 penalty :math:`\lambda` on the weights (not the biases), part of every per-example loss.
    """

    sizes: tuple
    l2: float = 0.0

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector."""
        return int(sum((i + 1) * o for i, o in zip(self.sizes[:-1], self.sizes[1:])))


def mlp(sizes, *, l2: float = 0.0) -> MLP:
    """Build an :class:`MLP` with layer widths ``sizes`` (input, hidden..., classes).

    Parameters
    ----------
    sizes : sequence of int
        At least two positive widths; the last is the number of classes (>= 2).
    l2 : float, default 0.0
        Non-negative L2 penalty on the weights.

    Returns
    -------
    MLP

    Examples
    --------
    >>> mlp((784, 256, 10)).n_params
    203530
    """
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < 2 or min(sizes) < 1:
        raise UserError(f"sizes = {sizes} must list at least two positive layer widths (input, ..., classes)")
    if sizes[-1] < 2:
        raise UserError(f"the last width ({sizes[-1]}) is the number of classes and must be at least 2")
    if not (np.isfinite(l2) and l2 >= 0):
        raise UserError(f"l2 = {l2} must be a finite number >= 0")
    return MLP(sizes, float(l2))


def logistic_regression(d: int, n_classes: int, *, l2: float = 0.0) -> MLP:
    """Multinomial logistic regression: an :class:`MLP` with no hidden layer.

    Examples
    --------
    >>> logistic_regression(64, 10).n_params
    650
    """
    return mlp((d, n_classes), l2=l2)


def unflatten(model: MLP, theta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Views ``[(W_1, b_1), ...]`` into the flat vector ``theta`` (no copy).

    Examples
    --------
    >>> [(W.shape, b.shape) for W, b in unflatten(mlp((3, 4, 2)), np.zeros(26))]
    [((3, 4), (4,)), ((4, 2), (2,))]
    """
    if theta.shape != (model.n_params,):
        raise UserError(f"theta has shape {theta.shape}; the model needs a flat vector of {model.n_params} parameters")
    out, pos = [], 0
    for i, o in zip(model.sizes[:-1], model.sizes[1:]):
        W = theta[pos : pos + i * o].reshape(i, o)
        pos += i * o
        out.append((W, theta[pos : pos + o]))
        pos += o
    return out


def init_params(model: MLP, *, rng=None) -> np.ndarray:
    """He-normal weights (``N(0, 2/fan_in)``) and zero biases, as one flat float64 vector.

    Examples
    --------
    >>> init_params(mlp((3, 4, 2)), rng=0).shape
    (26,)
    """
    rng = np.random.default_rng(rng)
    theta = np.zeros(model.n_params)
    for W, _ in unflatten(model, theta):
        W[...] = rng.standard_normal(W.shape) * np.sqrt(2.0 / W.shape[0])
    return theta


def _check_batch(model: MLP, X, y):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != model.sizes[0]:
        raise UserError(f"X has shape {X.shape}; the model expects (batch, {model.sizes[0]})")
    if y is not None:
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise UserError(f"y has shape {y.shape}; expected ({X.shape[0]},) labels")
        if y.size and (y.min() < 0 or y.max() >= model.sizes[-1]):
            raise UserError(f"labels must lie in 0..{model.sizes[-1] - 1}")
    return X, y


def _output_delta(logits, y):
    """Rows ``d ell_n / d logits_n = softmax - onehot`` of the per-example paths (see ``cross_entropy_grad``)."""
    return cross_entropy_grad(logits, y, via_log=True)


def _penalty(model, layers):
    return 0.5 * model.l2 * sum(float(np.vdot(W, W)) for W, _ in layers)


def predict_logits(model: MLP, theta: np.ndarray, X) -> np.ndarray:
    """Logits, shape ``(B, n_classes)``."""
    X, _ = _check_batch(model, X, None)
    return mlp_forward(unflatten(model, theta), X)[1][-1]


def per_example_losses(model: MLP, theta: np.ndarray, X, y) -> np.ndarray:
    r"""Per-example losses :math:`\ell_n` (cross-entropy plus the shared L2 term), shape ``(B,)``."""
    X, y = _check_batch(model, X, y)
    layers = unflatten(model, theta)
    return cross_entropy(mlp_forward(layers, X)[1][-1], y) + _penalty(model, layers)


def loss(model: MLP, theta: np.ndarray, X, y) -> float:
    r"""Mean loss :math:`\frac1B\sum_n \ell_n`.

    Examples
    --------
    >>> m = mlp((2, 3)); bool(np.isclose(loss(m, np.zeros(m.n_params), np.ones((4, 2)), np.arange(4) % 3), np.log(3)))
    True
    """
    return float(per_example_losses(model, theta, X, y).mean())


def accuracy(model: MLP, theta: np.ndarray, X, y) -> float:
    """Fraction of examples whose largest logit is the true label."""
    X, y = _check_batch(model, X, y)
    return float(np.mean(predict_logits(model, theta, X).argmax(axis=1) == y))


def weighted_gradient(model: MLP, theta: np.ndarray, X, y, weights) -> np.ndarray:
    r"""Flat :math:`\sum_n w_n g_n` for per-example gradients :math:`g_n = \nabla\ell_n` (one backprop).

    Parameters
    ----------
    model : MLP
    theta : numpy.ndarray
        Flat parameters.
    X, y : numpy.ndarray
        Batch features ``(B, d)`` and labels ``(B,)``.
    weights : numpy.ndarray
        Per-example weights ``(B,)``: ``1/B`` gives the mean gradient, ``1/(M N q_n)`` the
        importance-sampled minibatch estimate.

    Returns
    -------
    numpy.ndarray
        Flat gradient, shape ``(n_params,)``.
    """
    X, y = _check_batch(model, X, y)
    w = np.asarray(weights, dtype=np.float64)
    layers = unflatten(model, theta)
    hs, pre = mlp_forward(layers, X)
    grad = np.empty(model.n_params)
    parts = unflatten(model, grad)
    wsum = float(w.sum())
    for li, delta in mlp_backward(layers, pre, _output_delta(pre[-1], y) * w[:, None]):
        gW, gb = parts[li]
        np.matmul(hs[li].T, delta, out=gW)
        gW += (model.l2 * wsum) * layers[li][0]  # every ell_n carries the same (l2/2)||W||^2
        gb[...] = delta.sum(axis=0)
    return grad


def gradient(model: MLP, theta: np.ndarray, X, y) -> np.ndarray:
    """Gradient of the mean loss over the batch, flat.

    Examples
    --------
    >>> m = mlp((2, 3)); g = gradient(m, np.zeros(m.n_params), np.ones((3, 2)), np.arange(3))
    >>> bool(np.allclose(g, 0))
    True
    """
    X, y = _check_batch(model, X, y)
    return weighted_gradient(model, theta, X, y, np.full(X.shape[0], 1.0 / X.shape[0]))


def minibatch_gradient(model: MLP, theta: np.ndarray, X, y, idx) -> np.ndarray:
    """Mean gradient over the rows ``idx`` (repeats allowed), flat."""
    idx = np.asarray(idx)
    return gradient(model, theta, np.asarray(X)[idx], np.asarray(y)[idx])


def per_example_gradients(model: MLP, theta: np.ndarray, X, y) -> np.ndarray:
    """Explicit per-example gradients ``g_n``, shape ``(B, n_params)`` (memory ``B * n_params``).

    The slow path, kept as a reference: it forms one outer product per example and layer.
    """
    X, y = _check_batch(model, X, y)
    layers = unflatten(model, theta)
    hs, pre = mlp_forward(layers, X)
    B = X.shape[0]
    out = np.empty((B, model.n_params))
    pos = model.n_params
    for li, delta in mlp_backward(layers, pre, _output_delta(pre[-1], y)):
        W, b = layers[li]
        nb, nw = b.size, W.size
        out[:, pos - nb : pos] = delta
        block = out[:, pos - nb - nw : pos - nb].reshape(B, W.shape[0], W.shape[1])
        np.multiply(hs[li][:, :, None], delta[:, None, :], out=block)
        if model.l2:
            block += model.l2 * W
        pos -= nb + nw
    return out


def per_example_grad_norms(model: MLP, theta: np.ndarray, X, y) -> np.ndarray:
    r"""Norms :math:`\|g_n\|_2` of every example's gradient from one forward and one backward pass.

    Uses :math:`\|h\delta^\top\|_F^2 = \|h\|^2\|\delta\|^2` (papers/importance_sampling.md C7 [N]);
    no per-example gradient is formed, and the weight gradients themselves are never computed.

    Parameters
    ----------
    model : MLP
    theta : numpy.ndarray
        Flat parameters.
    X, y : numpy.ndarray
        Batch features ``(B, d)`` and labels ``(B,)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(B,)``, float64.

    Examples
    --------
    >>> m = mlp((5, 7, 3), l2=0.1); rng = np.random.default_rng(0)
    >>> th = init_params(m, rng=rng); X = rng.standard_normal((4, 5)); y = np.array([0, 1, 2, 0])
    >>> ref = np.linalg.norm(per_example_gradients(m, th, X, y), axis=1)
    >>> bool(np.allclose(per_example_grad_norms(m, th, X, y), ref, rtol=0, atol=1e-12))
    True
    """
    X, y = _check_batch(model, X, y)
    layers = unflatten(model, theta)
    hs, pre = mlp_forward(layers, X)
    sq = np.zeros(X.shape[0])
    l2 = model.l2
    for li, delta in mlp_backward(layers, pre, _output_delta(pre[-1], y)):
        W, b = layers[li]
        d2 = np.einsum("no,no->n", delta, delta)
        h2 = np.einsum("ni,ni->n", hs[li], hs[li])
        sq += d2 * (h2 + 1.0)
        if l2:
            # cross term 2*l2*<h delta^T, W> = 2*l2*delta.(hW) and hW = a - b: no extra matmul
            sq += 2.0 * l2 * np.einsum("no,no->n", delta, pre[li] - b) + l2 * l2 * float(np.vdot(W, W))
    return np.sqrt(np.maximum(sq, 0.0))


@lru_cache(maxsize=64)
def _layout(sizes: tuple) -> tuple[int, tuple]:
    """``(D, ((in, out, offset of W), ...))``: the flat layout of :func:`unflatten`, once per model."""
    shapes, pos = [], 0
    for i, o in zip(sizes[:-1], sizes[1:]):
        shapes.append((i, o, pos))
        pos += (i + 1) * o
    return pos, tuple(shapes)


def worker_gradients(model: MLP, theta: np.ndarray, Xb: np.ndarray, yb: np.ndarray, *,
                     out: np.ndarray | None = None) -> np.ndarray:
    r"""Every worker's minibatch-mean gradient from one batched forward/backward pass.

    Same loss and flat layout as :func:`gradient`; row ``i`` equals
    ``gradient(model, theta, Xb[i], yb[i])`` (a test checks it).

    Parameters
    ----------
    model : MLP
    theta : numpy.ndarray, shape (D,)
    Xb : numpy.ndarray, shape (n, B, d)
    yb : numpy.ndarray of int, shape (n, B)
    out : numpy.ndarray, shape (n, D), optional
        C-contiguous float64 buffer that receives the gradients (a new array by default).

    Returns
    -------
    numpy.ndarray, shape (n, D)

    Examples
    --------
    >>> m = mlp((3, 4, 2)); rng = np.random.default_rng(0); th = init_params(m, rng=rng)
    >>> Xb = rng.standard_normal((2, 5, 3)); yb = rng.integers(0, 2, (2, 5))
    >>> G = worker_gradients(m, th, Xb, yb)
    >>> bool(np.allclose(G[1], gradient(m, th, Xb[1], yb[1])))
    True
    """
    D, shapes = _layout(model.sizes)
    if theta.shape != (D,):
        layers = unflatten(model, theta)  # raises the one-line shape error
    layers = [(theta[w0: w0 + i * o].reshape(i, o), theta[w0 + i * o: w0 + (i + 1) * o]) for i, o, w0 in shapes]
    n, B = yb.shape
    # Forward and the delta backprop run as 2-D (n B, .) matmuls: one GEMM per layer instead of n; every
    # row is the same dot products in the same order, so the values are those of the batched form.
    hs, pre = mlp_forward(layers, Xb.reshape(n * B, -1))
    d_out = cross_entropy_grad(pre[-1], yb.ravel())
    d_out /= B  # d(mean loss)/d logits
    out = np.empty((n, D)) if out is None else out
    pos = D
    for li, delta in mlp_backward(layers, pre, d_out):
        W, b = layers[li]
        nb, nw = b.size, W.size
        d3 = delta.reshape(n, B, -1)
        out[:, pos - nb: pos] = d3.sum(axis=1)
        gW = out[:, pos - nb - nw: pos - nb].reshape(n, W.shape[0], W.shape[1])
        np.matmul(hs[li].reshape(n, B, -1).transpose(0, 2, 1), d3, out=gW)  # batched h_i^T delta_i
        if model.l2:
            gW += model.l2 * W
        pos -= nb + nw
    return out
