"""Wall-clock timing shared by the benchmarks (works with ``--benchmark-disable`` too)."""

import time

import numpy as np


def best_time(fn, rounds):
    """Best wall time of ``rounds`` calls of ``fn`` and the last call's result."""
    best, out = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def best_interleaved(fns, rounds):
    """Best time of each of ``fns`` over ``rounds`` interleaved rounds (a, b, a, b, ...), and each one's last result.

    Interleaving spreads a burst of load from another process over every contender instead of one.
    """
    best, out = [float("inf")] * len(fns), [None] * len(fns)
    for _ in range(rounds):
        for j, fn in enumerate(fns):
            t = time.perf_counter()
            out[j] = fn()
            best[j] = min(best[j], time.perf_counter() - t)
    return best, out


def copy_bandwidth(a: np.ndarray) -> float:
    """Measured bytes per second of copying ``a`` (one read and one write): the memory-bandwidth floor."""
    dst = np.empty_like(a)
    best, _ = best_time(lambda: np.copyto(dst, a), 3)
    return 2 * a.nbytes / best
