r"""The shared numerics of the learning problems: stable (log-)softmax, cross-entropy, logistic, MLP passes.

Every model of :mod:`simcomm.models` that needs one of these calls it from here; no other module repeats
the maths, so a change of numerics (or of array backend) happens in one place.

* Softmax over ``axis`` with the max-shift :math:`\tilde z = z - \max_k z_k` (no overflow):
  :math:`\log\mathrm{softmax}(z) = \tilde z - \log\sum_k e^{\tilde z_k}` and
  :math:`\mathrm{softmax}(z) = e^{\tilde z} / \sum_k e^{\tilde z_k}`; the pair comes from one ``exp``.
* Cross-entropy :math:`\ell(z, y) = -\log\mathrm{softmax}(z)_y` and its logit gradient
  :math:`\partial\ell/\partial z = \mathrm{softmax}(z) - e_y`.
* Binary logistic: :math:`\sigma(z) = \frac12(1 + \tanh(z/2))` (no overflow for any ``z``) and
  :math:`\log(1 + e^{z})`.
* A ReLU MLP on a list of layers ``[(W, b), ...]`` (``W`` of shape ``(in, out)``): the forward pass
  :math:`a^{(l)} = h^{(l-1)} W^{(l)} + b^{(l)}`, :math:`h^{(l)} = \max(a^{(l)}, 0)` and the backward walk
  :math:`\delta^{(l-1)} = (\delta^{(l)} {W^{(l)}}^\top) \odot 1[a^{(l-1)} > 0]`. What is formed from each
  layer's :math:`\delta^{(l)}` (a summed, a per-worker or a per-example gradient, or only its norm) is
  up to the caller (:mod:`simcomm.models._nn`).

Each function computes in the array namespace of its input (``array_namespace``: NumPy, or CuPy for
device arrays; only the NumPy path is tested so far). The NumPy results are the exact bits of the
per-module copies these functions replaced: the order of operations is theirs.
"""

from __future__ import annotations

from simcomm.backends import array_namespace

__all__ = [
    "log_softmax",
    "softmax",
    "log_softmax_and_softmax",
    "cross_entropy",
    "cross_entropy_grad",
    "sigmoid",
    "log1p_exp",
    "mlp_forward",
    "mlp_backward",
]


def _shifted_exp(z, axis):
    """``(z - max, exp(z - max), sum of exp)``, the sum kept as a size-1 axis."""
    xp = array_namespace(z)
    zs = z - z.max(axis=axis, keepdims=True)
    e = xp.exp(zs)
    return xp, zs, e, e.sum(axis=axis, keepdims=True)


def log_softmax(z, axis: int = -1):
    r"""Log-probabilities :math:`\tilde z - \log\sum_k e^{\tilde z_k}` along ``axis`` (max-shifted, stable).

    Examples
    --------
    >>> import numpy as np
    >>> log_softmax(np.array([[0.0, 0.0], [1000.0, 0.0]])).round(6).tolist()
    [[-0.693147, -0.693147], [0.0, -1000.0]]
    """
    xp, zs, _, s = _shifted_exp(z, axis)
    return zs - xp.log(s)


def softmax(z, axis: int = -1):
    r"""Probabilities :math:`e^{\tilde z} / \sum_k e^{\tilde z_k}` along ``axis`` (max-shifted, stable).

    Examples
    --------
    >>> import numpy as np
    >>> softmax(np.array([[0.0, 0.0], [1000.0, 0.0]])).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    """
    _, _, e, s = _shifted_exp(z, axis)
    e /= s
    return e


def log_softmax_and_softmax(z, axis: int = -1):
    """``(log_softmax(z), softmax(z))`` from one ``exp`` pass (bit for bit the two functions' values).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[1.0, 2.0, 3.0]])
    >>> logp, p = log_softmax_and_softmax(z)
    >>> bool(np.array_equal(logp, log_softmax(z)) and np.array_equal(p, softmax(z)))
    True
    """
    xp, zs, e, s = _shifted_exp(z, axis)
    return zs - xp.log(s), e / s


def cross_entropy(logits, y):
    r"""Per-example cross-entropies :math:`-\log\mathrm{softmax}(z_n)_{y_n}`; ``logits`` ``(B, K)``, ``y`` ``(B,)``.

    Examples
    --------
    >>> import numpy as np
    >>> cross_entropy(np.zeros((2, 4)), np.array([0, 3])).round(6).tolist()
    [1.386294, 1.386294]
    """
    xp = array_namespace(logits)
    return -log_softmax(logits, axis=1)[xp.arange(y.shape[0]), y]


