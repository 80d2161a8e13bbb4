"""Measure what one replicate of each shipped experiment costs, and fit the time model of ``simcomm.cost``.

Usage::

    python benchmarks/calibrate_cost.py            # measure (minutes), then fit
    python benchmarks/calibrate_cost.py --fit-only # refit from the recorded measurements
    python benchmarks/calibrate_cost.py --only EXP [EXP ...]  # measure these experiments again, keep the rest

For every experiment used by a shipped claim (its quick and full grids, and the reruns of its
negative controls), a sample of cells is run with one replicate, one numba thread, in worker
processes: a few evenly spaced cells of each grid, cheapest first (a crude size order: the product
of the numeric parameters), until the experiment has used ``--budget`` CPU seconds. Each record is
the cell's parameters, the CPU seconds of the replicate in its worker (``time.process_time``, so a
loaded machine inflates it little) and the worker's peak resident memory above its baseline.

The measurements go to ``benchmarks/cost_calibration.json``; the fitted constants (one log-linear
model per experiment, :func:`simcomm.cost.fit_time_model`) to ``simcomm/cost_model.json``, which
:func:`simcomm.cost.estimate` reads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE / "cost_calibration.json"


def _size(params: dict) -> float:
    """Crude order of cost: the sum of log of the numeric parameters above 1."""
    return sum(math.log(float(v)) for v in params.values()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1)


def _samples(per_grid: int) -> dict[str, list[tuple[dict, dict | None]]]:
    """Experiment name -> distinct (params, network) to time, cheapest first."""
    import dataclasses

    from simcomm import checking
    from simcomm.spec import with_control

    out: dict[str, dict[str, tuple[dict, dict | None]]] = {}
    for quick in (True, False):
        specs = checking.select_specs((), quick=quick)
        specs += [dataclasses.replace(with_control(s, c), seed=s.seed) for s in specs for c in s.claim.controls
                  if c.set]
        for spec in specs:
            cells = spec.cells()
            n = len(cells)
            k = min(n, per_grid)
            picks = sorted({round(i * (n - 1) / max(1, k - 1)) for i in range(k)})
            for i in picks:
                key = json.dumps([cells[i], spec.network], sort_keys=True, default=str)
                out.setdefault(spec.experiment, {})[key] = (cells[i], spec.network)
    return {e: sorted(v.values(), key=lambda t: _size(t[0])) for e, v in out.items()}


def _time_experiment(args) -> list[dict]:
    """In a worker: warm up on the cheapest cell, then time each cell's replicate 0 until the budget is spent."""
    name, cells, budget = args
    from simcomm import _proc
    from simcomm.experiments import get_experiment
    from simcomm.runner import run_cell

    module = get_experiment(name).func.__module__
    run_cell(name, cells[0][0], 1, 1, "numba", module, 1, 0, cells[0][1])  # JIT compile / cache load
    records, spent = [], 0.0
    for params, network in cells:
        before = _proc.rss() or 0
        _proc.reset_peak()
        t0, w0 = time.process_time(), time.perf_counter()
        run_cell(name, params, 1, 1, "numba", module, 1, 0, network)
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        peak = max(0, (_proc.peak_rss() or 0) - before)
        records.append({"experiment": name, "params": params, "network": bool(network), "cpu_s": round(cpu, 5),
                        "wall_s": round(wall, 5), "peak_bytes": peak})
        spent += cpu
        if spent > budget:
            break
    return records


def _retime(args) -> list[float]:
    """In a worker: each cell twice in a row (the first also compiles what it alone uses); the CPU seconds of each."""
    name, cells = args
    from simcomm.experiments import get_experiment
    from simcomm.runner import run_cell

    module = get_experiment(name).func.__module__
    out = []
    for params, network in cells:
        times = []
        for _ in range(2):
            t0 = time.process_time()
            run_cell(name, params, 1, 1, "numba", module, 1, 0, network)
            times.append(time.process_time() - t0)
        out.append(min(times))
    return out


def retime_outliers(records: list[dict], jobs: int, factor: float = 2.5, floor: float = 0.05) -> int:
    """Time again the cells the fit misses by more than ``factor`` (a compile inside the cell, a busy moment).

    Each such cell runs twice more in a fresh worker; its record keeps the least of its three times.
    """
    from simcomm import cost

    models = cost.fit_time_model(records)["experiments"]
    off = []
    for i, r in enumerate(records):
        pred = cost.model_seconds(models[r["experiment"]], r["params"])
        if max(r["cpu_s"], pred) > floor and abs(math.log(max(r["cpu_s"], 1e-4) / pred)) > math.log(factor):
            off.append(i)
    by: dict[str, list[int]] = {}
    for i in off:
        by.setdefault(records[i]["experiment"], []).append(i)
    tasks = [(e, [(records[i]["params"], None) for i in idx]) for e, idx in by.items()]
    with ProcessPoolExecutor(jobs) as pool:
        for (e, idx), times in zip(by.items(), pool.map(_retime, tasks)):
            for i, t in zip(idx, times):
                print(f"{e}: {records[i]['cpu_s']:.3f} s -> {t:.3f} s", flush=True)
                records[i]["cpu_s"] = round(min(records[i]["cpu_s"], t), 5)
    return len(off)


