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


def node_shift_W(shifts, weights):
    """Dense W of a shift pattern with per-node weights, entry by entry: W[i, (i + h_t) % n] += weights[t, i]."""
    m, n = weights.shape
    W = np.zeros((n, n))
    for t in range(m):
        for i in range(n):
            W[i, (i + int(shifts[t])) % n] += weights[t, i]
    return W


def pushsum_naive(X0, W_of_k, steps, lr=0.0, grad=None):
    """Push-sum (SGP), one node at a time: each node j pushes W[i, j] (x_j - lr g_j(z_j)) and W[i, j] w_j to i.

    grad(j, z) -> gradient of node j at its de-biased model; None means plain averaging.
    """
    n = len(X0)
    x = [np.array(r, dtype=float) for r in X0]
    w = [1.0] * n
    for k in range(steps):
        W = W_of_k(k)
        send = [x[j] - (lr * grad(j, x[j] / w[j]) if grad is not None else 0.0) for j in range(n)]
        new_x = [np.zeros_like(x[0]) for _ in range(n)]
        new_w = [0.0] * n
        for j in range(n):  # node j pushes its shares to every out-neighbour i
            for i in range(n):
                if W[i, j] != 0.0:
                    new_x[i] = new_x[i] + W[i, j] * send[j]
                    new_w[i] += W[i, j] * w[j]
        x, w = new_x, new_w
    return np.array(x), np.array(w)


def gradient_tracking_naive(problem_grad, x0, W, steps, lr, n):
    """ATC gradient tracking, one node at a time.

    y_i <- sum_j W_ij (y_j + g_j - g_j^prev), then x_i <- sum_j W_ij (x_j - lr y_j); y and g_prev start at 0.
    """
    x = [np.array(x0, dtype=float) for _ in range(n)]
    y = [np.zeros_like(x[0]) for _ in range(n)]
    g_prev = [np.zeros_like(x[0]) for _ in range(n)]
    for _ in range(steps):
        g = [problem_grad(i, x[i]) for i in range(n)]
        y = [sum(W[i, j] * (y[j] + g[j] - g_prev[j]) for j in range(n)) for i in range(n)]
        x = [sum(W[i, j] * (x[j] - lr * y[j]) for j in range(n)) for i in range(n)]
        g_prev = g
    return np.array(x)


def exact_diffusion_naive(problem_grad, x0, W, steps, lr, n):
    """Exact diffusion, one node at a time, with Wbar = (I + W)/2 and psi^0 = x^0."""
    x = [np.array(x0, dtype=float) for _ in range(n)]
    psi_old = [xi.copy() for xi in x]
    Wbar = 0.5 * (np.eye(n) + W)
    for _ in range(steps):
        psi = [x[i] - lr * problem_grad(i, x[i]) for i in range(n)]
        phi = [psi[i] + x[i] - psi_old[i] for i in range(n)]
        x = [sum(Wbar[i, j] * phi[j] for j in range(n)) for i in range(n)]
        psi_old = psi
    return np.array(x)


def top_k_naive(v, k):
    """Keep the k largest magnitudes of one vector (ties to the lower index), zero the rest."""
    order = sorted(range(len(v)), key=lambda c: (-abs(v[c]), c))
    out = np.zeros_like(v)
    for c in order[:k]:
        out[c] = v[c]
    return out


def choco_naive(problem_grad, X0, W, steps, lr, gamma, compress):
    """CHOCO-SGD (Koloskova et al. 2019, Algorithm 2), one node at a time, every neighbour's copy kept apart.

    Node i holds x_i, its own public copy and, for every neighbour j, its copy of xhat_j (all updated by
    the q_j that j broadcast). compress(j, k, v) -> Q(v) for node j at step k. problem_grad None: gossip.
    """
    n = len(X0)
    x = [np.array(X0[i], dtype=float) for i in range(n)]
    copies = [{j: np.zeros_like(x[0]) for j in range(n) if W[i, j] != 0.0 or i == j} for i in range(n)]
    for k in range(steps):
        half = [x[i] - (lr * problem_grad(i, x[i]) if problem_grad is not None else 0.0) for i in range(n)]
        q = [compress(j, k, half[j] - copies[j][j]) for j in range(n)]
        for i in range(n):
            for j in copies[i]:
                copies[i][j] = copies[i][j] + q[j]
        new = []
        for i in range(n):
            acc = np.zeros_like(x[0])
            for j in copies[i]:
                if j != i:
                    acc = acc + W[i, j] * (copies[i][j] - copies[i][i])
            new.append(half[i] + gamma * acc)
        x = new
    return np.array(x), np.array([copies[i][i] for i in range(n)])
