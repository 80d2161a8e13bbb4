"""Slow, obviously correct oracles for simcomm.models._nn: one example at a time, one layer at a time."""

import numpy as np


def layers_of(sizes, theta):
    """Split a flat vector into [(W, b)] with W of shape (in, out), by explicit offsets."""
    out, pos = [], 0
    for i, o in zip(sizes[:-1], sizes[1:]):
        W = theta[pos : pos + i * o].reshape(i, o)
        pos += i * o
        b = theta[pos : pos + o]
        pos += o
        out.append((W, b))
    return out


def example_loss(sizes, l2, theta, x, y):
    """Cross-entropy of one example plus (l2/2) * sum ||W||^2."""
    h = x
    layers = layers_of(sizes, theta)
    for li, (W, b) in enumerate(layers):
        a = h @ W + b
        h = a if li == len(layers) - 1 else np.maximum(a, 0.0)
    z = h - h.max()
    ce = -(z[y] - np.log(np.sum(np.exp(z))))
    return ce + 0.5 * l2 * sum(np.sum(W * W) for W, _ in layers)


def example_gradient(sizes, l2, theta, x, y):
    """Gradient of example_loss by backprop on vectors, one example (loops over layers only)."""
    layers = layers_of(sizes, theta)
    hs, pres = [x], []
    for li, (W, b) in enumerate(layers):
        a = hs[-1] @ W + b
        pres.append(a)
        hs.append(a if li == len(layers) - 1 else np.maximum(a, 0.0))
    p = np.exp(hs[-1] - hs[-1].max())
    p /= p.sum()
    delta = p.copy()
    delta[y] -= 1.0
    grads = [None] * len(layers)
    for li in range(len(layers) - 1, -1, -1):
        W, _ = layers[li]
        grads[li] = (np.outer(hs[li], delta) + l2 * W, delta.copy())
        if li > 0:
            delta = (W @ delta) * (pres[li - 1] > 0)
    return np.concatenate([np.concatenate([gW.ravel(), gb]) for gW, gb in grads])


def per_example_gradients_loop(sizes, l2, theta, X, y):
    """Rows g_n, one Python call per example."""
    return np.stack([example_gradient(sizes, l2, theta, X[n], y[n]) for n in range(X.shape[0])])


def finite_difference_gradient(f, theta, h=1e-6):
    """Central differences of a scalar function, coordinate by coordinate."""
    g = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        g[i] = (f(theta + e) - f(theta - e)) / (2 * h)
    return g