def measure(budget: float, per_grid: int, jobs: int, only: list[str] | None = None) -> list[dict]:
    """Time ``per_grid`` cells of every shipped grid (at most ``budget`` CPU seconds an experiment).

    ``only`` names the experiments to time (default: every experiment of a shipped claim).
    """
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    samples = _samples(per_grid)
    if only:
        unknown = sorted(set(only) - set(samples))
        if unknown:
            raise SystemExit(f"no shipped claim uses the experiment(s) {unknown}")
        samples = {e: c for e, c in samples.items() if e in only}
    tasks = sorted(((e, c, budget) for e, c in samples.items()), key=lambda t: -len(t[1]))
    records = []
    with ProcessPoolExecutor(jobs) as pool:
        for recs in pool.map(_time_experiment, tasks):
            records += recs
            print(f"{recs[0]['experiment']}: {len(recs)} cells, {sum(r['cpu_s'] for r in recs):.1f} s", flush=True)
    return records


def overheads(n_claims: int = 8) -> dict:
    """CPU seconds of the main process per cell dispatched to 2 workers, and per claim judged and drawn."""
    import io
    import tempfile

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simcomm import checking
    from simcomm.plotting import bound_vs_empirical
    from simcomm.runner import make_map, run_many

    specs = sorted(checking.select_specs((), quick=True), key=lambda s: s.n_cells * s.replicates)[:n_claims]
    mapper, _ = make_map(2)
    list(mapper(abs, [1, 2]))  # the workers start before the clock does
    cells = sum(s.n_cells for s in specs)
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.process_time()
        results = run_many(specs, map=mapper, cache_dir=cache, threads_per_cell=1)
        per_cell = (time.process_time() - t0) / cells
    t0 = time.process_time()
    for spec, res in zip(specs, results):
        trial = checking._claim_trial(spec, res)
        fig = bound_vs_empirical(trial.judgement, spec.plot, checking._context(spec, res))
        fig.savefig(io.BytesIO(), format="png", dpi=110)
        plt.close(fig)
    per_claim = (time.process_time() - t0) / len(specs)
    return {"cell_overhead_s": round(per_cell, 5), "judgement_s": round(per_claim, 4), "startup_s": startup()}


def startup(claim: str = "compress.sign_l2_gaussian") -> float:
    """CPU seconds of ``simcomm check`` beyond its cells and judging: imports, 2 workers starting, the report.

    Measured on a claim whose quick grid costs next to nothing (the modelled cells and judging are
    subtracted), as the CPU seconds of the command and its workers (``RUSAGE_CHILDREN``), best of two.
    """
    import resource
    import subprocess
    import sys
    import tempfile

    from simcomm import checking, cost

    cost._time_models.cache_clear()
    est = cost.estimate(checking.select_specs((claim,), quick=True), jobs=2)
    modelled = est.seconds + cost._time_models().get("judgement_s", 0.0)
    best = math.inf
    for _ in range(2):
        with tempfile.TemporaryDirectory() as out:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "simcomm", "check", claim, "--quick", "--jobs", "2", "--out", out],
                           check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return round(max(0.0, best - modelled), 3)


def main() -> None:
    """Measure (or, with --fit-only, refit from the recorded data) and write the fitted time models."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit-only", action="store_true")
    ap.add_argument("--budget", type=float, default=30.0, help="CPU seconds per experiment")
    ap.add_argument("--per-grid", type=int, default=4, help="cells sampled per grid")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--overheads-only", action="store_true", help="measure the overheads again, keep the cells")
    ap.add_argument("--retime", action="store_true", help="time again the cells the fit misses by over 2.5x")
    ap.add_argument("--only", nargs="+", metavar="EXP", help="time only these experiments again")
    a = ap.parse_args()
    from simcomm import cost

    if a.only:
        raw = json.loads(RAW.read_text())
        kept = [r for r in raw["records"] if r["experiment"] not in a.only]
        raw["records"] = kept + measure(a.budget, a.per_grid, a.jobs, a.only)
        RAW.write_text(json.dumps(raw, indent=1, default=str) + "\n")
    elif not (a.fit_only or a.overheads_only or a.retime):
        t0 = time.perf_counter()
        records = measure(a.budget, a.per_grid, a.jobs)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        RAW.write_text(json.dumps({
            "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                        "load_at_end": load, "python": platform.python_version()},
            "seconds": "CPU seconds of one replicate (replicate 0, seed 1, numba backend, 1 thread)",
            "took_s": round(time.perf_counter() - t0, 1), "records": records}, indent=1, default=str) + "\n")
    raw = json.loads(RAW.read_text())
    if a.retime:
        print(f"{retime_outliers(raw['records'], a.jobs)} cells timed again")
        RAW.write_text(json.dumps(raw, indent=1, default=str) + "\n")
    if not (a.fit_only or a.retime or a.only):
        raw["overheads"] = overheads()
        RAW.write_text(json.dumps(raw, indent=1, default=str) + "\n")
    table = {**cost.fit_time_model(raw["records"]), **raw["overheads"]}
    cost.MODEL_PATH.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"fitted {len(table['experiments'])} experiments -> {cost.MODEL_PATH}")


if __name__ == "__main__":
    main()
