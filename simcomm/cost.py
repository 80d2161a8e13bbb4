"""What a run will cost, before it starts: cells, time and peak memory per cell; refuse what cannot finish.

The count of cells is the product of the axis lengths (no cell is built). Time comes from a model of
one replicate: for the shipped experiments, a log-linear fit to measured CPU seconds
(:func:`fit_time_model`; ``cost_model.json``, written by ``benchmarks/calibrate_cost.py`` from the
measurements it records in ``benchmarks/cost_calibration.json``); for another experiment, its
declared cost model (``@experiment(..., cost=...)``, seconds and bytes of one replicate); without
either, a large run times one replicate of its first cell. Memory comes from the declared cost model
(the runner measures the others' on their largest cell before the rest runs). A run above the limits
(``--max-cells``, ``--max-hours``) is refused with one line that says how to narrow it, and a cell
whose modelled memory exceeds what this machine has free is refused before it starts.
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from simcomm._errors import UserError
from simcomm.experiments import get_experiment
from simcomm.spec import Spec

__all__ = ["Estimate", "estimate", "available_memory", "MAX_CELLS", "MAX_HOURS", "fmt_seconds", "fmt_bytes",
           "replicate_seconds", "cell_seconds", "model_seconds", "fit_time_model", "MODEL_PATH"]

#: default ``--max-cells``: the shipped full grids have at most a few hundred cells
MAX_CELLS = 10_000
#: default ``--max-hours``
MAX_HOURS = 24.0
#: without a cost model, time one replicate first when a run has more replicate-runs than this
PROBE_ABOVE = 5_000
#: the fitted time models of the shipped experiments (benchmarks/calibrate_cost.py writes it)
MODEL_PATH = Path(__file__).with_name("cost_model.json")
#: ridge penalty of the time fit (on centred log features): keeps an exponent at 0 where the
#: measured cells do not pin it down
RIDGE = 0.1


def _log_feature(value, shift: float = 0.0) -> float | None:
    """``log(value + shift)`` of a number (``shift`` 1 for a count that may be 0), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value + shift > 0 or math.isinf(value):
        return None
    return math.log(value + shift)