def cross_entropy_grad(logits, y, *, via_log: bool = False):
    r"""Rows :math:`\partial\ell_n/\partial z_n = \mathrm{softmax}(z_n) - e_{y_n}` (a new array), shapes as above.

    Parameters
    ----------
    logits : array, shape (B, K)
    y : array of int, shape (B,)
    via_log : bool, default False
        Form the probabilities as ``exp(log_softmax(z))`` instead of ``softmax(z)``. The two agree to an
        ulp or so but not bit for bit; the per-example paths of :mod:`simcomm.models._nn` (weighted,
        per-example gradients and their norms) have always used the first, and keep it so that every
        result recorded with them reproduces exactly.

    Returns
    -------
    array, shape (B, K)

    Examples
    --------
    >>> import numpy as np
    >>> cross_entropy_grad(np.zeros((1, 4)), np.array([2])).tolist()
    [[0.25, 0.25, -0.75, 0.25]]
    >>> g = cross_entropy_grad(np.array([[3.0, -1.0, 0.5]]), np.array([0]), via_log=True)
    >>> bool(np.allclose(g, cross_entropy_grad(np.array([[3.0, -1.0, 0.5]]), np.array([0])), rtol=0, atol=1e-15))
    True
    """
    xp = array_namespace(logits)
    delta = xp.exp(log_softmax(logits, axis=1)) if via_log else softmax(logits, axis=1)
    delta[xp.arange(y.shape[0]), y] -= 1.0
    return delta


def sigmoid(z):
    r"""Logistic function :math:`\sigma(z) = \frac12(1 + \tanh(z/2))`, finite for every ``z``.

    Examples
    --------
    >>> import numpy as np
    >>> sigmoid(np.array([-800.0, 0.0, 800.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    xp = array_namespace(z)
    return 0.5 * (1.0 + xp.tanh(0.5 * z))


def log1p_exp(z):
    r""":math:`\log(1 + e^{z})` without overflow (the logistic loss is ``log1p_exp(-y a.x)``).

    Examples
    --------
    >>> import numpy as np
    >>> log1p_exp(np.array([-800.0, 0.0, 800.0])).round(6).tolist()
    [0.0, 0.693147, 800.0]
    """
    xp = array_namespace(z)
    return xp.logaddexp(0.0, z)


def mlp_forward(layers, X):
    r"""Forward pass of a ReLU MLP on a batch ``X`` of shape ``(B, d)``.

    Parameters
    ----------
    layers : list of (W, b)
        Weights ``(in, out)`` and biases ``(out,)``; the last layer has no activation.
    X : array, shape (B, d)

    Returns
    -------
    hs : list of array
        ``hs[l]`` is the input of layer ``l`` (``hs[0] = X``), shape ``(B, in_l)``.
    pre : list of array
        ``pre[l]`` are layer ``l``'s pre-activations :math:`a^{(l)}`; ``pre[-1]`` are the logits.

    Examples
    --------
    >>> import numpy as np
    >>> layers = [(np.array([[1.0, -1.0]]), np.zeros(2)), (np.ones((2, 1)), np.array([0.5]))]
    >>> hs, pre = mlp_forward(layers, np.array([[2.0]]))
    >>> hs[1].tolist(), pre[-1].tolist()
    ([[2.0, 0.0]], [[2.5]])
    """
    xp = array_namespace(X)
    hs, pre = [X], []
    last = len(layers) - 1
    for li, (W, b) in enumerate(layers):
        a = hs[-1] @ W + b
        pre.append(a)
        if li < last:
            hs.append(xp.maximum(a, 0.0))
    return hs, pre


def mlp_backward(layers, pre, delta):
    r"""Walk the layers backwards: yield ``(l, delta_l)`` for ``l = L-1, ..., 0``.

    ``delta`` is :math:`\partial\mathcal L/\partial a^{(L-1)}` (rows of the output layer); each next one is
    :math:`\delta^{(l-1)} = (\delta^{(l)} {W^{(l)}}^\top) \odot 1[a^{(l-1)} > 0]`, formed only after the
    caller has used :math:`\delta^{(l)}` (which it must not modify). The gradient of the weights of layer
    ``l`` is ``hs[l].T @ delta_l`` (summed over rows) and of its biases ``delta_l.sum(axis=0)``.

    Parameters
    ----------
    layers : list of (W, b)
    pre : list of array
        Pre-activations from :func:`mlp_forward`.
    delta : array, shape (B, n_out)

    Yields
    ------
    (int, array)

    Examples
    --------
    >>> import numpy as np
    >>> layers = [(np.array([[1.0, -1.0]]), np.zeros(2)), (np.ones((2, 1)), np.array([0.5]))]
    >>> hs, pre = mlp_forward(layers, np.array([[2.0]]))
    >>> [(li, d.tolist()) for li, d in mlp_backward(layers, pre, np.array([[1.0]]))]
    [(1, [[1.0]]), (0, [[1.0, 0.0]])]
    """
    for li in range(len(layers) - 1, -1, -1):
        yield li, delta
        if li > 0:
            delta = (delta @ layers[li][0].T) * (pre[li - 1] > 0)
