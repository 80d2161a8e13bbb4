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
