"""What a run will cost, before it starts: cells, time and peak memory per cell; refuse what cannot finish.

The count of cells is the product of the axis lengths (no cell is built). Time and memory come from
the experiment's declared cost model (``@experiment(..., cost=...)``, seconds and bytes of one
replicate); without one, a large run times one replicate of its first cell. A run above the limits
(``--max-cells``, ``--max-hours``) is refused with one line that says how to narrow it, and a cell
whose modelled memory exceeds what this machine has free is refused before it starts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from simcomm._errors import UserError
from simcomm.experiments import get_experiment
from simcomm.spec import Spec

__all__ = ["Estimate", "estimate", "available_memory", "MAX_CELLS", "MAX_HOURS", "fmt_seconds", "fmt_bytes"]

#: default ``--max-cells``: the shipped full grids have at most a few hundred cells
MAX_CELLS = 10_000
#: default ``--max-hours``
MAX_HOURS = 24.0
#: without a cost model, time one replicate first when a run has more replicate-runs than this
PROBE_ABOVE = 5_000


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

    def line(self) -> str:
        """One line for the terminal, printed before the run starts."""
        notes = [f"{self.cells - self.todo} cached"] if self.todo < self.cells else []
        if self.bad_cache:
            notes.append(f"{self.bad_cache} bad cache {'entry' if self.bad_cache == 1 else 'entries'} to recompute")
        cached = f" ({', '.join(notes)})" if notes else ""
        head = f"plan: {self.cells} cells{cached}, {self.runs} replicate-runs to compute"
        if self.todo == 0:
            return f"plan: all {self.cells} cells are cached; nothing to compute"
        if self.seconds is None:
            return f"{head}; time per cell unknown (no cost model): the ETA follows the first cells"
        if self.partial and self.seconds / max(1, self.workers) < 60:
            return f"{head}; time unknown for the specs without a cost model: the ETA follows the first cells"
        wall = self.seconds / max(1, self.workers)
        mem = f", peak ~{fmt_bytes(self.peak_bytes)} per cell" if self.peak_bytes else ""
        at_least = "at least " if self.partial else ""
        return f"{head}; estimated {at_least}~{fmt_seconds(wall)} on {self.workers} worker(s){mem} ({self.source})"


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
             check_memory: bool = True, probe: bool = True) -> Estimate:
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

    Raises
    ------
    UserError
        One line: the run is too large (and how to narrow it), or a cell cannot fit in memory.
    """
    from simcomm.runner import cache_problem, run_cell

    cells = sum(s.n_cells for s in specs)
    if cells > max_cells and not yes:
        raise UserError(f"{cells:,} cells exceed --max-cells {max_cells:,}: {_narrow_hint(specs)}; "
                        "or pass --yes to run them all")
    avail = available_memory() if check_memory else None
    todo = runs = 0
    seconds, peak, sources = 0.0, 0.0, set()
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
        if exp.cost is not None:
            sources.add("cost model")
            worst = None
            for params in pending:
                s, b = exp.cost(params)
                seconds += float(s) * spec.replicates
                if b > peak:
                    peak = float(b)
                if worst is None or b > worst[0]:
                    worst = (b, params)
            b, params = worst
            if avail is not None and b > avail:
                raise UserError(
                    f"{spec.path}: the cell {_params_text(params)} needs ~{fmt_bytes(b)} of memory "
                    f"(experiment '{spec.experiment}' cost model), more than the {fmt_bytes(avail)} available; "
                    f"use smaller values")
        elif probe and len(pending) * spec.replicates > PROBE_ABOVE:
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
    est = Estimate(cells, todo, runs, seconds if sources else None, peak or None, workers,
                   " + ".join(sorted(sources)), partial=unknown and bool(sources), bad_cache=bad)
    # With some specs unmodelled the known part is a lower bound, so refusing on it is still right.
    if est.seconds is not None and not yes and est.seconds / workers > max_hours * 3600:
        reps = max(s.replicates for s in specs)
        raise UserError(f"the run would take ~{fmt_seconds(est.seconds / workers)} ({est.source}), over "
                        f"--max-hours {max_hours:g}: {_narrow_hint(specs)}, or lower replicates ({reps} now) with "
                        f"--set replicates=N; or pass --yes")
    return est
