r"""Calibrate the alpha-beta model from MPI micro-benchmarks (``simcomm net calibrate``).

Two fits, both non-negative least squares on the best-of-``reps`` times (the minimum removes the
one-sided noise of a shared machine):

* ping-pong between ranks 0 and 1: :math:`t(b) = \alpha + \beta b` per message (the half round trip);
* ``Allreduce`` on all ``n`` ranks, fitted to the ring model :math:`t(b) = 2(n-1)(\alpha + \beta b/n)`
  (reported as ``allreduce_alpha``/``allreduce_beta``: MPI may pick another algorithm, so these are
  the effective constants of the collective a spec would use).

:func:`dsgd_comm_prediction` and :func:`compare_dsgd_comm` put the measured per-step exchange time of
a real MPI DSGD run (``python -m simcomm.mpi dsgd``) next to the model's time for the same payloads
and topology.

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

__all__ = ["find_mpiexec", "fit_alpha_beta", "calibrate", "calibration_toml", "dsgd_comm_prediction",
           "compare_dsgd_comm"]

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


def dsgd_comm_prediction(topology, n: int, d: int, net, steps: int, *, value_bytes: int = 8) -> np.ndarray:
    r"""The network model's exchange time of each step of ``python -m simcomm.mpi dsgd``, as it runs.

    Every message is the node's ``d`` values (``value_bytes`` each: float64, no header). The MPI run
    exchanges a circulant layer offset by offset (one ``Sendrecv`` per nonzero offset ``h``: every node
    sends to ``i - h``), so its time is one :func:`phase_time` per offset, summed; a sparse layer posts
    all its messages at once (one phase, :func:`gossip_time`); ``"parallel"`` is an ``Allreduce``,
    modelled as a ring (:func:`ring_allreduce_time`).

    Parameters
    ----------
    topology : str or Topology
        As given to ``--topology`` (``"parallel"`` or a name :func:`simcomm.topology.build` knows).
    n : int
        Ranks (nodes).
    d : int
        Values per message.
    net : Network
    steps : int

    Returns
    -------
    numpy.ndarray, shape (steps,)
        Seconds per step.
    """
    import scipy.sparse as sp

    from simcomm.network._time import gossip_time, phase_time, ring_allreduce_time
    from simcomm.topology import build

    nbytes = float(value_bytes * d)
    if isinstance(topology, str) and topology == "parallel":
        return np.full(int(steps), float(ring_allreduce_time(n, nbytes, net)))
    topo = build(topology, n) if isinstance(topology, str) else topology
    layers = topo.layers if topo.time_varying else (topo,)
    src = np.arange(n)
    per_layer = []
    for k, layer in enumerate(layers):
        if layer.kind == "circulant" and len(layer.shape) == 1:
            offs = [h % n for h in layer.offsets[:, 0].tolist() if h % n]
            per_layer.append(sum(phase_time(sp.coo_array((np.full(n, nbytes), (src, (src - h) % n)), shape=(n, n)),
                                            net) for h in offs))
        else:
            per_layer.append(gossip_time(topo, nbytes, net, k))
    return np.asarray(per_layer, dtype=np.float64)[np.arange(int(steps)) % len(layers)]


def compare_dsgd_comm(result, net) -> dict:
    """Measured per-step exchange time of an MPI DSGD run against :func:`dsgd_comm_prediction`.

    Parameters
    ----------
    result : str, path or mapping
        The ``--out`` file of ``python -m simcomm.mpi dsgd`` (or its arrays): ``comm_time`` (max
        over ranks, per step), ``x`` (final iterates, ``(n, d)``) and ``topology``.
    net : Network
        E.g. ``Network.from_toml`` of a ``simcomm net calibrate`` output made on the same machine.

    Returns
    -------
    dict
        ``measured`` and ``predicted`` (per step, seconds), ``measured_median``, ``predicted_median``,
        ``ratio`` (measured / predicted, of the medians: robust to the one-sided outliers of a shared
        machine), ``n``, ``d``, ``topology``.
    """
    if isinstance(result, (str, Path)):
        try:
            with np.load(result) as z:
                result = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read the MPI DSGD result '{result}' ({exc}); pass the --out file of "
                            "'python -m simcomm.mpi dsgd'") from None
    if "comm_time" not in result:
        raise UserError("the MPI DSGD result has no 'comm_time' (written by an older simcomm); run "
                        "'python -m simcomm.mpi dsgd ... --out FILE' again")
    measured = np.asarray(result["comm_time"], dtype=np.float64)
    n, d = np.asarray(result["x"]).shape
    topology = str(result["topology"])
    predicted = dsgd_comm_prediction(topology, n, d, net, measured.size)
    mm, pm = float(np.median(measured)), float(np.median(predicted))
    return dict(measured=measured, predicted=predicted, measured_median=mm, predicted_median=pm,
                ratio=mm / pm if pm > 0 else math.inf, n=int(n), d=int(d), topology=topology)
