"""Speed smoke: each hot kernel's ratio next to its target (issue 40), in under a minute.

Run it before a change to a kernel lands::

    python benchmarks/speed_smoke.py            # the benchmark sizes (d = 10^7 / (64, 10^5) / 256 x 10^5)
    python benchmarks/speed_smoke.py --small    # tiny sizes: checks that it runs, the ratios mean nothing

Each row times the kernel and its baseline interleaved in the same process (baseline, kernel,
baseline, kernel, ...) and reports the ratio of their medians, so a load change during the run hits
both sides. Baselines are the ones ``tests/benchmarks`` uses: ``numpy.argpartition`` on ``|x|`` for
the selections (ratio = baseline / kernel, higher is better) and the memory-bandwidth floor, a copy
of the bytes the kernel must move measured in the same run (ratio = kernel / floor, lower is better).
The load average is printed with the numbers: on a shared machine the ratios are noisy. Nothing here
asserts a time; it prints, and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def _interleaved(base, fast, rounds):
    """Medians of ``rounds`` alternating timings of ``base`` and ``fast`` (seconds)."""
    tb, tf = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        base()
        tb.append(time.perf_counter() - t)
        t = time.perf_counter()
        fast()
        tf.append(time.perf_counter() - t)
    return float(np.median(tb)), float(np.median(tf))


def _copy_floor(a, times=1):
    """A callable that moves ``times`` copies of ``a`` (read + write): the bandwidth floor of a pass."""
    dst = np.empty_like(a)

    def run():
        for _ in range(times):
            np.copyto(dst, a)

    return run


def rows(small: bool, rounds: int):
    """Yield ``(name, value, target, detail)`` for each kernel."""
    from simcomm.backends import get_backend
    from simcomm.compress import FP16, MinMaxUint8, qsgd, ternary, top_k, top_k_indices
    from simcomm.topology import one_peer_exponential

    rng = np.random.default_rng(12345)
    d_top = 10**5 if small else 10**7
    batch = (4, 10**3) if small else (64, 10**5)

    x = rng.standard_normal(d_top, dtype=np.float32)
    k = d_top // 100
    dense = np.empty_like(x)

    def argpart():
        return np.argpartition(np.abs(x), x.size - k)[-k:]

    top_k_indices(x, k), top_k(x, k)  # compile outside the timings
    tb, tf = _interleaved(argpart, lambda: top_k_indices(x, k), rounds)
    yield "top-k indices vs argpartition", tb / tf, ">= 7x", f"d = {d_top}, k = {k}: {tf * 1e3:.1f} ms"
    tb, tf = _interleaved(argpart, lambda: top_k(x, k), rounds)
    yield "dense top_k vs argpartition", tb / tf, ">= 5x", f"allocating: {tf * 1e3:.1f} ms"
    try:
        top_k(x, k, out=dense)
    except TypeError:  # a version of top_k without out=
        yield "dense top_k(out=) vs argpartition", float("nan"), ">= 5x", "no out= here"
    else:
        tb, tf = _interleaved(argpart, lambda: top_k(x, k, out=dense), rounds)
        yield "dense top_k(out=) vs argpartition", tb / tf, ">= 5x", f"into a reused buffer: {tf * 1e3:.1f} ms"

    for shape in ((d_top,), batch):
        xq = rng.standard_normal(shape, dtype=np.float32)
        buf = np.empty_like(xq)
        qsgd(xq, 4, rng=0, out=buf), ternary(xq, rng=0, out=buf)
        tb, tf = _interleaved(_copy_floor(xq), lambda: qsgd(xq, 4, rng=1, out=buf), rounds)
        yield f"QSGD over floor {shape}", tf / tb, "<= 2.5", f"{tf * 1e3:.1f} ms (out=)"
        tb, tf = _interleaved(_copy_floor(xq), lambda: ternary(xq, rng=1, out=buf), rounds)
        yield f"ternary over floor {shape}", tf / tb, "<= 2.5", f"{tf * 1e3:.1f} ms (out=)"

    xe = rng.standard_normal(batch, dtype=np.float32)
    fp16, mm = FP16(), MinMaxUint8(batch[1] // 100)
    ebuf = np.empty_like(xe)
    fp16.apply(xe, out=ebuf), mm.apply(xe, rng=0, out=ebuf)
    tb, tf = _interleaved(_copy_floor(xe), lambda: fp16.apply(xe, out=ebuf), rounds)
    yield f"fp16 cast over floor {batch}", tf / tb, "<= 3", f"{tf * 1e3:.1f} ms (out=)"
    tb, tf = _interleaved(_copy_floor(xe), lambda: mm.apply(xe, rng=1, out=ebuf), rounds)
    yield (f"min-max uint8 over floor {batch}", tf / tb, "<= 3",
           f"{tf * 1e3:.1f} ms (out=, bucket {batch[1] // 100})")

    be = get_backend("numba")
    n, d = (16, 1000) if small else (256, 10**5)
    layer = one_peer_exponential(n).layer(0)
    shifts, weights = layer.offsets[:, 0].copy(), layer.weights.copy()
    X, M, G = (rng.standard_normal((n, d)) for _ in range(3))
    out = np.empty_like(X)

    def step():
        be.atc_shift_step(X, M, G, 0.01, 0.9, shifts, weights, out)

    step()
    # the step reads X, M, G and writes M, X': 5 arrays, i.e. 2.5 copies of X
    floor5 = _copy_floor(X, times=5)
    tb, tf = _interleaved(floor5, step, max(3, rounds // 2))
    yield f"DmSGD step (one-peer) over floor {n}x{d}", tf / (tb / 2), "<= 1.3", f"{tf * 1e3:.1f} ms"


def main(argv=None) -> int:
    """Print every row with the load average before and after; returns 0 (no timed assertion)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny sizes (checks the script runs; ratios meaningless)")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds per row (median taken)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} cpus)")
    print(f"{'kernel':48s} {'ratio':>8s}  {'target':8s} detail")
    for name, value, target, detail in rows(args.small, args.rounds):
        print(f"{name:48s} {value:8.2f}  {target:8s} {detail}", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"took {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
