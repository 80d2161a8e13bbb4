"""A toy experiment for the machinery tests (registered on import; importable in worker processes)."""

import math
import time

import numpy as np

from simcomm.experiments import Param, experiment
from theory import bound


@experiment("toy_mean", params={
    "n": Param("int", low=1, doc="sample size"),
    "mu": Param("float", default=1.0, doc="true mean"),
    "shape": Param("str", default="normal", choices=("normal", "exp")),
    "delay": Param("float", default=0.0, low=0.0, doc="seconds to sleep (to interrupt a sweep in tests)"),
})
def toy_mean_experiment(params, rng, backend):
    """Sample mean of n draws with mean mu; also the mean of 2n draws, for order claims."""
    n, mu = params["n"], params["mu"]
    time.sleep(params["delay"])
    draw = rng.normal(mu, 1.0, size=2 * n) if params["shape"] == "normal" else rng.exponential(mu, size=2 * n)
    return [
        dict(metric="mean", value=float(draw[:n].mean())),
        dict(metric="var_of_mean", value=float((draw[:n].mean() - mu) ** 2), method="small"),
        dict(metric="var_of_mean", value=float((draw.mean() - mu) ** 2), method="large"),
        dict(metric="constant", value=float(np.sqrt(n))),
    ]
@bound(kind="equal", provenance="N", paper="expgraph", statement="E[sample mean] = mu (toy)")
def toy_mean(mu: float = 1.0) -> float:
    """Expected sample mean: ``mu`` (equal; exact). Provenance [N]: elementary."""
    return mu


@bound(kind="equal", provenance="N", paper="expgraph", statement="sqrt(n) (toy)")
def toy_sqrt(n: int) -> float:
    """``sqrt(n)`` (equal; exact). Provenance [N]: elementary."""
    return math.sqrt(n)


@bound(kind="slope", provenance="N", paper="expgraph", statement="d log sqrt(n) / d log n = 1/2 (toy)")
def toy_sqrt_slope() -> float:
    """Log-log slope of ``sqrt(n)`` in ``n``: 1/2 (slope; exact). Provenance [N]: elementary."""
    return 0.5


@experiment("toy_kill", params={
    "n": Param("int", low=1, doc="cell label"),
    "kill_at": Param("int", default=0, low=0, doc="the cell whose worker kills itself (SIGKILL)"),
    "main_pid": Param("int", default=0, low=0, doc="the main process: never killed (only workers are)"),
})
def toy_kill(params, rng, backend):
    """Stands in for the kernel's out-of-memory killer: the worker running cell ``n == kill_at`` dies."""
    import os
    import signal

    if params["n"] == params["kill_at"] and os.getpid() != params["main_pid"]:
        time.sleep(1.0)  # the other cells finish first (and are cached)
        os.kill(os.getpid(), signal.SIGKILL)
    return [dict(metric="mean", value=float(rng.normal()))]


@experiment("toy_alloc", params={
    "n": Param("int", low=1, doc="cell label"),
    "mib": Param("int", default=1, low=0, doc="MiB the cell allocates and touches"),
    "big_at": Param("int", default=0, low=0, doc="the cell that allocates mib MiB (the others 1 MiB)"),
})
def toy_alloc(params, rng, backend):
    """Allocates (and writes to) ``mib`` MiB in cell ``big_at``: a memory hog without a cost model."""
    mib = params["mib"] if params["n"] == params["big_at"] else 1
    block = np.ones(mib * 2**17)  # 2**17 float64 = 1 MiB; np.ones touches every page
    return [dict(metric="mean", value=float(block[-1] + rng.normal()))]


@experiment("toy_needs_extra", requires=("simcomm_no_such_package",),
            params={"n": Param("int", low=1, doc="sample size")})
def toy_needs_extra(params, rng, backend):
    """Stands in for an experiment of an extra that is not installed (it is never run)."""
    raise AssertionError("an experiment whose requirement is absent must not run")
