"""Slow, obviously-correct oracles for simcomm.topology: dense matrices built entry by entry from the
definitions in papers/exponential_graph.md, and spectra from dense numpy linear algebra."""

import math

import numpy as np


def dense_rho(W):
    """||W - J||_2 by a dense SVD."""
    n = W.shape[0]
    return float(np.linalg.norm(W - np.full((n, n), 1.0 / n), 2))


def ring_matrix(n):
    """1/3 on self and both neighbours (1/2 each for n = 2, where the neighbours coincide)."""
    W = np.zeros((n, n))
    for i in range(n):
        nbrs = {(i + 1) % n, (i - 1) % n}
        for j in nbrs | {i}:
            W[i, j] = 1.0 / (len(nbrs) + 1)
    return W


def exponential_matrix(n):
    """papers B1: w_ij = 1/(tau+1) if j = i or (j - i) mod n is a power of 2 below n."""
    hops = [2**t for t in range(n) if 2**t < n]
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] = 1.0 / (len(hops) + 1)
        for h in hops:
            W[i, (i + h) % n] = 1.0 / (len(hops) + 1)
    return W


def one_peer_matrix(n, k):
    """papers B2: W^(k) = (I + S^(2^(k mod tau)))/2, node i averages with i + 2^t."""
    tau = math.ceil(math.log2(n)) if n > 1 else 0
    h = 2 ** (k % tau)
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] += 0.5
        W[i, (i + h) % n] += 0.5
    return W


def metropolis_matrix(n, edges, rule="metropolis"):
    """w_ij = 1/(1 + max(deg_i, deg_j)) (or 1/(1 + max degree)), w_ii = 1 - sum of the row."""
    adj = [set() for _ in range(n)]
    for i, j in edges:
        if i != j:
            adj[i].add(j)
            adj[j].add(i)
    dmax = max(len(a) for a in adj)
    W = np.zeros((n, n))
    for i in range(n):
        for j in adj[i]:
            W[i, j] = 1.0 / (1 + (max(len(adj[i]), len(adj[j])) if rule == "metropolis" else dmax))
        W[i, i] = 1.0 - sum(W[i, j] for j in adj[i])
    return W


def torus_edges(r, c):
    """Edges of C_r x C_c; a side of 2 has one neighbour per direction (the set removes duplicates)."""
    edges = set()
    for a in range(r):
        for b in range(c):
            i = a * c + b
            for da, db in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                j = ((a + da) % r) * c + (b + db) % c
                if j != i:
                    edges.add((min(i, j), max(i, j)))
    return sorted(edges)


def grid_edges(r, c):
    edges = []
    for a in range(r):
        for b in range(c):
            if b + 1 < c:
                edges.append((a * c + b, a * c + b + 1))
            if a + 1 < r:
                edges.append((a * c + b, (a + 1) * c + b))
    return edges


def gossip_loop(W, X):
    """x_i <- sum_j W[i, j] x_j, one node at a time."""
    out = np.zeros_like(X)
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            if W[i, j] != 0:
                out[i] += W[i, j] * X[j]
    return out
