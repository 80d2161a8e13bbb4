"""Slow, obviously correct oracles for decentralized SGD: dense W, a Python loop over nodes."""

import numpy as np


def dense_W(topology, k=0):
    """Dense W^(k) built entry by entry from the topology's own description (no simcomm mixing code)."""
    layer = topology.layer(k)
    n = layer.n
    W = np.zeros((n, n))
    if layer.kind == "circulant":
        shape = layer.shape
        for i in range(n):
            idx = np.array(np.unravel_index(i, shape))
            for h, w in zip(layer.offsets, layer.weights):
                j = np.ravel_multi_index(tuple(np.mod(idx + h, shape)), shape)
                W[i, j] += w
        return W
    return layer.matrix.toarray()


def dmsgd_naive(problem_grad, x0, W_of_k, steps, gamma_of_k, beta, noise):
    """DmSGD, ATC with local momentum, one node at a time (papers/exponential_graph.md (d)).

    problem_grad(i, x) -> grad f_i(x); noise[k, i] is added to node i's gradient at step k.
    """
    n = noise.shape[1]
    x = [np.array(x0, dtype=float) for _ in range(n)]
    m = [np.zeros_like(x[0]) for _ in range(n)]
    for k in range(steps):
        W = W_of_k(k)
        y = []
        for i in range(n):
            g = problem_grad(i, x[i]) + noise[k, i]
            m[i] = beta * m[i] + g
            y.append(x[i] - gamma_of_k(k) * m[i])
        x = [sum(W[i, j] * y[j] for j in range(n)) for i in range(n)]
    return np.array(x), np.array(m)
