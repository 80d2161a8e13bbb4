"""Slow, obviously correct reference implementations for the sparsifiers and mean estimation."""

import numpy as np


def naive_topk_indices(row, k):
    """The k largest |x_j| by a full sort on (-|x_j|, j): ties to the lower index; ascending output."""
    order = sorted(range(len(row)), key=lambda j: (-abs(float(row[j])), j))
    return sorted(order[:k])


def naive_floyd(u_row, d):
    """Floyd's algorithm with a Python set, on the caller's uniforms."""
    k = len(u_row)
    taken, out = set(), []
    for i in range(k):
        j = d - k + i
        t = min(int(u_row[i] * (j + 1)), j)
        if t in taken:
            t = j
        taken.add(t)
        out.append(t)
    return out


def naive_rtopk_indices(row, k, r, u_row):
    """A Floyd k-subset of the ascending top-r index list."""
    top = naive_topk_indices(row, r)
    return [top[p] for p in naive_floyd(u_row, r)]


def naive_mean_estimation_sq_errors(theta, n, kprime, replicates, rng):
    """Per-node Python loop over dense d-vectors: the random-subset scheme, one squared error per replicate.

    This is what a user would write without vectorising: for every replicate and node, draw X_i,
    find its support, send a random min(k', |S_i|)-subset and accumulate the rescaled indicators.
    """
    d = theta.size
    out = np.empty(replicates)
    for rep in range(replicates):
        acc = np.zeros(d)
        for _ in range(n):
            x = rng.random(d) < theta
            support = np.flatnonzero(x)
            if support.size == 0:
                continue
            m = min(kprime, support.size)
            sent = rng.choice(support, size=m, replace=False)
            acc[sent] += support.size / m
        out[rep] = np.sum((acc / n - theta) ** 2)
    return out
