"""Wall-clock timing shared by the benchmarks (works with ``--benchmark-disable`` too)."""

import time


def best_time(fn, rounds):
    """Best wall time of ``rounds`` calls of ``fn`` and the last call's result."""
    best, out = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out
