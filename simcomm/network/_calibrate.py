r"""Calibrate the alpha-beta model from MPI micro-benchmarks (``simcomm net calibrate``).

Two fits, both non-negative least squares on the best-of-``reps`` times (the minimum removes the
one-sided noise of a shared machine):

* ping-pong between ranks 0 and 1: :math:`t(b) = \alpha + \beta b` per message (the half round trip);
* ``Allreduce`` on all ``n`` ranks, fitted to the ring model :math:`t(b) = 2(n-1)(\alpha + \beta b/n)`
  (reported as ``allreduce_alpha``/``allreduce_beta``: MPI may pick another algorithm, so these are
  the effective constants of the collective a spec would use).

The written TOML has a ``[network]`` table (``alpha``, ``beta`` from the ping-pong; what
:meth:`simcomm.network.Network.from_toml` and a spec's ``[network]`` read) and a ``[calibration]``
table with the raw measurements.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from simcomm._errors import UserError

__all__ = ["find_mpiexec", "fit_alpha_beta", "calibrate", "calibration_toml"]

DEFAULT_SIZES = (8, 1024, 16384, 131072, 1048576, 4194304)


def find_mpiexec(path: str | None = None) -> str:
    """The mpiexec to use: ``path``, else the one next to this Python, else the one on PATH."""
    if path is not None:
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise UserError(f"mpiexec '{path}' is not an executable file; pass the path of mpiexec "
                            "(pip install 'simcomm[mpi]' ships one)")
        return str(path)
    exe = Path(sys.executable).parent / "mpiexec"
    found = str(exe) if exe.exists() else shutil.which("mpiexec")
    if not found:
        raise UserError("mpiexec not found; install the mpi extra (pip install 'simcomm[mpi]') or pass --mpiexec PATH")
    return found


def fit_alpha_beta(sizes, times, *, scale: float = 1.0, per_byte: float = 1.0) -> tuple[float, float]:
    r"""Non-negative least squares fit of :math:`t = \text{scale}(\alpha + \beta\,\text{per\_byte}\,b)`.

    Relative residuals (each equation divided by its time), so small and large messages weigh alike.
    """
    from scipy.optimize import nnls

    b = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if b.size < 2 or not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise UserError("calibration: need at least two message sizes with positive finite times")
    A = np.column_stack([np.full_like(b, scale), scale * per_byte * b]) / t[:, None]
    (alpha, beta), _ = nnls(A, np.ones_like(t))
    return float(alpha), float(beta)


def calibrate(*, np_: int = 2, sizes=DEFAULT_SIZES, reps: int = 10, mpiexec: str | None = None,
              timeout: float = 300.0) -> dict:
    """Run the micro-benchmarks on ``np_`` local ranks (loopback) and return fitted constants and raw times."""
    if isinstance(np_, bool) or not isinstance(np_, int) or np_ < 2:
        raise UserError(f"--np {np_!r} is not allowed; calibration needs at least 2 ranks")
    if reps < 1:
        raise UserError(f"--reps {reps} is not allowed; use reps >= 1")
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or min(sizes) < 1:
        raise UserError("--sizes needs at least two message sizes in bytes, each >= 1")
    exe = find_mpiexec(mpiexec)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise UserError("mpi4py is not installed; install the mpi extra (pip install 'simcomm[mpi]')") from None
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, OMPI_MCA_btl_tcp_if_include="lo",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        cmd = [exe, "--allow-run-as-root", "--oversubscribe", "-n", str(np_), sys.executable, "-m",
               "simcomm.network._mpibench", "--sizes", ",".join(map(str, sizes)), "--reps", str(reps),
               "--out", str(out)]
        try:
            res = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise UserError(f"the MPI benchmark did not finish in {timeout:g} s; use fewer --sizes or --reps") from None
        if res.returncode != 0 or not out.exists():
            last = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(f"the MPI benchmark failed (exit {res.returncode}): {last}")
        raw = json.loads(out.read_text())
    n = raw["n"]
    alpha, beta = fit_alpha_beta(raw["sizes"], raw["pingpong"])
    a_ar, b_ar = fit_alpha_beta(raw["sizes"], raw["allreduce"], scale=2 * (n - 1), per_byte=1.0 / n)
    for name, v in (("alpha", alpha), ("beta", beta)):
        if not math.isfinite(v) or v < 0:
            raise UserError(f"calibration gave {name} = {v!r}; rerun with more --reps")
    return dict(alpha=alpha, beta=beta, allreduce_alpha=a_ar, allreduce_beta=b_ar, **raw)


def calibration_toml(result: dict) -> str:
    """TOML text: ``[network]`` (alpha, beta) and ``[calibration]`` (the measurements)."""
    def arr(v):
        return "[" + ", ".join(repr(float(x)) if isinstance(x, float) else str(x) for x in v) + "]"

    return (
        "# written by 'simcomm net calibrate': alpha [s/message] and beta [s/byte] from an MPI ping-pong\n"
        "[network]\n"
        f"alpha = {result['alpha']!r}\n"
        f"beta = {result['beta']!r}\n\n"
        "[calibration]\n"
        f"n = {result['n']}\n"
        f"sizes = {arr(result['sizes'])}\n"
        f"pingpong = {arr(result['pingpong'])}\n"
        f"allreduce = {arr(result['allreduce'])}\n"
        f"allreduce_alpha = {result['allreduce_alpha']!r}\n"
        f"allreduce_beta = {result['allreduce_beta']!r}\n"
    )