def _level(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _signature(params: dict, keys) -> str:
    return _level([params.get(k) for k in keys])


def _ridge(X, y, penalty, prior, w):
    """Least squares weighted by ``w``, pulled toward ``prior`` by ``penalty`` (a diagonal matrix)."""
    import numpy as np

    Xw = X * w[:, None]
    return np.linalg.solve(Xw.T @ X + penalty, Xw.T @ y + penalty @ prior)


def fit_time_model(records: list[dict]) -> dict:
    r"""Fit one log-linear time model per experiment, and per setting of its non-numeric parameters.

    For experiment :math:`e`, :math:`\log t = c + \sum_j b_j (\log x_j - m_j) + \sum_k a_{k, v_k}`
    over its numeric parameters :math:`x_j` (positive in every record, or counts from 0 taken as
    :math:`1 + x_j`, and varying: a power law in each) and its other varying parameters :math:`v_k`
    (one coefficient per value, the first value 0),
    by ridge least squares (:data:`RIDGE`, toward 0; the intercept free), each record weighted by
    :math:`\sqrt{\max(1, t / \mathrm{median}\, t)}`. Then each setting of the
    non-numeric parameters (a group: a compressor, a graph, a method) gets its own intercept and
    exponents, fitted to its own records by ridge least squares toward the pooled model's: a group with
    one record moves only its intercept, one with several cells of different sizes its exponents too
    (the cost of an SDP grows with ``n`` where a closed form does not).

    Parameters
    ----------
    records : list of dict
        ``{"experiment", "params", "cpu_s"}``: CPU seconds of one replicate of that cell.

    Returns
    -------
    dict
        ``{"experiments": {name: {"intercept", "log": {param: [b, m, shift]}, "levels": {param: {value: a}},
        "groups": {signature: [intercept, {param: b}]}, "by": [param, ...], "n", "rms_log_error"}}}``,
        the table :func:`replicate_seconds` reads.
    """
    import numpy as np

    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(r["experiment"], []).append(r)
    out = {}
    for name, recs in sorted(by.items()):
        keys = sorted({k for r in recs for k in r["params"]})
        logs, cats = {}, {}
        shifts = {}
        for k in keys:
            values = [r["params"].get(k) for r in recs]
            # a count that is sometimes 0 (a delay, a burn-in) is a power law in 1 + the count
            shifts[k] = 1.0 if 0 in values and all(_log_feature(v, 1.0) is not None for v in values) else 0.0
            feats = [_log_feature(v, shifts[k]) for v in values]
            if all(f is not None for f in feats):
                if len(set(feats)) > 1:
                    logs[k] = float(np.mean(feats))
            else:
                levels = sorted({_level(v) for v in values})
                if len(levels) > 1:
                    cats[k] = levels[1:]
        cols = [(k, None) for k in logs] + [(k, lv) for k in cats for lv in cats[k]]
        X = np.ones((len(recs), 1 + len(cols)))
        for i, r in enumerate(recs):
            for j, (k, lv) in enumerate(cols):
                v = r["params"].get(k)
                X[i, 1 + j] = (_log_feature(v, shifts[k]) - logs[k]) if lv is None else float(_level(v) == lv)
        t = np.maximum([r["cpu_s"] for r in recs], 1e-4)
        y = np.log(t)
        # a run's time is a sum dominated by its costly cells: they weigh more (the square root of their
        # time, relative to the median cell's), so the model is closest where it matters
        w = np.sqrt(np.maximum(t / np.median(t), 1.0))
        penalty = RIDGE * np.eye(X.shape[1])
        penalty[0, 0] = 0.0
        beta = _ridge(X, y, penalty, np.zeros(X.shape[1]), w)
        model = {"intercept": float(beta[0]), "log": {}, "levels": {}, "groups": {}, "by": sorted(cats), "n": len(recs)}
        for (k, lv), b in zip(cols, beta[1:]):
            if lv is None:
                model["log"][k] = [float(b), logs[k], shifts[k]]
            else:
                model["levels"].setdefault(k, {})[lv] = float(b)
        nl = 1 + len(logs)
        fitted = X @ beta
        for sig in sorted({_signature(r["params"], model["by"]) for r in recs}) if cats else ():
            rows = [i for i, r in enumerate(recs) if _signature(r["params"], model["by"]) == sig]
            prior = np.concatenate([[fitted[rows[0]] - X[rows[0], 1:nl] @ beta[1:nl]], beta[1:nl]])
            gpen = RIDGE * np.eye(nl)
            gpen[0, 0] = 1e-9  # the group's own intercept, free
            g = _ridge(X[rows, :nl], y[rows], gpen, prior, w[rows])
            fitted[rows] = X[rows, :nl] @ g
            model["groups"][sig] = [float(g[0]), {k: float(b) for k, b in zip(logs, g[1:])}]
        model["rms_log_error"] = float(np.sqrt(np.mean((fitted - y) ** 2)))  # unweighted
        out[name] = model
    return {"form": "log t = intercept + sum b (log x - m) [+ sum levels]; per group of the non-numeric "
                    "parameters its own intercept and b", "experiments": out}


@functools.lru_cache(maxsize=1)
def _time_models() -> dict:
    try:
        return json.loads(MODEL_PATH.read_text())
    except (OSError, ValueError):
        return {}


def model_seconds(model: dict, params: dict) -> float:
    """Seconds of one replicate of ``params`` under one experiment's fitted model (:func:`fit_time_model`)."""
    group = model["groups"].get(_signature(params, model["by"])) if model["by"] else None
    z = model["intercept"] if group is None else group[0]
    for k, (b, m, shift) in model["log"].items():
        f = _log_feature(params.get(k), shift)
        z += 0.0 if f is None else (b if group is None else group[1][k]) * (f - m)
    if group is None:  # a setting not measured: the pooled model, additive in each parameter
        for k, levels in model["levels"].items():
            z += levels.get(_level(params.get(k)), 0.0)
    return math.exp(z)


def replicate_seconds(experiment: str, params: dict) -> float | None:
    """Modelled seconds of one replicate of a cell: the fitted model, else the declared cost, else None.

    The fitted model (:func:`fit_time_model`, from the measurements of benchmarks/calibrate_cost.py)
    exists for the shipped experiments; an experiment registered elsewhere has its own ``cost``, if any.
    """
    model = _time_models().get("experiments", {}).get(experiment)
    if model is not None:
        return model_seconds(model, params)
    exp = get_experiment(experiment)
    return float(exp.cost(params)[0]) if exp.cost is not None else None


def cell_seconds(spec: Spec, params: dict, replicates: int | None = None) -> float | None:
    """Modelled seconds of one task of a run: ``replicates`` (default the spec's) of a cell, plus dispatch."""
    one = replicate_seconds(spec.experiment, params)
    if one is None:
        return None
    reps = spec.replicates - spec.first_replicate if replicates is None else replicates
    return reps * one + _time_models().get("cell_overhead_s", 0.0)


def fmt_seconds(s: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``, ``4.0 days``, ``3e+04 years``."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 365 * 86400:
        return f"{s / 86400:.1f} days"
    return f"{s / (365 * 86400):.2g} years"


def fmt_bytes(b: float) -> str:
    """``512 B``, ``1.5 GiB``, ``1.4 PiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if b < 1024 or unit == "PiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} EiB"  # pragma: no cover


def available_memory() -> int | None:
    """Bytes of memory available to a new process on this machine (MemAvailable), or None."""
    from simcomm import _proc

    return _proc.available_memory()


@dataclass
class Estimate:
    """The plan of a run: cells (and how many are cached), replicate-runs, time and memory."""

    cells: int
    todo: int
    runs: int
    seconds: float | None  # total compute seconds (one process); None when unknown
    peak_bytes: float | None  # largest modelled memory of one replicate
    workers: int
    source: str  # "cost model", "one timed replicate", "cost model + one timed replicate" or ""
    partial: bool = False  # some specs have no estimate: seconds is a lower bound
    bad_cache: int = 0  # cache entries that failed their check (counted in todo: they are recomputed)
    serial_seconds: float = 0.0  # work outside the cells: start-up, then judging and drawing each claim
    control_cells: int = 0  # of ``cells``, those of negative controls that re-run their experiment
    adaptive: bool = False  # some specs may add replicates where a cell is undecided (not counted)
    longest: float = 0.0  # modelled seconds of the costliest cell: no run ends before it does

    @property
    def wall(self) -> float | None:
        """Modelled seconds from start to end: the cells shared among the workers, then the serial work.

        The shared part is no less than the costliest cell alone.
        """
        if self.seconds is None:
            return None
        return max(self.seconds / max(1, self.workers), self.longest) + self.serial_seconds

    def line(self) -> str:
        """One line for the terminal, printed before the run starts."""
        notes = [f"{self.control_cells} of negative controls"] if self.control_cells else []
        notes += [f"{self.cells - self.todo} cached"] if self.todo < self.cells else []
        if self.bad_cache:
            notes.append(f"{self.bad_cache} bad cache {'entry' if self.bad_cache == 1 else 'entries'} to recompute")
        cached = f" ({', '.join(notes)})" if notes else ""
        head = f"plan: {self.cells} cells{cached}, {self.runs} replicate-runs to compute"
        if self.todo == 0:
            return f"plan: all {self.cells} cells are cached; nothing to compute"
        if self.seconds is None:
            return f"{head}; time per cell unknown (no cost model): the ETA follows the first cells"
        wall = self.wall
        if self.partial and wall < 60:
            return f"{head}; time unknown for the specs without a cost model: the ETA follows the first cells"
        mem = f", peak ~{fmt_bytes(self.peak_bytes)} per cell" if self.peak_bytes else ""
        at_least = "at least " if self.partial else ""
        more = "; more where adaptive replicates are added" if self.adaptive else ""
        return (f"{head}; estimated {at_least}~{fmt_seconds(wall)} on {self.workers} worker(s){mem} "
                f"({self.source}){more}")


def _narrow_hint(specs: list[Spec]) -> str:
    axis, spec = max(((a, s) for s in specs for a in s.grid), key=lambda t: len(t[1].grid[t[0]]),
                     default=(None, None))
    if axis is None:
        return "lower replicates with --set replicates=N"
    values = spec.grid[axis]
    return (f"narrow the grid, e.g. fewer values of '{axis}' ({len(values)} now) with --set \"{axis}=[...]\", "
            f"or use --quick")


def _params_text(params: dict, limit: int = 200) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return text if len(text) <= limit else text[:limit] + "..."


def estimate(specs: list[Spec], *, backend: str = "numba", jobs: int = 1, cache_dir=None,
             max_cells: int = MAX_CELLS, max_hours: float = MAX_HOURS, yes: bool = False,
             check_memory: bool = True, probe: bool = True, controls: bool = False,
             judged: bool = False) -> Estimate:
    """Count, estimate and vet a run before it starts.

    Parameters
    ----------
    specs : list of Spec
    backend, jobs, cache_dir
        As for :func:`simcomm.runner.run_many` (cached cells cost nothing).
    max_cells, max_hours : int, float
        Limits; a run above either is refused unless ``yes``.
    yes : bool
        Proceed above the limits (a cell that cannot fit in memory is refused regardless).
    check_memory : bool
        Refuse a cell whose modelled peak memory exceeds the memory available here (off for a remote
        Dask cluster, whose workers' memory is not known here).
    probe : bool
        Without a cost model, time one replicate of the first cell of a large run.
    controls : bool
        Count the negative controls that re-run their claim's experiment (``simcomm check --controls``).
    judged : bool
        Count the main process's work after the cells: judging and drawing each claim (``simcomm check``).

    Notes
    -----
    Time is modelled per replicate (:func:`replicate_seconds`: the shipped experiments' fitted models,
    calibrated on measured CPU seconds by benchmarks/calibrate_cost.py; else an experiment's declared
    ``cost``), plus a dispatch overhead per cell; the cells are shared among the workers. Adaptive
    replicates beyond a spec's first batch are not counted: they depend on the results.

    Raises
    ------
    UserError
        One line: the run is too large (and how to narrow it), or a cell cannot fit in memory.
    """
    from simcomm.runner import cache_problem, run_cell

    claims = [s.claim for s in specs if s.claim is not None]
    judgements = len(claims) + (sum(len(c.controls) for c in claims) if controls else 0)
    n_controls = 0
    if controls:
        import dataclasses

        from simcomm.spec import with_control

        reruns = [dataclasses.replace(with_control(s, c), seed=s.seed) for s in specs if s.claim is not None
                  for c in s.claim.controls if c.set]
        n_controls = sum(s.n_cells for s in reruns)
        specs = list(specs) + reruns
    cells = sum(s.n_cells for s in specs)
    if cells > max_cells and not yes:
        raise UserError(f"{cells:,} cells exceed --max-cells {max_cells:,}: {_narrow_hint(specs)}; "
                        "or pass --yes to run them all")
    avail = available_memory() if check_memory else None
    todo = runs = 0
    seconds, peak, sources, longest = 0.0, 0.0, set(), 0.0
    unknown = False
    bad = 0
    for spec in specs:
        exp = get_experiment(spec.experiment)
        pending = []
        for p in spec.cells():
            # A cached cell counts only when its entry passes its checksum: a truncated, edited or
            # misplaced entry is recomputed, so the plan counts it as to compute.
            ok, problem = cache_problem(spec, p, backend, cache_dir) if cache_dir is not None else (False, None)
            bad += problem is not None
            if not ok:
                pending.append(p)
        todo += len(pending)
        runs += len(pending) * spec.replicates
        if not pending:
            continue
        modelled = [cell_seconds(spec, params) for params in pending]
        if modelled[0] is not None:
            sources.add("cost model")
            seconds += sum(modelled)
            longest = max(longest, max(modelled))
        if exp.cost is not None:
            worst = max(((float(exp.cost(params)[1]), params) for params in pending), key=lambda t: t[0])
            b, params = worst
            peak = max(peak, b)
            if avail is not None and b > avail:
                raise UserError(
                    f"{spec.path}: the cell {_params_text(params)} needs ~{fmt_bytes(b)} of memory "
                    f"(experiment '{spec.experiment}' cost model), more than the {fmt_bytes(avail)} available; "
                    f"use smaller values")
        if modelled[0] is not None:
            continue
        if probe and len(pending) * spec.replicates > PROBE_ABOVE:
            sources.add("one timed replicate")
            module = exp.func.__module__
            t0 = time.perf_counter()
            try:
                run_cell(spec.experiment, pending[0], spec.seed, 1, backend, module)
            except MemoryError as exc:
                raise UserError(f"{spec.path}: the cell {_params_text(pending[0])} does not fit in memory "
                                f"({exc}); use smaller values") from None
            seconds += (time.perf_counter() - t0) * len(pending) * spec.replicates
        else:
            unknown = True
    workers = max(1, min(jobs, todo))
    models = _time_models()
    # imports and the workers' start (measured with the rest of a run's fixed cost), then each judgement
    serial = models.get("startup_s", 0.0) + models.get("judgement_s", 0.0) * judgements if judged and todo else 0.0
    est = Estimate(cells, todo, runs, seconds if sources else None, peak or None, workers,
                   " + ".join(sorted(sources)), partial=unknown and bool(sources), bad_cache=bad,
                   serial_seconds=serial, control_cells=n_controls, longest=longest,
                   adaptive=any(s.max_replicates and s.max_replicates > s.replicates for s in specs))
    # With some specs unmodelled the known part is a lower bound, so refusing on it is still right.
    if est.seconds is not None and not yes and est.wall > max_hours * 3600:
        reps = max(s.replicates for s in specs)
        raise UserError(f"the run would take ~{fmt_seconds(est.wall)} ({est.source}), over "
                        f"--max-hours {max_hours:g}: {_narrow_hint(specs)}, or lower replicates ({reps} now) with "
                        f"--set replicates=N; or pass --yes")
    return est
