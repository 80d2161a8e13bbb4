"""Slow, obviously correct oracles for the URQ quantizers and the delayed / incremental optimisers.

Loops over coordinates and steps; randomness taken from the same counter stream
(:func:`simcomm.backends._numpy.quant.counter_uniforms`) or the same ``rng`` calls in the same order
as the fast code, so the comparison can be exact.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm.backends._numpy.quant import counter_uniforms


def qsgd_naive(x: np.ndarray, s: int, key: int) -> np.ndarray:
    """QSGD on each row, coordinate by coordinate."""
    rows, d = x.shape
    u = counter_uniforms(key, rows * d, x.dtype).astype(np.float64)
    out = np.zeros((rows, d))
    for r in range(rows):
        nrm = math.sqrt(sum(float(v) ** 2 for v in x[r]))
        if nrm == 0:
            continue
        for j in range(d):
            v = float(x[r, j])
            t = abs(v) * (s / nrm)
            lo = math.floor(t)
            level = lo + (1 if u[r * d + j] < t - lo else 0)
            out[r, j] = math.copysign(1.0, v) * level * (nrm / s) if v != 0 else 0.0
    return out.astype(x.dtype)


def ternary_naive(x: np.ndarray, key: int) -> np.ndarray:
    """Ternary (inf-norm scaled) on each row."""
    rows, d = x.shape
    u = counter_uniforms(key, rows * d, x.dtype).astype(np.float64)
    out = np.zeros((rows, d))
    for r in range(rows):
        m = max(abs(float(v)) for v in x[r])
        for j in range(d):
            v = float(x[r, j])
            if m > 0 and u[r * d + j] < abs(v) / m:
                out[r, j] = math.copysign(m, v)
    return out.astype(x.dtype)


def stochastic_round_naive(x: np.ndarray, delta: float, key: int) -> np.ndarray:
    """Unbiased rounding to delta * Z."""
    rows, d = x.shape
    u = counter_uniforms(key, rows * d, x.dtype).astype(np.float64)
    out = np.zeros((rows, d))
    for i in range(rows * d):
        t = float(x.flat[i]) / delta
        lo = math.floor(t)
        out.flat[i] = (lo + (1 if u[i] < t - lo else 0)) * delta
    return out.astype(x.dtype)


def bernoulli_naive(x: np.ndarray, p: float, key: int) -> np.ndarray:
    """Keep x_i / p with probability p."""
    rows, d = x.shape
    u = counter_uniforms(key, rows * d, x.dtype).astype(np.float64)
    out = np.zeros((rows, d))
    for i in range(rows * d):
        if u[i] < p:
            out.flat[i] = float(x.flat[i]) / p
    return out.astype(x.dtype)


def async_naive(problem, quantizer, lr, steps, tau, delay, rng):
    """Asynchronous compressed GD keeping the FULL history (no ring buffer); one replicate.

    Draws from ``rng`` in the same order as :func:`simcomm.optim.async_compressed_gd`: the delays
    (uniform model), then one quantizer call per step.
    """
    n = problem.n
    hist = [problem.x0.astype(np.float64).copy()]
    for k in range(steps):
        cap = min(tau, k)
        if delay == "constant":
            t = [cap] * n
        elif delay == "uniform":
            t = list(rng.integers(0, cap + 1, size=(1, n))[0])
        else:
            dist = [float(((hist[k] - hist[k - j]) ** 2).sum()) for j in range(cap + 1)]
            best = max(range(cap + 1), key=lambda j: (dist[j], j))  # ties to the larger delay
            t = [best] * n
        G = np.stack([problem.grad(hist[k - t[i]][None, :], np.array([i]))[0] for i in range(n)])
        U = quantizer.apply(G, rng=rng)
        hist.append(hist[k] - lr * np.mean(U, axis=0))
    return np.array(hist)


def iag_naive(problem, quantizer, lr, steps, order, rng):
    """Compressed IAG with an explicit table and a full recomputation of the sum every step."""
    n = problem.n
    x = problem.x0.astype(np.float64).copy()
    table = quantizer.apply(problem.grad(np.repeat(x[None], n, axis=0), np.arange(n)), rng=rng).astype(np.float64)
    hist = [x.copy()]
    for k in range(steps):
        i = k % n if order == "cyclic" else int(rng.integers(0, n, size=1)[0])
        table[i] = quantizer.apply(problem.grad(x[None], np.array([i])), rng=rng)[0]
        x = x - lr * table.sum(axis=0) / n
        hist.append(x.copy())
    return np.array(hist)
