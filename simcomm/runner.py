"""Run a spec: grid expansion, seed streams, an injected ``map``, a per-cell cache, progress.

Stream for (cell, replicate) is ``default_rng(SeedSequence(seed, spawn_key=(cell_id, replicate)))``
where ``cell_id`` is a stable integer derived from the cell's parameters, so results do not depend on
execution order, on the executor, on the rest of the grid, or on which cells were re-run.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from simcomm._errors import UserError
from simcomm.experiments._registry import get_experiment
from simcomm.results import Results, atomic_write_text, git_commit, versions
from simcomm.spec import Spec, content_hash

__all__ = ["run", "run_many", "run_cell", "cell_id", "cell_key", "code_version", "make_map", "threads_for",
           "CellOutOfMemory"]

Map = Callable[[Callable, Iterable], Iterable]


def cell_id(params: dict, experiment=None) -> int:
    """Stable 32-bit id of a cell, from its parameters (used as the first spawn key).

    With ``experiment`` (an :class:`~simcomm.experiments.Experiment`), a renamed parameter counts under
    its former name (:attr:`Param.former <simcomm.experiments.Param>`): renaming a parameter changes no
    random stream, so results computed before the rename are reproduced bit for bit. A parameter
    declared ``keyed_at_default=False`` (added later, e.g. a negative-control switch) is left out of
    the key while it has its default value, so adding it moves no stream either.
    """
    if experiment is not None:
        declared = experiment.params
        # a parameter added later (keyed_at_default = False) is not part of the key at its default
        params = {(declared[k].former or k) if k in declared else k: v for k, v in params.items()
                  if not (k in declared and not declared[k].keyed_at_default and v == declared[k].default)}
    return int(content_hash(params)[:8], 16)


# Sources that never change a results table (judging, drawing, reporting, the CLI, other executors):
# editing them keeps the cell cache valid.
_NOT_IN_TABLES = {"cli", "mpi", "plotting.py", "report.py", "claims.py", "checking.py", "scaling.py", "_dask.py",
                  "cost.py", "results.py"}


@functools.lru_cache(maxsize=None)
def code_version(module: str | None = None) -> str:
    """Hash of the sources that can change the table of an experiment defined in ``module``.

    The library (every simcomm module that computes), plus the experiment's own module; the other
    experiment modules are left out, so editing one paper's experiments keeps the other papers'
    cached cells. An experiment defined outside simcomm (a user's script) adds its own file.
    """
    root = Path(__file__).resolve().parent
    own = None
    if module is not None:
        spec = importlib.util.find_spec(module)
        own = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in _NOT_IN_TABLES:
            continue
        if rel[0] == "experiments" and not rel[-1].startswith("_") and path.resolve() != own:
            continue
        digest.update(path.read_bytes())
    if own is not None and root not in own.parents:
        digest.update(own.read_bytes())
    return digest.hexdigest()[:16]


def run_cell(experiment: str, params: dict, seed: int, replicates: int, backend: str,
             module: str | None = None, threads: int | None = None, first: int = 0,
             network: dict | None = None) -> list[dict]:
    """Run every replicate of one cell; pure apart from the experiment's own computation.

    ``module`` is where the experiment is defined; a worker process imports it first, so experiments
    registered outside :mod:`simcomm.experiments` (a user's script, a test) run on any executor.
    ``threads`` caps numba's threads inside the cell (several cells running at once would otherwise
    oversubscribe the cores, and numba's parallel kernels collapse under oversubscription).

    ``network`` (a spec's ``[network]`` table) adds the simulated ``time`` column to the trace rows
    (``step`` and ``bits``) of every replicate (:func:`simcomm.network.trace_time`); its straggler
    draws come from the stream ``SeedSequence(seed, spawn_key=(2**32, cell_id, replicate))``, apart from
    every experiment stream (cell ids are below ``2**32``).

    Returns rows with the cell's parameters and ``replicate`` added. An exception inside the
    experiment is a bug, not a numerical fault, and propagates; numerical faults come back as rows.
    """
    import importlib

    from simcomm.backends import get_backend

    if module is not None:
        importlib.import_module(module)
    from threadpoolctl import threadpool_limits

    exp = get_experiment(experiment)
    be = get_backend(backend)
    if threads is not None:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    cid = cell_id(params, exp)
    rows = []
    # One BLAS thread per cell: cells are the unit of parallelism, and multithreaded BLAS on small
    # matrices is slower (and oversubscribes the cores when several cells run at once).
    with threadpool_limits(limits=1):
        for rep in range(first, replicates):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(cid, rep)))
            try:
                out = exp.func(dict(params), rng, be)
            except MemoryError as exc:
                # A plain one-line error that pickles across processes (no worker traceback).
                del rows
                raise CellOutOfMemory(f"the cell {_short(params)} of experiment '{experiment}' ran out of memory "
                                      f"({exc})") from None
            if network:
                from simcomm.network import trace_time

                out = trace_time(list(out), network, params,
                                 rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32, cid, rep))))
            for row in out:
                rows.append({**params, "replicate": rep, **row})
    return rows


class CellOutOfMemory(UserError):
    """A cell needed more memory than the machine had (raised in the worker, shown as one line)."""


def _short(params: dict, limit: int = 160) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return text if len(text) <= limit else text[:limit] + "..."


class _OutOfMemory(str):
    """What a task returns instead of rows when its cell ran out of memory (the message)."""


def _cell_task(args: tuple) -> list[dict] | _OutOfMemory:
    # Returned, not raised: executors stop at the first exception and drop the cells that finished
    # meanwhile; returned, every other cell still finishes and is cached.
    try:
        return run_cell(*args)
    except CellOutOfMemory as exc:
        return _OutOfMemory(str(exc))


def threads_for(jobs: int, scheduler: str | None = None) -> int | None:
    """Numba threads per cell so that concurrent cells do not oversubscribe this machine's cores."""
    import os

    if scheduler:
        return 1
    return None if jobs == 1 else max(1, (os.cpu_count() or 1) // jobs)


def make_map(jobs: int = 1, scheduler: str | None = None) -> tuple[Map, str]:
    """Build the executor: builtin map, joblib/loky processes, or Dask (``local`` or ``tcp://...``).

    Returns ``(map, description)``; the map yields results in input order.
    """
    if scheduler:
        from simcomm._dask import dask_map

        return dask_map(scheduler), f"dask ({scheduler})"
    if jobs == 1:
        return builtins.map, "serial"
    from joblib import Parallel, delayed

    def loky_map(func, iterable):
        return Parallel(n_jobs=jobs, backend="loky", return_as="generator")(delayed(func)(a) for a in iterable)

    return loky_map, f"joblib/loky ({jobs} processes)"


def _cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.json"


def _key(spec: Spec, params: dict, backend: str, version: str) -> str:
    reps = spec.replicates if not spec.first_replicate else [spec.first_replicate, spec.replicates]
    key = [spec.experiment, params, spec.seed, reps, backend, version]
    if spec.network:  # the [network] table changes the time column: part of the cell's identity
        key.append(spec.network)
    return content_hash(key)


def cell_key(spec: Spec, params: dict, backend: str, cache_dir: str | Path) -> Path:
    """Path of the cache entry of one cell of ``spec`` (present when the cell is cached)."""
    version = code_version(get_experiment(spec.experiment).func.__module__)
    return _cache_path(Path(cache_dir), _key(spec, params, backend, version))


def run_many(specs: list[Spec], *, map: Map = builtins.map, backend: str = "numba",
             cache_dir: str | Path | None = None, progress: Callable[[int, int], None] | None = None,
             executor: str = "serial", threads_per_cell: int | None = None) -> list[Results]:
    """Run several specs through one ``map`` call (cells of all specs are pooled).

    Parameters
    ----------
    specs : list of Spec
    map : callable
        ``map(func, iterable)`` yielding results in order (builtin map, joblib, Dask, ...).
    backend : str
        Backend name passed to every experiment and recorded in the metadata.
    cache_dir : path, optional
        Per-cell cache: a cell whose key (spec experiment, cell, replicates, seed, backend, code
        version) is already there is not recomputed, so an interrupted run resumes.
    progress : callable, optional
        ``progress(done, total)`` after each cell.
    threads_per_cell : int, optional
        Numba threads inside each cell (see :func:`run_cell`); ``None`` leaves numba's default.
    """
    cache_dir = None if cache_dir is None else Path(cache_dir)
    tasks, keys, owners = [], [], []
    cached: dict[tuple[int, int], list[dict]] = {}
    for s, spec in enumerate(specs):
        module = get_experiment(spec.experiment).func.__module__
        version = code_version(module)
        for c, params in enumerate(spec.cells()):
            key = _key(spec, params, backend, version)
            if cache_dir is not None and _cache_path(cache_dir, key).is_file():
                try:
                    cached[(s, c)] = json.loads(_cache_path(cache_dir, key).read_text())
                    continue
                except (OSError, ValueError):
                    pass  # unreadable cache entry: recompute it
            tasks.append((spec.experiment, params, spec.seed, spec.replicates, backend, module, threads_per_cell,
                          spec.first_replicate, spec.network))
            keys.append(key)
            owners.append((s, c))
    total = len(tasks) + len(cached)
    done = len(cached)
    if progress is not None:
        progress(done, total)
    # No map call without tasks: an executor given nothing to do still starts (and joblib warns
    # "0 tasks ... cancelled" on a fully cached rerun).
    stream = map(_cell_task, tasks) if tasks else iter(())
    failed = []
    for owner, key, rows in zip(owners, keys, stream):
        if isinstance(rows, _OutOfMemory):
            failed.append(rows)
            continue
        cached[owner] = rows
        if cache_dir is not None:
            atomic_write_text(_cache_path(cache_dir, key), json.dumps(rows, default=_jsonable))
        done += 1
        if progress is not None:
            progress(done, total)
    if failed:
        where = f" in {cache_dir}" if cache_dir is not None else ""
        more = f" (and {len(failed) - 1} more cells)" if len(failed) > 1 else ""
        raise CellOutOfMemory(f"{failed[0]}{more}; the {done} cells that finished are cached{where}, so the same "
                              "command with a smaller grid resumes from them")
    out = []
    for s, spec in enumerate(specs):
        rows = [row for c in range(len(spec.cells())) for row in cached[(s, c)]]
        table = pd.DataFrame(rows)
        meta = dict(
            spec=spec.to_dict(), spec_hash=spec.hash, seed=spec.seed,
            spawn_key="(cell_id(params), replicate); cell_id = first 8 hex digits of sha256(params), "
                      "renamed parameters under their former names",
            cells=[{"params": p, "cell_id": cell_id(p, get_experiment(spec.experiment))} for p in spec.cells()],
            backend=backend, executor=executor, versions=versions(), git_commit=git_commit(),
            code_version=code_version(get_experiment(spec.experiment).func.__module__),
        )
        out.append(Results(table, meta))
    return out


def run(spec: Spec, **kwargs) -> Results:
    """Run one spec; see :func:`run_many` for the keyword arguments."""
    return run_many([spec], **kwargs)[0]


def _jsonable(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"row value of type {type(obj).__name__} is not JSON serialisable")

