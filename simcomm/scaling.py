"""Empirical scaling of the hot kernels: time against d and against n, with fitted log-log exponents.

Used by ``simcomm scaling`` to draw ``figures/scaling_*.png``. Timing is measurement, not a test:
nothing here asserts a time.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from simcomm.backends import entry_point, get_backend

__all__ = ["KERNELS", "ScalingKernel", "time_call", "measure", "fit_exponent", "scaling_figure"]


def time_call(fn: Callable[[], object], *, repeats: int = 5, min_time: float = 0.02) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one warm-up call, which compiles).

    Calls shorter than ``min_time`` are batched so the timer's resolution does not dominate. A call
    that launches GPU work is timed to its end (the device is synchronised inside the timed call).
    """
    fn = _synchronised(fn)
    fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    inner = max(1, int(min_time / max(one, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return float(np.median(samples))


def _synchronised(fn):
    cp = sys.modules.get("cupy")
    if cp is None:
        return fn

    def call():
        out = fn()
        cp.cuda.Device().synchronize()  # kernels launch asynchronously: wait for them
        return out

    return call


@dataclass(frozen=True)
class ScalingKernel:
    """A kernel to time: ``setup(n, d, rng) -> thunk`` (on the active backend) plus the sizes swept in n and in d."""

    name: str
    label: str
    setup: Callable
    n_fixed: int
    d_fixed: int
    n_sweep: tuple
    d_sweep: tuple


def _on(x):
    """``x`` where the active backend computes: on the device for cupy (the timed call then moves no data)."""
    from simcomm.backends import to_backend

    return to_backend(x, get_backend())


def _top_k(n, d, rng):
    from simcomm.compress import top_k

    x = _on(rng.standard_normal((n, d)).astype(np.float32))
    k = max(1, d // 100)
    return lambda: top_k(x, k)


def _qsgd(n, d, rng):
    from simcomm.compress import qsgd

    x = _on(rng.standard_normal((n, d)).astype(np.float32))
    return lambda: qsgd(x, 4, rng=rng)


def _gossip(n, d, rng):
    from simcomm.topology import exponential, mix

    topo = exponential(n)
    X = _on(rng.standard_normal((n, d)))
    return lambda: mix(topo, X, 0)


KERNELS = {
    "top_k": ScalingKernel("top_k", "top-k (k = d/100), float32", _top_k, 16, 2**16,
                           (4, 8, 16, 32, 64, 128), (2**12, 2**14, 2**16, 2**18, 2**20)),
    "qsgd": ScalingKernel("qsgd", "QSGD (s = 4), float32", _qsgd, 16, 2**16,
                          (4, 8, 16, 32, 64, 128), (2**12, 2**14, 2**16, 2**18, 2**20)),
    "gossip": ScalingKernel("gossip",
                            "gossip step, static exponential graph (log2 n neighbours: work ~ n log n), float64",
                            _gossip, 64, 2**12, (16, 32, 64, 128, 256, 512), (2**10, 2**12, 2**14, 2**16)),
}


@entry_point
def measure(names=tuple(KERNELS), *, backend: str | None = None, rng=None, scale: float = 1.0) -> pd.DataFrame:
    """Time each kernel over its n and d sweeps.

    Parameters
    ----------
    names : iterable of str
        Keys of :data:`KERNELS`.
    backend : str, optional
        The backend the kernels are timed on (default: the active one, ``numba`` unless set).
    rng : seed or Generator
        Random inputs.
    scale : float
        Multiply every size by this factor (e.g. 0.25 for a fast smoke run).

    Returns
    -------
    pandas.DataFrame
        Columns ``kernel, backend, sweep ("n" or "d"), n, d, seconds``.
    """
    rng = np.random.default_rng(rng)
    where = get_backend().NAME
    rows = []
    for name in names:
        k = KERNELS[name]
        for sweep, sizes in (("d", k.d_sweep), ("n", k.n_sweep)):
            for size in sizes:
                n, d = ((k.n_fixed, max(8, int(size * scale))) if sweep == "d"
                        else (max(2, int(size * scale)), k.d_fixed))
                if sweep == "n" and name == "gossip":
                    n = max(4, int(size * scale))
                secs = time_call(k.setup(n, d, rng))
                rows.append(dict(kernel=name, backend=where, sweep=sweep, n=n, d=d, seconds=secs))
    return pd.DataFrame(rows)


def fit_exponent(sizes, seconds) -> float:
    """Least-squares slope of log(seconds) against log(size)."""
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float)), 1)[0])


def scaling_figure(table: pd.DataFrame, kernel: str):
    """Log-log time against d and against n for one kernel, with the fitted exponents in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    k = KERNELS[kernel]
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    for ax, sweep, fixed in ((axes[0], "d", f"n = {k.n_fixed}"), (axes[1], "n", f"d = {k.d_fixed}")):
        t = table[(table.kernel == kernel) & (table.sweep == sweep)].sort_values(sweep)
        x, y = t[sweep].to_numpy(float), t["seconds"].to_numpy(float)
        slope = fit_exponent(x, y)
        ax.loglog(x, y * 1e3, "o-", color="#0969da", label=f"measured; fitted exponent {slope:.2f}")
        ref = y[0] * 1e3 * (x / x[0])
        ax.loglog(x, ref, ":", color="#8c959f", label="linear reference (exponent 1)")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels collide on short axes
        ax.set_xlabel(f"${sweep}$ ({fixed})")
        ax.set_ylabel("time per call [ms]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    backend = table.backend.iloc[0] if "backend" in table else "numba"
    # two lines: the kernel labels are long, and one line ran off both edges of the figure
    fig.suptitle(f"Scaling of {k.label}\ntime per call against $d$ and against $n$ ({backend} backend)", fontsize=10)
    return fig
