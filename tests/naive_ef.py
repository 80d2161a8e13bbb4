"""Slow oracles for error-feedback SGD: one Python loop over workers, one vector at a time.

``naive_ef_sgd`` follows rtopk.md (d) literally with the library's public pieces (``minibatch_gradient``,
the residual memory written out around ``top_k`` / ``rand_k(scale=False)`` / ``rtop_k``), drawing the same
random numbers in the same order as :func:`simcomm.optim.ef_sgd` (a row-major ``(n, k)`` draw equals
``n`` consecutive ``(k,)`` draws), so the two agree up to the order of floating-point sums.
``numpy_loop_epoch`` is the user's baseline for the benchmark: the same per-worker loop with top-k by
``np.argpartition`` on plain numpy arrays.
"""

from __future__ import annotations

import numpy as np

from simcomm.compress import rand_k, rtop_k, top_k
from simcomm.models import split_workers
from simcomm.models._nn import minibatch_gradient
from simcomm.optim import ef_learning_rate


def naive_ef_sgd(model, X, y, *, n, steps, lr, batch_size, compressor, k=None, r=None, theta0, rng,
                 batch_rng, split="iid", schedule="constant"):
    """Return ``(theta, memories (n, D), comp_errors (steps, n))`` after ``steps`` updates."""
    rng = np.random.default_rng(rng)
    batch_rng = np.random.default_rng(batch_rng)
    shards = split_workers(y, n, split=split, rng=batch_rng)
    theta = np.array(theta0, dtype=np.float64)
    D = theta.size
    # error feedback written out (p = g + e, m = C(p), e' = p - m) on the public array functions
    comp = {"none": None, "top_k": lambda p: top_k(p, k), "rand_k": lambda p: rand_k(p, k, rng=rng, scale=False),
            "rtop_k": lambda p: rtop_k(p, k, r, rng=rng)}[compressor]
    residual = [np.zeros(D) for _ in range(n)]
    errs = np.zeros((steps, n))
    for t in range(steps):
        pos = batch_rng.random((n, batch_size))  # drawn up front, as the fast path does
        total = np.zeros(D)
        for i in range(n):
            idx = shards[i][(pos[i] * shards[i].size).astype(np.int64)]
            g = minibatch_gradient(model, theta, X, y, idx)
            if comp is None:
                total += g
                continue
            p = g + residual[i]
            msg = comp(p)
            residual[i] = p - msg
            pp = float(p @ p)
            errs[t, i] = float(residual[i] @ residual[i]) / pp if pp > 0 else 0.0
            total += msg
        theta = theta - ef_learning_rate(lr, t, steps, schedule) * total / n
    mem = np.zeros((n, D)) if comp is None else np.stack(residual)
    return theta, mem, errs


def numpy_loop_epoch(model, X, y, *, shards, positions, lr, k, theta0):
    """Top-k error-feedback SGD with a per-worker Python loop and ``np.argpartition``.

    ``positions`` has shape ``(steps, n, B)`` (uniforms in [0, 1)); returns the final parameters.
    """
    theta = np.array(theta0, dtype=np.float64)
    n = len(shards)
    mem = [np.zeros_like(theta) for _ in range(n)]
    for pos in positions:
        total = np.zeros_like(theta)
        for i in range(n):
            idx = shards[i][(pos[i] * shards[i].size).astype(np.int64)]
            g = minibatch_gradient(model, theta, X, y, idx)
            p = g + mem[i]
            keep = np.argpartition(np.abs(p), p.size - k)[p.size - k:]
            msg = np.zeros_like(p)
            msg[keep] = p[keep]
            mem[i] = p - msg
            total += msg
        theta = theta - lr * total / n
    return theta


# --- the error-feedback variants written out node by node from their papers' update rules -------------------
# Each takes ``grads`` (T, n, d) and a one-vector compressor ``comp(v) -> C(v)`` (deterministic, so the
# fast batched path and this loop see the same messages) and returns the directions (T, n, d) the server gets.

def naive_ef21_sgdm(grads, comp, eta):
    """EF21-SGDM: v = (1 - eta) v + eta g (v = g at t = 0), h += C(v - h); returns the h's."""
    T, n, d = grads.shape
    out = np.zeros((T, n, d))
    for i in range(n):
        v, h = None, np.zeros(d)
        for t in range(T):
            g = grads[t, i]
            v = g.copy() if v is None else (1 - eta) * v + eta * g
            h = h + comp(v - h)
            out[t, i] = h
    return out


def naive_diana(grads, comp, a):
    """DIANA: m = C(g - h), g_hat = h + m, h += a m; returns the g_hat's."""
    T, n, d = grads.shape
    out = np.zeros((T, n, d))
    for i in range(n):
        h = np.zeros(d)
        for t in range(T):
            m = comp(grads[t, i] - h)
            out[t, i] = h + m
            h = h + a * m
    return out


def naive_marina(grads, comp, coins):
    """MARINA: h = g if coins[t] (or t = 0) else h + C(g - g_prev); returns the h's."""
    T, n, d = grads.shape
    out = np.zeros((T, n, d))
    for i in range(n):
        h, prev = None, None
        for t in range(T):
            g = grads[t, i]
            h = g.copy() if (t == 0 or coins[t]) else h + comp(g - prev)
            prev = g
            out[t, i] = h
    return out


def naive_bidirectional_gd(grad_i, x0, *, n, steps, lr, up, down, server_ef):
    """Compressed GD with worker EF on the uplink and (optionally) server EF on the downlink, one node at a time.

    ``grad_i(i, x)`` is worker ``i``'s gradient; ``up`` / ``down`` deterministic one-vector compressors.
    """
    x = np.array(x0, dtype=np.float64)
    e = [np.zeros_like(x) for _ in range(n)]
    es = np.zeros_like(x)
    for _ in range(steps):
        total = np.zeros_like(x)
        for i in range(n):
            p = grad_i(i, x) + e[i]
            m = up(p)
            e[i] = p - m
            total += m
        u = total / n
        p = u + es if server_ef else u
        v = down(p)
        if server_ef:
            es = p - v
        x = x - lr * v
    return x
